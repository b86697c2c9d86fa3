<?php
// A user session save handler that takes a lock in read() and releases it in close():
// it extends PHP's own files handler, whose read() flock()s the session file. A request
// that is cut short while inside read() (its client went away while read() was still
// writing, or its time limit expired there) must still release the lock, or the next
// request for the same session waits forever (FrankenPHP issue #2368).
//   ?mode=disconnect  read() writes and flushes until the client is gone
//   ?mode=timeout     read() spins until the time limit stops it
//   otherwise         a plain request on the same session
require_once __DIR__ . '/_serve.php';

final class LockingSessions extends SessionHandler
{
    public function read(string $id): string|false
    {
        $data = parent::read($id); // flock(LOCK_EX) on the session file
        switch ($_GET['mode'] ?? '') {
            case 'disconnect':
                // Workers ignore user aborts by default (as in FrankenPHP): ask for the
                // abort so it lands inside read().
                ignore_user_abort(false);
                while (ob_get_level() > 0) {
                    ob_end_flush();
                }
                for ($i = 0; $i < 500; $i++) {
                    echo "locked $i\n";
                    flush();
                    usleep(10000);
                }
                break;
            case 'timeout':
                set_time_limit(1);
                $end = microtime(true) + 5;
                while (microtime(true) < $end) {
                }
                break;
        }
        return $data;
    }
}

serve(static function (): void {
    ini_set('session.save_path', $_SERVER['SESSION_DIR']);
    session_set_save_handler(new LockingSessions(), true);
    session_id($_GET['id'] ?? 'lock');
    $t = microtime(true);
    session_start();
    $_SESSION['n'] = ($_SESSION['n'] ?? 0) + 1;
    session_write_close();
    printf("n=%d waited_ms=%d\n", $_SESSION['n'], (microtime(true) - $t) * 1000);
});
