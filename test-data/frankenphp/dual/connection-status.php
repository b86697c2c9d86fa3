<?php
// With ignore_user_abort on, a handler whose client is gone goes on and sees
// connection_status() == 1 (ABORTED) after a failed write (TestConnectionAbort);
// ?finish=1 ends the response first, after which writes are dropped silently and the
// status stays NORMAL... unless the client is gone.
ignore_user_abort(true);
require_once __DIR__ . '/_serve.php';

serve(static function (): void {
    while (ob_get_level() > 0) {
        ob_end_flush();
    }
    if ($_GET['finish'] ?? false) {
        frankenphp_finish_request();
    }
    usleep((int) ($_GET['ms'] ?? 0) * 1000);
    echo 'hi';
    flush();
    error_log('request ' . ($_GET['i'] ?? '') . ': ' . connection_status());
});
