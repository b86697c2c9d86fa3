<?php
// frankenphp_finish_request() ends the response; what the handler writes afterwards is
// dropped without aborting it, so the line logged after that write is still reached.
require_once __DIR__ . '/_serve.php';

serve(static function (): void {
    $i = $_GET['i'] ?? '';
    echo "Output of request $i\n";
    frankenphp_finish_request();
    echo 'never seen by the client';
    flush();
    error_log("after finish_request $i");
});
