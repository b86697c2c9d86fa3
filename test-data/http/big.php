<?php
// ?mb= MiB of output (default 100) in 64 KiB echoes.
header('Content-Type: application/octet-stream');
$mb = (int) ($_GET['mb'] ?? 100);
$chunk = str_repeat('0123456789abcdef', 4096);
for ($i = 0; $i < $mb * 16; $i++) {
    echo $chunk;
}
