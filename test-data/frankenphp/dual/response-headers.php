<?php
// apache_response_headers() lists what the handler set (TestResponseHeaders); ?status=N
// sets the status first.
require_once __DIR__ . '/_serve.php';

serve(static function (): void {
    header('Foo: bar');
    header('Foo2: bar2');
    header('Invalid');
    header('I: ' . ($_GET['i'] ?? ''));
    if (isset($_GET['status'])) {
        http_response_code((int) $_GET['status']);
    }
    echo json_encode(apache_response_headers());
});
