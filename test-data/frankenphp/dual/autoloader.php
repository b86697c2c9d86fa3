<?php
// An autoloader registered before the first request is still registered in each request
// (TestAutoloader).
require_once __DIR__ . '/_serve.php';

function dual_autoloader(string $class): void
{
}
spl_autoload_register('dual_autoloader');

serve(static function (): void {
    echo 'request ', $_GET['i'] ?? '', "\n", implode(',', spl_autoload_functions());
});
