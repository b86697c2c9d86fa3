<?php
// What PHP sees of a packed app's files (server/tests/package.rs): they must behave as
// files on disk do, read-only, with the writable path outside the package.
$status = function_exists('opcache_get_status') ? opcache_get_status(false) : false;
header('Content-Type: application/json');
echo json_encode([
    'dir' => __DIR__,
    'kernel_realpath' => realpath(__DIR__ . '/../src/Kernel.php'),
    'template_bytes' => strlen(file_get_contents(__DIR__ . '/../templates/base.html.twig')),
    'opcache' => is_array($status) && $status['opcache_enabled'],
    'probe_cached' => function_exists('opcache_is_script_cached') && opcache_is_script_cached(__FILE__),
    'var_realpath' => realpath(__DIR__ . '/../var'),
    'var_writable' => is_writable(__DIR__ . '/../var'),
    'app_mode' => sprintf('%o', fileperms(__DIR__) & 0777),
    'file_mode' => sprintf('%o', fileperms(__FILE__) & 0777),
    'php_binary' => PHP_BINARY,
    'php_ini' => php_ini_loaded_file(),
    'cwd' => getcwd(),
]);
