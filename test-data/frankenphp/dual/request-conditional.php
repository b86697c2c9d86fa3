<?php
// $_REQUEST read only on some requests, from an included file (TestRequestSuperGlobalConditional):
// when a request first touches it, it must hold that request's data, never an earlier one's.
require_once __DIR__ . '/_serve.php';

serve(static function (): void {
    if (($_GET['use_request'] ?? '') === '1') {
        $request = include __DIR__ . '/request-conditional.inc';
        echo json_encode(['request' => $request, 'get' => $_GET]);
    } else {
        echo json_encode(['skipped' => true, 'get' => $_GET]);
    }
});
