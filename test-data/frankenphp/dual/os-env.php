<?php
// The process environment in $_SERVER (FrankenPHP's TestWorkerHasOSEnvironmentVariableInSERVER,
// TestOsEnv): visible in both modes unless the server clears it (--clear-env). Configured
// env (-e) is always there; getenv() always sees the process environment.
require_once __DIR__ . '/_serve.php';

serve(static function (): void {
    header('Content-Type: application/json');
    echo json_encode([
        'server' => $_SERVER['CUSTOM_OS_ENV_VARIABLE'] ?? null,
        'configured' => $_SERVER['CONFIGURED'] ?? null,
        'getenv' => getenv('CUSTOM_OS_ENV_VARIABLE'),
        'env' => $_ENV['CUSTOM_OS_ENV_VARIABLE'] ?? null,
        'script_name' => $_SERVER['SCRIPT_NAME'] ?? null,
        'path' => isset($_SERVER['PATH']),
    ]);
});
