<?php
// UserCache benchmark workloads, one backend per process. Usage:
//   ferrophp php-cli [-d extension=apcu.so ...] workloads.php <backend> [workload-filter]
// backends: usercache | usercache_copy (copy-on-read reference) | apcu (serializer from ini)
// Prints one JSON object: {backend, results: {workload: {ns_per_op, mem_bytes}}}.
// CLI repeated read: store once, then 2,000 x (fetch + a small access probe) per
// iteration, 12 measured iterations after 2 warm-ups; the median iteration is reported.

declare(strict_types=1);

final class Point { public function __construct(public int $x = 0, public int $y = 0, public string $label = '') {} }
final class Node2 { public array $children = []; public ?Node2 $parent = null; public function __construct(public string $name = '') {} }

function payloads(): array {
    $config = [];
    for ($i = 0; $i < 8; $i++) {
        $config["section$i"] = ['enabled' => true, 'level' => $i, 'name' => "s$i",
            'opts' => ['a' => 1.5, 'b' => [1, 2, 3], 'c' => ['deep' => ['deeper' => "x$i"]]]];
    }
    $objs = [];
    for ($i = 0; $i < 100; $i++) { $objs[] = new Point($i, $i * 2, "p$i"); }
    $root = new Node2('root');
    for ($i = 0; $i < 10; $i++) { $c = new Node2("c$i"); $c->parent = $root; $root->children[] = $c; }
    $big = [];
    for ($i = 0; $i < 1000; $i++) { $big["key$i"] = "value$i"; }
    return [
        'scalar' => 42,
        'short_string' => 'hello world, short string',
        'string_100k' => str_repeat('abcdefghij', 10240),
        'array_10' => range(1, 10),
        'array_1000' => $big,
        'nested_config' => $config,
        'objects_100' => $objs,
        'object_graph' => $root,
    ];
}

// A small access probe per payload: touch one element, as application code would.
function probe(mixed $v): int {
    if (is_int($v)) return $v;
    if (is_string($v)) return strlen($v);
    if (is_array($v)) { $f = $v[array_key_first($v)] ?? null; return is_array($f) ? count($f) : (is_object($f) ? 1 : 2); }
    if ($v instanceof Node2) return count($v->children);
    return 0;
}

$backend = $argv[1] ?? 'usercache';
$filter = $argv[2] ?? '';
$api = match ($backend) {
    'usercache' => [fn($k, $v) => \UserCache\Cache::store($k, $v), fn($k) => \UserCache\Cache::fetch($k), fn(array $ks) => \UserCache\Cache::fetchMultiple($ks)],
    'usercache_copy' => [fn($k, $v) => \UserCache\Cache::store($k, $v), fn($k) => \UserCache\Cache::fetchCopy($k), null],
    'apcu' => [fn($k, $v) => apcu_store($k, $v), fn($k) => apcu_fetch($k), fn(array $ks) => apcu_fetch($ks)],
    'yac' => (function () { $y = new Yac(); return [fn($k, $v) => $y->set($k, $v), fn($k) => $y->get($k), fn(array $ks) => $y->get($ks)]; })(),
    'resident' => [null, null, null],
};
[$store, $fetch, $multi] = $api;

function measure(callable $iteration, int $ops): float {
    $samples = [];
    for ($it = 0; $it < 14; $it++) {
        $t = hrtime(true);
        $iteration();
        $dt = hrtime(true) - $t;
        if ($it >= 2) $samples[] = $dt / $ops;
    }
    sort($samples);
    return $samples[intdiv(count($samples), 2)];
}

$results = [];
$ops = 2000;
$sink = 0;
foreach (payloads() as $name => $value) {
    if ($filter !== '' && !str_contains("read:$name", $filter)) continue;
    $key = "bench:$name";
    $mem0 = memory_get_usage();
    if ($backend === 'resident') {
        // The same value already resident in the request: the 1.5x target's baseline.
        $resident = $value;
        $ns = measure(function () use (&$sink, $resident, $ops) { for ($i = 0; $i < $ops; $i++) { $v = $resident; $sink += probe($v); } }, $ops);
    } else {
        $store($key, $value);
        $ns = measure(function () use (&$sink, $fetch, $key, $ops) { for ($i = 0; $i < $ops; $i++) { $v = $fetch($key); $sink += probe($v); } }, $ops);
    }
    $results["read:$name"] = ['ns_per_op' => $ns, 'request_mem_bytes' => memory_get_usage() - $mem0];
}
if ($backend !== 'resident') {
    // CLI store, cycling 32 keys.
    foreach (['scalar', 'array_10', 'array_1000'] as $name) {
        if ($filter !== '' && !str_contains("store:$name", $filter)) continue;
        $value = payloads()[$name];
        $ns = measure(function () use ($store, $value, $ops) { for ($i = 0; $i < $ops; $i++) { $store('cyc:' . ($i & 31), $value); } }, $ops);
        $results["store:$name"] = ['ns_per_op' => $ns];
    }
    // Hot read: 100 fetches of one key (per op = one fetch).
    if ($filter === '' || str_contains('hot_read', $filter)) {
        $store('hot', payloads()['array_10']);
        $ns = measure(function () use (&$sink, $fetch, $ops) { for ($i = 0; $i < $ops; $i++) { $sink += count($fetch('hot')); } }, $ops);
        $results['hot_read:array_10'] = ['ns_per_op' => $ns];
    }
    // Bulk reads of 32 and 128 keys: multi-get and per-key loop (per op = one bulk read).
    foreach ([32, 128] as $n) {
        $keys = [];
        for ($i = 0; $i < $n; $i++) { $keys[] = "bulk:$i"; $store("bulk:$i", ['id' => $i, 'name' => "item$i", 'tags' => ['a', 'b']]); }
        if ($multi && ($filter === '' || str_contains("bulk_multi:$n", $filter))) {
            $ns = measure(function () use (&$sink, $multi, $keys) { for ($i = 0; $i < 200; $i++) { $sink += count($multi($keys)); } }, 200);
            $results["bulk_multi:$n"] = ['ns_per_op' => $ns];
        }
        if ($filter === '' || str_contains("bulk_loop:$n", $filter)) {
            $ns = measure(function () use (&$sink, $fetch, $keys) { for ($i = 0; $i < 200; $i++) { foreach ($keys as $k) { $sink += count($fetch($k)); } } }, 200);
            $results["bulk_loop:$n"] = ['ns_per_op' => $ns];
        }
    }
}
$info = $backend === 'apcu' ? apcu_sma_info(true) : ($backend === 'resident' ? [] : \UserCache\Cache::info());
echo json_encode(['backend' => $backend, 'serializer' => ini_get('apc.serializer') ?: null, 'results' => $results,
    'cache_memory' => $info['memory_used'] ?? (isset($info['seg_size']) ? $info['seg_size'] - $info['avail_mem'] : null), 'sink' => $sink]), "\n";
