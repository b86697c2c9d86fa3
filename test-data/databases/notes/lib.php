<?php
// A small notes app on PostgreSQL (server/tests/databases.rs): writes through pdo_pgsql
// with prepared statements and transactions, reads the JSON listing through the pgsql
// extension. The connections live in statics: one per request in classic mode, one per
// thread for the worker's whole life in worker mode (worker.php).

function notes_pdo(): PDO
{
    static $pdo = null;
    if ($pdo === null) {
        $dsn = sprintf('pgsql:host=%s;port=%s;dbname=app', getenv('DB_PG_SOCKDIR'), getenv('DB_PG_PORT'));
        $pdo = new PDO($dsn, 'postgres', null, [PDO::ATTR_ERRMODE => PDO::ERRMODE_EXCEPTION]);
        $pdo->exec('CREATE TABLE IF NOT EXISTS notes (
            id SERIAL PRIMARY KEY, title TEXT NOT NULL, body TEXT NOT NULL,
            revision INT NOT NULL DEFAULT 1, updated TIMESTAMPTZ NOT NULL DEFAULT now())');
    }
    return $pdo;
}

function notes_pg()
{
    static $pg = null;
    $pg ??= pg_connect(sprintf('host=%s port=%s dbname=app user=postgres',
        getenv('DB_PG_SOCKDIR'), getenv('DB_PG_PORT')), PGSQL_CONNECT_FORCE_NEW);
    return $pg;
}

/** The backend pid of each connection: how the test tells a reused connection. */
function notes_backends(): array
{
    return [
        'pdo' => (int) notes_pdo()->query('SELECT pg_backend_pid()')->fetchColumn(),
        'pgsql' => (int) pg_fetch_result(pg_query(notes_pg(), 'SELECT pg_backend_pid()'), 0, 0),
    ];
}

function notes_create(string $title, string $body): int
{
    $st = notes_pdo()->prepare('INSERT INTO notes (title, body) VALUES (?, ?) RETURNING id');
    $st->execute([$title, $body]);
    return (int) $st->fetchColumn();
}

/** Optimistic update: only if the client saw the current revision. */
function notes_update(int $id, int $revision, string $body): bool
{
    $pdo = notes_pdo();
    $pdo->beginTransaction();
    try {
        $st = $pdo->prepare('SELECT revision FROM notes WHERE id = ? FOR UPDATE');
        $st->execute([$id]);
        if ((int) $st->fetchColumn() !== $revision) {
            $pdo->rollBack();
            return false;
        }
        $pdo->prepare('UPDATE notes SET body = ?, revision = revision + 1, updated = now() WHERE id = ?')
            ->execute([$body, $id]);
        $pdo->commit();
        return true;
    } catch (Throwable $e) {
        $pdo->rollBack();
        throw $e;
    }
}

function notes_delete(int $id): void
{
    notes_pdo()->prepare('DELETE FROM notes WHERE id = ?')->execute([$id]);
}

function notes_list(): array
{
    $res = pg_query_params(notes_pg(), 'SELECT id, title, body, revision FROM notes WHERE title LIKE $1 ORDER BY id', ['%']);
    $rows = pg_fetch_all($res) ?: [];
    foreach ($rows as &$r) {
        $r['id'] = (int) $r['id'];
        $r['revision'] = (int) $r['revision'];
    }
    return $rows;
}
