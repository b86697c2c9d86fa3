<?php
// putenv() persists within a worker (as FrankenPHP's TestEnvIsNotResetInWorkerMode),
// $_ENV changes made by the worker script persist across its requests, and the
// worker's boot $_SERVER carries FRANKENPHP_WORKER.
$_ENV['BOOT_ENV'] = 'from-boot';
$bootWorker = $_SERVER['FRANKENPHP_WORKER'] ?? null;
$requests = 0;
$handler = static function () use ($bootWorker, &$requests): void {
    $requests++;
    $_ENV['REQUESTS'] = $requests;
    if (isset($_GET['put'])) {
        putenv($_GET['put']);
    }
    header('Content-Type: application/json');
    echo json_encode([
        'requests' => $requests,
        'env_requests' => $_ENV['REQUESTS'],
        'boot_env' => $_ENV['BOOT_ENV'] ?? null,
        'get' => isset($_GET['name']) ? getenv($_GET['name']) : null,
        'boot_worker' => $bootWorker,
        'request_worker' => $_SERVER['FRANKENPHP_WORKER'] ?? null,
    ]);
};
while (frankenphp_handle_request($handler)) {
}
