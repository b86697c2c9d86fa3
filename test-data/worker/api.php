<?php
// Served through a `match` pattern: reports the worker env (captured at boot, in the
// request's $_SERVER and through getenv()), the routing variables the server set, and
// how many requests this boot served.
$bootGreeting = $_SERVER['GREETING'] ?? null;
$bootShared = $_SERVER['SHARED'] ?? null;
$bootId = bin2hex(random_bytes(4));
$served = 0;
$handler = static function () use ($bootGreeting, $bootShared, $bootId, &$served): void {
    $served++;
    $env = static fn (string $name) => getenv($name) === false ? null : getenv($name);
    header('Content-Type: application/json');
    echo json_encode([
        'boot' => $bootId,
        'served' => $served,
        'boot_greeting' => $bootGreeting,
        'server_greeting' => $_SERVER['GREETING'] ?? null,
        'getenv_greeting' => $env('GREETING'),
        'boot_shared' => $bootShared,
        'server_shared' => $_SERVER['SHARED'] ?? null,
        'getenv_shared' => $env('SHARED'),
        'request_uri' => $_SERVER['REQUEST_URI'] ?? null,
        'script_name' => $_SERVER['SCRIPT_NAME'] ?? null,
        'script_filename' => $_SERVER['SCRIPT_FILENAME'] ?? null,
        'path_info' => $_SERVER['PATH_INFO'] ?? null,
        'get' => $_GET,
        'worker' => $_SERVER['FRANKENPHP_WORKER'] ?? null,
    ]);
};
while (ferrophp_handle_request($handler)) {
}
