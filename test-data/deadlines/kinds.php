<?php
// Blocking calls a request can be stuck in, one per `kind` (server/tests/deadlines.rs runs
// each past max_execution_time and --request-timeout, in classic mode through run.php and
// in worker mode through worker.php). Loaded once per worker thread, so every function is
// declared once.

/** The kernel thread serving this request: proves which PHP thread ran it. */
function deadline_tid(): string
{
    return basename((string) readlink('/proc/thread-self'));
}

function deadline_inner(int $seconds): void
{
    sleep($seconds);
}

function deadline_outer(int $seconds): void
{
    deadline_inner($seconds);
}

/** A reader that never gets an answer: a TCP peer that accepted and says nothing. */
function deadline_socket(int $port): string
{
    $f = stream_socket_client("tcp://127.0.0.1:$port", $errno, $errstr, 5);
    if (!$f) {
        return "connect failed: $errstr";
    }
    stream_set_timeout($f, 30);
    $data = fread($f, 100);
    return 'read returned ' . var_export($data, true);
}

/** Holds `held` (this request's own lock), then waits for `wanted`, held elsewhere. */
function deadline_flock(string $held, string $wanted): string
{
    $mine = fopen($held, 'c');
    flock($mine, LOCK_EX);
    $f = fopen($wanted, 'c');
    $got = flock($f, LOCK_EX);
    return 'flock returned ' . var_export($got, true);
}

/** Session files that lock with flock(), as the files handler does. */
final class DeadlineLockingHandler implements SessionHandlerInterface
{
    private $lock;
    private string $dir = '';

    public function open(string $path, string $name): bool
    {
        $this->dir = $path;
        return true;
    }

    public function read(string $id): string|false
    {
        $this->lock = fopen("{$this->dir}/user_lock_$id", 'c');
        if (!flock($this->lock, LOCK_EX)) {
            // Never read (and later write) a session without its lock.
            return false;
        }
        $data = @file_get_contents("{$this->dir}/user_sess_$id");
        return $data === false ? '' : $data;
    }

    public function write(string $id, string $data): bool
    {
        return file_put_contents("{$this->dir}/user_sess_$id", $data) !== false;
    }

    public function close(): bool
    {
        if ($this->lock) {
            flock($this->lock, LOCK_UN);
            fclose($this->lock);
            $this->lock = null;
        }
        return true;
    }

    public function destroy(string $id): bool
    {
        @unlink("{$this->dir}/user_sess_$id");
        return true;
    }

    public function gc(int $max_lifetime): int|false
    {
        return 0;
    }
}

function deadline_session_start(array $q): void
{
    if (($q['handler'] ?? 'files') === 'user') {
        session_set_save_handler(new DeadlineLockingHandler(), true);
    }
    if (isset($q['lazy_write'])) {
        // Written back at the end even when unchanged (so a write would show).
        ini_set('session.lazy_write', $q['lazy_write']);
    }
    session_id($q['sid']);
    session_start();
}

