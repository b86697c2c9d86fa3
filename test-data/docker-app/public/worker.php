<?php
// Worker mode in a derived image: a boot id and a counter that persist across requests.
$boot = bin2hex(random_bytes(4));
$served = 0;
while (frankenphp_handle_request(function () use ($boot, &$served): void {
    $served++;
    header('Content-Type: application/json');
    echo json_encode(['boot' => $boot, 'served' => $served, 'uid' => posix_geteuid()]);
})) {
}
