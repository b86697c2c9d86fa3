<?php
// frankenphp_log() at each level with context (TestLog_frankenphp_log, Caddy's TestLog).
require_once __DIR__ . '/_serve.php';

frankenphp_log('default level message');

serve(static function (): void {
    $i = $_GET['i'] ?? '';
    frankenphp_log("some debug message $i", FRANKENPHP_LOG_LEVEL_DEBUG, ['key int' => 1]);
    frankenphp_log("some info message $i", FRANKENPHP_LOG_LEVEL_INFO, ['key string' => 'string']);
    frankenphp_log("some warn message $i", FRANKENPHP_LOG_LEVEL_WARN);
    frankenphp_log("some error message $i", FRANKENPHP_LOG_LEVEL_ERROR, ['err' => ['a', 'v']]);
});