/** Runs one kind; returns what it printed. */
function deadline_run(array $q): string
{
    $kind = $q['kind'] ?? 'hello';
    $seconds = (int) ($q['seconds'] ?? 30);
    $t = microtime(true);
    switch ($kind) {
        case 'hello':
            return 'ok ' . deadline_tid();
        case 'pid':
            return (string) getmypid();
        case 'socket':
            $out = deadline_socket((int) $q['port']);
            break;
        case 'plain':
            require __DIR__ . '/plain.php';
            return '';
        case 'sleep':
            deadline_outer($seconds);
            $out = 'slept';
            break;
        case 'usleep':
            usleep($seconds * 1000000);
            $out = 'usleept';
            break;
        case 'busy':
            // PHP code only: the VM itself notices the deadline.
            $until = microtime(true) + $seconds;
            $n = 0;
            while (microtime(true) < $until) {
                $n++;
            }
            $out = "busy $n";
            break;
        case 'flock':
            $out = deadline_flock($q['held'], $q['wanted']);
            break;
        case 'session':
            // Waits for a session another request holds.
            deadline_session_start($q);
            $_SESSION['seen'] = ($_SESSION['seen'] ?? 0) + 1;
            $out = 'session started';
            break;
        case 'session_hold':
            // Holds its session (the other request), or holds it while stuck on a socket.
            deadline_session_start($q);
            $_SESSION['held'] = true;
            if (isset($q['port'])) {
                $out = deadline_socket((int) $q['port']);
            } else {
                sleep($seconds);
                $out = 'held';
            }
            break;
        case 'proc':
            $p = proc_open(['sleep', (string) $seconds], [], $pipes);
            $out = 'proc_close returned ' . proc_close($p);
            break;
        case 'mysqli':
            $db = new mysqli('localhost', 'app', 'app-pass', 'app', 0, getenv('DB_MY_SOCKET'));
            $r = $db->query("SELECT SLEEP($seconds) AS s, 'deadline-probe'");
            $out = 'query returned ' . var_export($r ? $r->fetch_row() : $db->error, true);
            break;
        case 'pdo_mysql':
            $db = new PDO('mysql:unix_socket=' . getenv('DB_MY_SOCKET') . ';dbname=app', 'app', 'app-pass');
            $out = 'query returned ' . var_export($db->query("SELECT SLEEP($seconds), 'deadline-probe'")->fetchAll(), true);
            break;
        case 'pgsql':
            $db = pg_connect('host=' . getenv('DB_PG_SOCKDIR') . ' port=' . getenv('DB_PG_PORT') . ' dbname=app user=postgres');
            // The backend notices a client that went away while it sleeps.
            pg_query($db, "SET client_connection_check_interval = '100ms'");
            $r = pg_query($db, "SELECT pg_sleep($seconds), 'deadline-probe'");
            $out = 'query returned ' . var_export($r ? pg_fetch_row($r) : pg_last_error($db), true);
            break;
        case 'pdo_pgsql':
            $db = new PDO('pgsql:host=' . getenv('DB_PG_SOCKDIR') . ';port=' . getenv('DB_PG_PORT') . ';dbname=app', 'postgres');
            $db->exec("SET client_connection_check_interval = '100ms'");
            $out = 'query returned ' . var_export($db->query("SELECT pg_sleep($seconds), 'deadline-probe'")->fetchAll(), true);
            break;
        case 'curl':
            $c = curl_init('http://127.0.0.1:' . (int) $q['port'] . '/trickle');
            curl_setopt_array($c, [CURLOPT_RETURNTRANSFER => true, CURLOPT_TIMEOUT => 60]);
            $body = curl_exec($c);
            $out = 'curl returned ' . ($body === false ? curl_error($c) : strlen($body) . ' bytes');
            break;
        case 'stuck':
            // A call nothing interrupts: glibc's pclose() waits for the command in a loop
            // of its own, which no replaced libc function reaches.
            shell_exec("sleep $seconds");
            $out = 'command ended';
            break;
        case 'stuck_streaming':
            // The response is under way when the request gets stuck.
            echo str_repeat('x', 100000);
            flush();
            shell_exec("sleep $seconds");
            $out = 'command ended';
            break;
        case 'heartbeat':
            // A long job that means it: one beat per second of work.
            for ($i = 0; $i < $seconds; $i++) {
                sleep(1);
                if (!empty($q['beat'])) {
                    ferrophp_request_heartbeat((int) $q['beat']);
                }
            }
            $out = 'job done';
            break;
        case 'waits':
            // Timed waits of every replaced kind, each as long as asked: what each took, in
            // ms (deadlines.rs signals the thread all along: nothing may cut one short).
            $port = (int) $q['port'];
            $took = [];
            $time = function (string $name, callable $wait) use (&$took): void {
                $t = hrtime(true);
                $wait();
                $took[$name] = intdiv(hrtime(true) - $t, 1000000);
            };
            $time('usleep', fn () => usleep(300000));
            $time('sleep', fn () => sleep(1));
            $time('time_nanosleep', fn () => time_nanosleep(0, 300000000));
            $f = stream_socket_client("tcp://127.0.0.1:$port", $errno, $errstr, 5);
            stream_set_timeout($f, 0, 300000);
            $time('fread', fn () => fread($f, 10));
            $time('stream_select', function () use ($f): void {
                $r = [$f];
                $w = $e = null;
                stream_select($r, $w, $e, 0, 300000);
            });
            return json_encode($took);
        case 'heartbeat_args':
            $results = [];
            foreach ([0, -5, 1000000000] as $bad) {
                try {
                    ferrophp_request_heartbeat($bad);
                    $results[] = "$bad accepted";
                } catch (ValueError $e) {
                    $results[] = get_class($e) . ': ' . $e->getMessage();
                }
            }
            try {
                ferrophp_request_heartbeat('soon');
            } catch (TypeError $e) {
                $results[] = 'TypeError';
            }
            $results[] = 'ok: ' . var_export(ferrophp_request_heartbeat(5), true);
            return implode("\n", $results);
        default:
            http_response_code(400);
            return "unknown kind $kind";
    }
    return $out . ' after ' . round(microtime(true) - $t, 2) . " s\n";
}
