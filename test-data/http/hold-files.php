<?php
// PHP using more file descriptors than the server kept for it (server/tests/fd_limits.rs):
// opens /dev/null until the process runs out of descriptors (or `max` times), says how
// many it holds, keeps them for `ms` milliseconds, then closes them all.
$max = (int) ($_GET['max'] ?? 1000000);
$held = [];
while (count($held) < $max) {
    $f = @fopen('/dev/null', 'r');
    if ($f === false) {
        break;
    }
    $held[] = $f;
}
echo 'holding ', count($held), "\n";
if (ob_get_level() > 0) {
    ob_flush();
}
flush();
usleep((int) ($_GET['ms'] ?? 1000) * 1000);
foreach ($held as $f) {
    fclose($f);
}
echo "released\n";
