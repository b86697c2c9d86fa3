<?php
// The raw body back, with a header (TestInput).
require_once __DIR__ . '/_serve.php';

serve(static function (): void {
    header('Foo: bar');
    echo file_get_contents('php://input');
});
