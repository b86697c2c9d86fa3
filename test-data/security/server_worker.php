<?php
// Worker script: $_SERVER and getallheaders() of each request as JSON, and the boot
// $_SERVER's FRANKENPHP_WORKER (proof that a worker served it).
$bootWorker = $_SERVER['FRANKENPHP_WORKER'] ?? null;
$handler = static function () use ($bootWorker): void {
    header('Content-Type: application/json');
    echo json_encode(['server' => $_SERVER, 'headers' => getallheaders(), 'boot_worker' => $bootWorker]);
};
while (ferrophp_handle_request($handler)) {
}
