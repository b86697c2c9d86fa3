<?php
// Hot read: 100 fetches of one key per request.
require __DIR__ . '/common.php';
$n = 0;
for ($i = 0; $i < 100; $i++) { $n += count($fetch('http:array_10')); }
echo $n;
