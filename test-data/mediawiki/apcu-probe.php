<?php
// Test-only look into the apcu_* cache MediaWiki writes to, without MediaWiki: the cache
// summary, and the raw values of the keys named in ?key[]=... (strings as they are,
// anything else as its type).
header('Content-Type: application/json');
$out = ['info' => apcu_cache_info(true), 'keys' => []];
// ferrophp's own summary tells evictions of expired entries (expunges) from LRU ones;
// apcu_cache_info() reports both as APCu's "expunges".
if (class_exists(UserCache\Cache::class)) {
    $out['usercache'] = UserCache\Cache::info();
}
foreach ((array) ($_GET['key'] ?? []) as $key) {
    $value = apcu_fetch($key, $found);
    $out['keys'][$key] = $found ? (is_string($value) ? $value : get_debug_type($value)) : null;
}
echo json_encode($out, JSON_PRETTY_PRINT | JSON_INVALID_UTF8_SUBSTITUTE);
