<?php
// HTTP workloads: ?b=usercache|usercache_copy|apcu|yac selects the backend; values are
// stored by the first request that misses. fetch_value() calls the backend directly.
$b = $_GET['b'] ?? 'usercache';
$yac = $b === 'yac' ? new Yac() : null;

function fetch_value(string $key): mixed {
    global $b, $yac;
    return match ($b) {
        'apcu' => apcu_fetch($key),
        'yac' => $yac->get($key),
        'usercache_copy' => \UserCache\Cache::fetchCopy($key),
        default => \UserCache\Cache::fetch($key),
    };
}

function store_value(string $key, mixed $value): void {
    global $b, $yac;
    match ($b) {
        'apcu' => apcu_store($key, $value),
        'yac' => $yac->set($key, $value),
        default => \UserCache\Cache::store($key, $value),
    };
}

$probe = fetch_value('http:array_10');
if ($probe === false || $probe === null) {
    $big = [];
    for ($i = 0; $i < 1000; $i++) { $big["key$i"] = "value$i"; }
    store_value('http:array_1000', $big);
    store_value('http:array_10', range(1, 10));
}
