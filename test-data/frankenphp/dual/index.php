<?php
// The smallest page: a greeting that names the request (FrankenPHP's TestHelloWorld).
require_once __DIR__ . '/_serve.php';

serve(static function (): void {
    echo 'Hello from request ', $_GET['i'] ?? '?';
});
