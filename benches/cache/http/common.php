<?php
// HTTP workloads: ?b=usercache|usercache_copy|apcu selects the backend; values are stored
// by the first request that misses.
$b = $_GET['b'] ?? 'usercache';
$fetch = match ($b) {
    'apcu' => 'apcu_fetch',
    'usercache_copy' => [\UserCache\Cache::class, 'fetchCopy'],
    default => [\UserCache\Cache::class, 'fetch'],
};
$store = $b === 'apcu' ? 'apcu_store' : [\UserCache\Cache::class, 'store'];
$probe = $fetch('http:array_10');
if ($probe === false || $probe === null) {
    $big = [];
    for ($i = 0; $i < 1000; $i++) { $big["key$i"] = "value$i"; }
    $store('http:array_1000', $big);
    $store('http:array_10', range(1, 10));
}
