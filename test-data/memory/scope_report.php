<?php
// What the request scope installed (php-sys/request_scope.c), as PHP sees it: every
// string SG(request_info) points at, the PHP_AUTH_* fields parsed from the Authorization
// header, the body and $argv. Strings as hex, so any byte survives JSON.
function scope_report(): string
{
    $s = $_SERVER;
    $hex = static fn (string $k) => isset($s[$k]) ? bin2hex($s[$k]) : null;
    return json_encode([
        'method' => $hex('REQUEST_METHOD'),
        'uri' => $hex('REQUEST_URI'),
        'query' => $hex('QUERY_STRING'),
        'content_type' => $hex('CONTENT_TYPE'),
        'content_length' => $s['CONTENT_LENGTH'] ?? null,
        'cookie' => $hex('HTTP_COOKIE'),
        'auth_user' => $hex('PHP_AUTH_USER'),
        'auth_pw' => $hex('PHP_AUTH_PW'),
        'auth_digest' => $hex('PHP_AUTH_DIGEST'),
        'body' => strlen(file_get_contents('php://input')),
        'argv' => $GLOBALS['argv'] ?? null,
    ]);
}
