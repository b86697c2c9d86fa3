<?php
// Echoes a per-boot id and how many requests this boot served.
$bootId = bin2hex(random_bytes(4));
$served = 0;
while (ferrophp_handle_request(static function () use ($bootId, &$served): void {
    $served++;
    echo "$bootId:$served";
})) {
}
