<?php
// The CGI variables of FrankenPHP's TestAllDefinedServerVars, as JSON (null when unset).
$names = ['CONTENT_LENGTH', 'HTTP_CONTENT_LENGTH', 'CONTENT_TYPE', 'HTTP_CONTENT_TYPE',
    'HTTP_SPECIAL_CHARS', 'DOCUMENT_ROOT', 'DOCUMENT_URI', 'GATEWAY_INTERFACE', 'HTTP_HOST',
    'HTTPS', 'PATH_INFO', 'REMOTE_ADDR', 'PHP_SELF', 'REMOTE_HOST', 'REQUEST_SCHEME',
    'SCRIPT_FILENAME', 'SCRIPT_NAME', 'SERVER_NAME', 'SERVER_PORT', 'SERVER_PROTOCOL',
    'SERVER_SOFTWARE', 'SSL_PROTOCOL', 'AUTH_TYPE', 'REMOTE_IDENT', 'PATH_TRANSLATED',
    'QUERY_STRING', 'REMOTE_USER', 'REQUEST_METHOD', 'REQUEST_URI', 'HTTP_X_EMPTY_HEADER'];
$out = [];
foreach ($names as $name) {
    $out[$name] = $_SERVER[$name] ?? null;
}
$out['body'] = file_get_contents('php://input');
echo json_encode($out);
