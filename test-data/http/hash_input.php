<?php
// Hashes php://input incrementally; never holds the body in a PHP string.
header('Content-Type: application/json');
$ctx = hash_init('sha256');
$in = fopen('php://input', 'rb');
$bytes = 0;
while (!feof($in)) {
    $n = hash_update_stream($ctx, $in, 1 << 20);
    if ($n <= 0) {
        break;
    }
    $bytes += $n;
}
echo json_encode([
    'sha256' => hash_final($ctx),
    'bytes' => $bytes,
    'peak_memory' => memory_get_peak_usage(true),
]);
