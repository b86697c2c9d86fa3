<?php
// Shared by the cache stress tests (classic: stress.php, worker: stress_worker.php).
// Every stored value is self-checking, so a torn or freed value read by another thread
// shows up as a checksum mismatch rather than passing silently.
use UserCache\Cache;

enum StressSuit: string { case A = 'a'; case B = 'b'; }
final class StressObj { public function __construct(public int $ver = 0, public array $data = [], public ?StressObj $peer = null) {} }

function stress_value(int $kind, int $ver): mixed {
    $data = [];
    $n = [1, 10, 200, 1000][$ver % 4];
    for ($i = 0; $i < $n; $i++) { $data["k$i"] = ($i % 3 === 0) ? "s$ver-$i" : (($i % 3 === 1) ? $i * $ver : [$i, "n$ver"]); }
    // Strings of every size among the small ones, so that a block's string chunks are
    // carved at every boundary (the stress test missed issue 11: its strings were all
    // under 20 bytes except the single-string values, which take a dedicated chunk).
    for ($i = 0; $i < $n; $i += 7) { $data["m$i"] = str_repeat(chr(97 + $i % 26), ($ver * 131 + $i * 977) % 40000); }
    switch ($kind) {
        case 0: return $ver;
        case 1: return "str:$ver:" . str_repeat(chr(65 + $ver % 26), 100 + $ver % 5000);
        case 2: return ['ver' => $ver, 'sum' => crc32(serialize($data)), 'data' => $data];
        case 3: $a = new StressObj($ver, array_slice($data, 0, 5)); $b = new StressObj($ver, [], $a); $a->peer = $b; return [$a, $b, StressSuit::B];
        default: return ['ver' => $ver, 'list' => array_values(array_slice($data, 0, 50)), 'sum' => crc32(serialize(array_values(array_slice($data, 0, 50))))];
    }
}

function stress_check(mixed $v, int $kind): ?string {
    if ($v === null) return null; // absent (deleted, evicted)
    switch ($kind) {
        case 0: return is_int($v) ? null : 'int expected';
        case 1:
            if (!is_string($v) || !preg_match('/^str:(\d+):([A-Z]+)$/', $v, $m)) return 'bad string';
            $ver = (int)$m[1];
            return $m[2] === str_repeat(chr(65 + $ver % 26), 100 + $ver % 5000) ? null : 'string body';
        case 2: return (is_array($v) && crc32(serialize($v['data'])) === $v['sum']) ? null : 'array checksum';
        case 3:
            if (!is_array($v) || !($v[0] instanceof StressObj) || $v[0]->peer !== $v[1] || $v[1]->peer !== $v[0] || $v[2] !== StressSuit::B) return 'object graph';
            return null;
        default: return (is_array($v) && crc32(serialize($v['list'])) === $v['sum']) ? null : 'list checksum';
    }
}

/** Runs random operations on 8 hot keys for $seconds; $keep holds fetched values (and
 *  their serialized form at fetch time) that must stay intact while others overwrite. */
function stress_run(float $seconds, array &$keep): string {
    $end = microtime(true) + $seconds;
    $limit = Cache::info()['memory_limit'];
    $ops = 0;
    while (microtime(true) < $end) {
        for ($j = 0; $j < 50; $j++, $ops++) {
            $slot = mt_rand(0, 7);
            $kind = $slot % 5;
            $key = "hot:$slot";
            $r = mt_rand(0, 99);
            if ($r < 45) {
                $v = Cache::fetch($key);
                if ($e = stress_check($v, $kind)) return "fetch $key: $e";
                if ($v !== null && mt_rand(0, 9) === 0) { $keep[mt_rand(0, 15)] = [$v, serialize($v), $kind]; }
            } elseif ($r < 80) {
                Cache::store($key, stress_value($kind, mt_rand(0, 100000)));
            } elseif ($r < 85) {
                Cache::delete($key);
            } elseif ($r < 90) {
                $m = Cache::fetchMultiple(["hot:0", "hot:2", "hot:4"]);
                foreach ($m as $k => $v) { if ($e = stress_check($v, ((int)substr($k, 4)) % 5)) return "multi $k: $e"; }
            } elseif ($r < 95) {
                Cache::increment('ctr');
            } else {
                $v = Cache::remember("rem:$slot", fn() => stress_value($kind, 7));
                if ($e = stress_check($v, $kind)) return "remember: $e";
            }
        }
        foreach ($keep as $i => [$v, $ser, $kind]) {
            if (serialize($v) !== $ser) return "kept value $i changed";
        }
        $info = Cache::info();
        if ($info['memory_used'] > $limit) return "memory {$info['memory_used']} over limit $limit";
    }
    return "ok $ops";
}
