<?php
// Worker script (and classic script) for the persistent-connection test
// (server/tests/databases.rs).
//
// Each request opens its handles the way a classic app does on every request:
// `new mysqli('p:...')`, `new PDO(..., [PDO::ATTR_PERSISTENT => true])` to MariaDB and to
// PostgreSQL, and `pg_pconnect()`. The PHP objects die with the handler's scope; what
// PHP keeps is the server connection in the thread's persistent list. The answer shows
// the server-side connection id of each, so the test can see the same connection come
// back on the next request, and whether a transaction left open by one request is still
// open in the next.
//
// ?op=ids                 connection ids and the session variable's value
// ?op=set-session&tag=T  set a session variable to T on every handle
// ?op=leave-open&tag=T    BEGIN + INSERT tag T on every handle, then return without
//                         COMMIT or ROLLBACK (the objects go out of scope)
// ?op=keep-open&tag=T     the same, on handles the worker keeps in a static across
//                         requests (long-lived objects, as worker apps hold them)
// ?op=state               transaction state of each handle, on the fresh handles and
//                         on the kept ones, and which tags are visible (committed)

$my_socket = getenv('DB_MY_SOCKET');
$pg_dir = getenv('DB_PG_SOCKDIR');
$pg_port = getenv('DB_PG_PORT');
// Who connects: lets a test count its own server connections (MariaDB user, PostgreSQL
// application_name) while other tests use the same servers.
$my_user = getenv('DB_MY_USER') ?: 'app';
$pg_name = getenv('DB_PG_APPNAME') ?: 'persistent';

// PDO and pg_pconnect share one persistent connection between all handles opened with the
// same DSN/connection string (mysqli hands a `p:` link to one object at a time): the kept
// handles use a DSN of their own ($variant) so that they are separate connections.
$open = static function (string $variant = '') use ($my_socket, $pg_dir, $pg_port, $my_user, $pg_name): array {
    mysqli_report(MYSQLI_REPORT_ERROR | MYSQLI_REPORT_STRICT);
    $opts = [PDO::ATTR_PERSISTENT => true, PDO::ATTR_ERRMODE => PDO::ERRMODE_EXCEPTION];
    $my_dsn = "mysql:unix_socket=$my_socket;dbname=app" . ($variant ? ';charset=utf8mb4' : '');
    $pg_conn = "host=$pg_dir port=$pg_port dbname=app user=postgres application_name="
        . ($variant ?: $pg_name);
    return [
        'mysqli' => new mysqli('p:localhost', $my_user, 'app-pass', 'app', 0, $my_socket),
        'pdo_mysql' => new PDO($my_dsn, $my_user, 'app-pass', $opts),
        'pdo_pgsql' => new PDO('pgsql:' . str_replace(' ', ';', $pg_conn), null, null, $opts),
        'pgsql' => pg_pconnect($pg_conn),
    ];
};

// The server-side id of the connection behind a handle.
$id = static function (string $kind, $h): int {
    return (int) match ($kind) {
        'mysqli' => $h->query('SELECT CONNECTION_ID()')->fetch_row()[0],
        'pdo_mysql' => $h->query('SELECT CONNECTION_ID()')->fetchColumn(),
        'pdo_pgsql' => $h->query('SELECT pg_backend_pid()')->fetchColumn(),
        'pgsql' => pg_fetch_row(pg_query($h, 'SELECT pg_backend_pid()'))[0],
    };
};

// Whether the server thinks this connection is inside a transaction.
$in_txn = static function (string $kind, $h): bool {
    return match ($kind) {
        'mysqli' => (bool) $h->query('SELECT @@in_transaction')->fetch_row()[0],
        'pdo_mysql' => (bool) $h->query('SELECT @@in_transaction')->fetchColumn(),
        // Any statement inside a transaction; the driver reports libpq's status.
        'pdo_pgsql' => $h->inTransaction(),
        'pgsql' => pg_transaction_status($h) !== PGSQL_TRANSACTION_IDLE,
    };
};

