<?php
// Request headers as the client sent them (TestRequestHeaders).
require_once __DIR__ . '/_serve.php';

serve(static function (): void {
    echo json_encode(['frankenphp' => frankenphp_request_headers(), 'apache' => apache_request_headers()]);
});
