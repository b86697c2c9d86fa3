<?php
// Worker mode: the same publish as publish.php, from a worker script's handler; the
// answer names the mode so a test sees which one published.
require __DIR__ . '/lib.php';
while (frankenphp_handle_request(static function (): void {
    header('X-Mode: worker');
    mercure_test_publish($_GET);
})) {
}
