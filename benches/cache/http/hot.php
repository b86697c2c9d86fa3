<?php
// Hot read: 100 fetches of one key per request, each a direct call into the backend.
require __DIR__ . '/common.php';
$n = 0;
switch ($b) {
    case 'apcu':
        for ($i = 0; $i < 100; $i++) { $n += count(apcu_fetch('http:array_10')); }
        break;
    case 'yac':
        for ($i = 0; $i < 100; $i++) { $n += count($yac->get('http:array_10')); }
        break;
    case 'usercache_copy':
        for ($i = 0; $i < 100; $i++) { $n += count(\UserCache\Cache::fetchCopy('http:array_10')); }
        break;
    default:
        for ($i = 0; $i < 100; $i++) { $n += count(\UserCache\Cache::fetch('http:array_10')); }
}
echo $n;