// A session variable: set by one request, is it still set in the next?
$session_set = static function (string $kind, $h, string $tag): void {
    $tag = addslashes($tag);
    match ($kind) {
        'mysqli' => $h->query("SET @ferrophp_mark = '$tag'"),
        'pdo_mysql' => $h->exec("SET @ferrophp_mark = '$tag'"),
        'pdo_pgsql' => $h->exec("SET ferrophp.mark = '$tag'"),
        'pgsql' => pg_query($h, "SET ferrophp.mark = '$tag'"),
    };
};
$session_get = static function (string $kind, $h): ?string {
    $v = match ($kind) {
        'mysqli' => $h->query('SELECT @ferrophp_mark')->fetch_row()[0],
        'pdo_mysql' => $h->query('SELECT @ferrophp_mark')->fetchColumn(),
        'pdo_pgsql' => $h->query("SELECT current_setting('ferrophp.mark', true)")->fetchColumn(),
        'pgsql' => pg_fetch_row(pg_query($h, "SELECT current_setting('ferrophp.mark', true)"))[0],
    };
    return $v === '' ? null : $v;
};

// BEGIN and an INSERT that is never committed.
$leave_open = static function (string $kind, $h, string $tag): void {
    $table = str_starts_with($kind, 'pdo_pg') || $kind === 'pgsql' ? 'pg' : 'my';
    $sql = "INSERT INTO marks (tag) VALUES ('" . addslashes("$kind:$tag") . "')";
    match ($kind) {
        'mysqli' => [$h->begin_transaction(), $h->query($sql)],
        'pdo_mysql', 'pdo_pgsql' => [$h->beginTransaction(), $h->exec($sql)],
        'pgsql' => [pg_query($h, 'BEGIN'), pg_query($h, $sql)],
    };
};

// Committed tags, read through a fresh non-persistent connection (never in a transaction).
$committed = static function () use ($my_socket, $pg_dir, $pg_port): array {
    $my = new mysqli('localhost', 'app', 'app-pass', 'app', 0, $my_socket);
    $tags = array_column($my->query('SELECT tag FROM marks')->fetch_all(), 0);
    $my->close();
    $pg = pg_connect("host=$pg_dir port=$pg_port dbname=app user=postgres", PGSQL_CONNECT_FORCE_NEW);
    $tags = array_merge($tags, pg_fetch_all_columns(pg_query($pg, 'SELECT tag FROM marks')));
    pg_close($pg);
    sort($tags);
    return $tags;
};

$handler = static function () use ($open, $id, $in_txn, $leave_open, $committed, $session_set, $session_get): void {
    static $kept = null;
    static $requests = 0;
    $requests++;
    header('Content-Type: application/json');
    $op = $_GET['op'] ?? 'ids';
    $tag = $_GET['tag'] ?? '';
    $out = ['requests' => $requests, 'op' => $op];
    try {
        if ($op === 'keep-open') {
            $kept ??= $open('kept');
        }
        $handles = $open();
        foreach ($handles as $kind => $h) {
            $out['ids'][$kind] = $id($kind, $h);
            $out['session'][$kind] = $session_get($kind, $h);
            if ($op === 'set-session') {
                $session_set($kind, $h, $tag);
            }
        }
        if ($op === 'leave-open') {
            foreach ($handles as $kind => $h) {
                $leave_open($kind, $h, $tag);
                $out['in_txn'][$kind] = $in_txn($kind, $h);
            }
        } elseif ($op === 'keep-open') {
            foreach ($kept as $kind => $h) {
                $leave_open($kind, $h, $tag);
                $out['kept_in_txn'][$kind] = $in_txn($kind, $h);
            }
        } elseif ($op === 'state') {
            foreach ($handles as $kind => $h) {
                $out['in_txn'][$kind] = $in_txn($kind, $h);
            }
            foreach ($kept ?? [] as $kind => $h) {
                $out['kept_in_txn'][$kind] = $in_txn($kind, $h);
                $out['kept_ids'][$kind] = $id($kind, $h);
            }
            $out['committed'] = $committed();
        }
    } catch (Throwable $e) {
        http_response_code(500);
        $out['error'] = get_class($e) . ': ' . $e->getMessage();
    }
    echo json_encode($out);
};

if (empty($_SERVER['FRANKENPHP_WORKER'])) {
    // Classic mode: the same script is the request (ids, leave-open and state only: a
    // static does not outlive a classic request).
    $handler();
    return;
}
while (ferrophp_handle_request($handler)) {
}
