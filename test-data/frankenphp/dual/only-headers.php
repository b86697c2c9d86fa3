<?php
// A 204 set through a status line header, then output and flush() (TestFlushEmptyResponse).
require_once __DIR__ . '/_serve.php';

serve(static function (): void {
    header('Content-Type: application/json');
    header('HTTP/1.1 204 No Content', true, 204);
    echo '{"status": "test"}';
    flush();
});
