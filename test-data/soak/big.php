<?php
// 256 KiB of output, streamed in 8 KiB pieces.
$chunk = str_repeat('b', 8192);
for ($i = 0; $i < 32; $i++) {
    echo $chunk;
}
