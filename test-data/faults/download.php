<?php
// ?mb= MiB of output (default 200) in flushed 64 KiB chunks, so it streams.
header('Content-Type: application/octet-stream');
$chunk = str_repeat('0123456789abcdef', 4096);
for ($i = 0, $n = (int) ($_GET['mb'] ?? 200) * 16; $i < $n; $i++) {
    echo $chunk;
    if (ob_get_level() > 0) {
        ob_flush();
    }
    flush();
}
