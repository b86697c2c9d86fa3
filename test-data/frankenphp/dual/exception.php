<?php
// An uncaught exception after some output (TestException).
require_once __DIR__ . '/_serve.php';

serve(static function (): void {
    echo 'hello';
    throw new Exception('request ' . ($_GET['i'] ?? ''));
});
