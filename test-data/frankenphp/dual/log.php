<?php
// error_log() from a handler reaches the server's log (TestLog_error_log).
require_once __DIR__ . '/_serve.php';

serve(static function (): void {
    error_log('logged by request ' . ($_GET['i'] ?? ''));
    echo 'ok';
});
