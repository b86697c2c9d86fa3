<?php
// The PHP-visible declarations of everything ferrophp adds, as PHP's own reflection
// prints them (`php --rf` / `--re`): the SAPI's functions (registered under `standard`),
// then the ferrophp module (its ini entries, the apcu_* layer's constants and functions,
// and the classes UserCache\Cache, Ferrophp\Metrics, Ferrophp\Trace, Ferrophp\Span,
// APCUIterator with their exceptions). server/tests/http_php.rs compares the page with
// expected.txt.
header('Content-Type: text/plain');
$sapi = [
    'ferrophp_handle_request', 'frankenphp_handle_request',
    'frankenphp_response_headers', 'ferrophp_response_headers', 'apache_response_headers',
    'fastcgi_finish_request', 'ferrophp_finish_request', 'frankenphp_finish_request',
    'getallheaders', 'apache_request_headers', 'frankenphp_request_headers',
    'headers_send', 'frankenphp_log', 'ferrophp_request_heartbeat',
];
foreach ($sapi as $name) {
    echo new ReflectionFunction($name), "\n";
}
echo new ReflectionExtension('ferrophp');
