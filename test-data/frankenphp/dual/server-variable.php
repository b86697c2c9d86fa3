<?php
// $_SERVER as JSON (TestServerVariable, TestPathInfo, TestWorkerGetOpt).
require_once __DIR__ . '/_serve.php';

serve(static function (): void {
    header('Content-Type: application/json');
    echo json_encode($_SERVER, JSON_PARTIAL_OUTPUT_ON_ERROR);
    if (isset($_GET['getopt'])) {
        getopt('abc');
    }
});
