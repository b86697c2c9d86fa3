<?php
// Sleeps ?ms= milliseconds (TestMaxWaitTime, TestMaxWaitTimeWorker); with ?marker=PATH it
// first writes that file, proving the request ran.
require_once __DIR__ . '/_serve.php';

serve(static function (): void {
    if (isset($_GET['marker'])) {
        file_put_contents($_GET['marker'], 'ran');
    }
    usleep((int) ($_GET['ms'] ?? 0) * 1000);
    echo 'slept';
});
