<?php
// Output before flush() reaches the client before the rest (TestFlush).
require_once __DIR__ . '/_serve.php';

serve(static function (): void {
    while (ob_get_level() > 0) {
        ob_end_flush();
    }
    echo 'He';
    flush();
    usleep(300000);
    echo 'llo ', $_GET['i'] ?? '';
});
