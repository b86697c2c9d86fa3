<?php
// Behaviour of the apcu_* layer that APCu's own suite cannot show under our SAPI, run by
// server/tests/apcu_layer.rs with `ferrophp php-cli` (APCu not loaded):
//   layer.php enabled    the default configuration
//   layer.php disabled   with -d apc.enabled=0, or under the "cli" SAPI without
//                        apc.enable_cli=1: everything behaves as APCu disabled
// Prints "ok N" or the failed checks.
$n = 0;
$failed = [];
function check(bool $ok, string $what): void { global $n, $failed; $n++; if (!$ok) $failed[] = $what; }
$warnings = [];
set_error_handler(function (int $no, string $msg) use (&$warnings) { $warnings[] = $msg; return true; });

if (($argv[1] ?? '') === 'disabled') {
    $off_by_cli = PHP_SAPI === 'cli' && !ini_get('apc.enable_cli');
    check(!apcu_enabled() && (ini_get('apc.enabled') === '0' || ($off_by_cli && ini_get('apc.enabled') === '1')),
        'apcu_enabled() follows apc.enabled and apc.enable_cli');
    check(apcu_store('k', 1) === false && apcu_add('k', 1) === false, 'store/add fail');
    check(apcu_store(['k' => 1]) === ['k' => -1], 'array store fails per key');
    check(apcu_fetch('k', $ok) === false && $ok === false && apcu_fetch(['k']) === [], 'fetch misses');
    check(!apcu_exists('k') && apcu_exists(['k']) === [] && apcu_key_info('k') === null, 'exists/key_info');
    check(apcu_delete('k') === false && apcu_delete(['k']) === ['k'], 'delete');
    check(apcu_inc('k', 1, $ok) === false && $ok === false && apcu_cas('k', 0, 1) === false, 'inc/cas');
    check(apcu_entry('k', fn() => 42) === null, 'entry returns null, callback not run');
    $warnings = [];
    check(apcu_cache_info() === false && apcu_sma_info() === false && count($warnings) === 2, 'info functions warn');
    try { new APCUIterator(); check(false, 'iterator refused'); } catch (Error $e) { check(str_contains($e->getMessage(), 'must be enabled'), 'iterator refused'); }
    // UserCache\Cache itself is not affected by apc.enabled.
    check(UserCache\Cache::store('uc', 1) && UserCache\Cache::fetch('uc') === 1, 'UserCache unaffected');
} else {
    check(ini_get('apc.enabled') === '1' && apcu_enabled(), 'enabled by default');
    // apc.enable_cli=1 is the runner's (the "cli" SAPI needs it); the rest are defaults.
    foreach (['apc.shm_size' => '32M', 'apc.ttl' => '0', 'apc.serializer' => 'php', 'apc.enable_cli' => '1', 'apc.entries_hint' => '4096'] as $k => $v) {
        check(ini_get($k) === $v, "ini $k");
    }
    // The empty key and binary keys are keys.
    check(apcu_store('', 123) && apcu_fetch('') === 123 && apcu_exists('') && apcu_delete(''), 'empty key');
    check(apcu_store("a\0b", 'x') && apcu_fetch(["a\0b"]) === ["a\0b" => 'x'], 'binary key');
    // Resources warn and fail (also inside arrays); closures throw serialize()'s exception.
    $warnings = [];
    check(apcu_store('r', fopen('php://memory', 'r')) === false && !apcu_exists('r'), 'resource refused');
    check(apcu_store(['r2' => ['f' => fopen('php://memory', 'r')]]) === ['r2' => -1], 'nested resource refused');
    check(count($warnings) === 2 && str_contains($warnings[0], 'Cannot store resources in apcu cache'), 'resource warning');
    try { apcu_store('c', [fn() => 1]); check(false, 'closure throws'); } catch (Exception $e) { check(str_contains($e->getMessage(), "Serialization of 'Closure' is not allowed"), 'closure throws'); }
    // References keep their aliasing; a self-referencing array is stored with its cycle.
    $x = 1; $pair = [&$x, &$x];
    check(apcu_store('refs', $pair), 'refs stored');
    $r = apcu_fetch('refs'); $r[0] = 7; check($r[1] === 7, 'aliasing kept');
    $self = [1]; $self[] = &$self;
    check(apcu_store('self', $self) && apcu_fetch('self')[1][1][1][0] === 1, 'cycle kept');
    // key_info and cache_info shapes.
    apcu_store('ttl', 'v', 100);
    $ki = apcu_key_info('ttl');
    check(array_keys($ki) === ['hits', 'access_time', 'mtime', 'creation_time', 'deletion_time', 'ttl', 'refs'] && $ki['ttl'] === 100, 'key_info shape');
    check(apcu_key_info('nope') === null, 'key_info miss');
    $ci = apcu_cache_info(true);
    check(array_keys($ci) === ['num_slots', 'ttl', 'num_hits', 'num_misses', 'num_inserts', 'num_entries', 'expunges', 'start_time', 'mem_size', 'memory_type'], 'limited cache_info shape');
    $full = apcu_cache_info();
    $infos = array_column($full['cache_list'], 'info');
    check(in_array('ttl', $infos, true) && $full['deleted_list'] === [] && array_sum($full['slot_distribution']) === count($infos), 'full cache_info');
    $link = $full['cache_list'][array_search('ttl', $infos, true)];
    check(array_keys($link) === ['info', 'ttl', 'num_hits', 'mtime', 'creation_time', 'deletion_time', 'access_time', 'ref_count', 'mem_size'] && $link['ttl'] === 100, 'cache_list entry shape');
    $sma = apcu_sma_info();
    check($sma['num_seg'] === 1 && is_float($sma['seg_size']) && isset($sma['block_lists'][0][0]['size']), 'sma_info shape');
    // APCUIterator: search, formats, totals, delete.
    apcu_clear_cache();
    for ($i = 0; $i < 30; $i++) apcu_store("it$i", $i);
    apcu_store('other', 'o');
    $it = new APCUIterator('/^it1/', APC_ITER_KEY | APC_ITER_VALUE, 4);
    $seen = [];
    foreach ($it as $k => $v) $seen[$k] = $v['value'];
    check(array_keys($seen) === ['it1', 'it10', 'it11', 'it12', 'it13', 'it14', 'it15', 'it16', 'it17', 'it18', 'it19'] && $seen['it12'] === 12, 'regex search in store order');
    check($it->getTotalCount() === 11, 'total count');
    check(iterator_count(new APCUIterator(['it3', 'other', 'absent'])) === 2, 'key list search');
    check(apcu_delete(new APCUIterator('/^it/')) === true && apcu_cache_info()['num_entries'] === 1 && apcu_fetch('other') === 'o', 'apcu_delete(iterator)');
}
echo $failed ? "FAILED: " . implode('; ', $failed) . "\n" : "ok $n\n";
