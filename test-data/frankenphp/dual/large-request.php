<?php
// The size of a large body read through php://input (TestLargeRequest).
require_once __DIR__ . '/_serve.php';

serve(static function (): void {
    echo 'Request body size: ', strlen(file_get_contents('php://input')), ' (', $_GET['i'] ?? '', ')';
});
