<?php
// Response status and headers as set (TestHeaders): a header line without a space after
// the colon, one without a colon (dropped with a warning), one that names the request.
require_once __DIR__ . '/_serve.php';

serve(static function (): void {
    header('Foo: bar');
    header('Foo2: bar2');
    header('Foo3:bar3');
    header('Invalid');
    header('I: ' . ($_GET['i'] ?? ''));
    http_response_code(201);
    echo 'Hello';
});
