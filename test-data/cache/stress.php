<?php
// Classic-mode stress request: $argv[1] seconds of random cache operations.
require __DIR__ . '/stress_lib.php';

$keep = [];
echo stress_run((float)($argv[1] ?? 0.2), $keep);
