<?php
// Memory-guard probe: every request keeps ?kib=N KiB (default 256) alive for the rest of
// the script's life, like a cache that is never pruned. Answers "BOOT:SERVED" as
// maxreq.php does, so a test sees when the script was rebooted.
$bootId = bin2hex(random_bytes(4));
$served = 0;
$kept = [];
while (ferrophp_handle_request(static function () use ($bootId, &$served, &$kept): void {
    $served++;
    $kib = (int) ($_GET['kib'] ?? 256);
    if ($kib > 0) {
        $kept[] = str_repeat('x', $kib * 1024);
    }
    echo "$bootId:$served";
})) {
}
