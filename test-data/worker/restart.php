<?php
// Echoes "BOOT:SERVED" (a per-boot id and the requests this boot served); ?ms=N sleeps
// first, so restarts find requests in flight.
$bootId = bin2hex(random_bytes(4));
$served = 0;
$handler = static function () use ($bootId, &$served): void {
    $served++;
    if (isset($_GET['ms'])) {
        usleep(1000 * (int) $_GET['ms']);
    }
    header('Content-Type: text/plain');
    echo "$bootId:$served";
};
while (frankenphp_handle_request($handler)) {
}
