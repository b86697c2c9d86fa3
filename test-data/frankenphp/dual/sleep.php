<?php
// Sleeps ?ms= milliseconds (TestMaxWaitTime, TestMaxWaitTimeWorker).
require_once __DIR__ . '/_serve.php';

serve(static function (): void {
    usleep((int) ($_GET['ms'] ?? 0) * 1000);
    echo 'slept';
});
