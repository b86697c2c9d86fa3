<?php
// Nested output buffers with callbacks and a large flushed body: per-thread output state.
$tag = $argv[1];
ob_start(fn(string $buf) => strrev($buf));
echo "{$tag}-reversed";
ob_start(fn(string $buf) => strtoupper($buf));
echo "inner-{$tag}";
ob_end_flush();
ob_end_flush();
echo "\n";
for ($i = 0; $i < 64; $i++) {
    echo str_repeat(chr(65 + ($i + strlen($tag)) % 26), 1024), "\n";
    if ($i % 16 === 0) {
        flush();
    }
}
echo md5($tag), "\n";
