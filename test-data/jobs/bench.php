<?php
// Dispatch cost from PHP: Ferrophp\Jobs::dispatch() against phpredis LPUSH of the same
// serialized payload, then a round trip each (dispatch + take + ack against LPUSH +
// RPOP), ?n= times each, on one PHP thread. Prints one JSON object: wall and process CPU
// (getrusage, every thread of the process) per operation, in microseconds.
$n = (int)($_GET['n'] ?? 20000);
$payload = ['to' => 'user@example.com', 'body' => str_repeat('x', 200)];
$redis = new Redis();
$redis->connect('127.0.0.1', (int)$_GET['port']);
$redis->del('bench');
function cpu_us(): float {
    $r = getrusage();
    return $r['ru_utime.tv_sec'] * 1e6 + $r['ru_utime.tv_usec'] + $r['ru_stime.tv_sec'] * 1e6 + $r['ru_stime.tv_usec'];
}
function measure(int $n, callable $op): array {
    $op();
    $c = cpu_us();
    $t = hrtime(true);
    for ($i = 0; $i < $n; $i++) {
        $op();
    }
    return ['wall_us' => (hrtime(true) - $t) / 1e3 / $n, 'cpu_us' => (cpu_us() - $c) / $n];
}
$out = [
    'payload_bytes' => strlen(serialize($payload)),
    'dispatch' => measure($n, fn() => Ferrophp\Jobs::dispatch('bench', $payload)),
    'lpush' => measure($n, fn() => $redis->lPush('bench', serialize($payload))),
    'dispatch_take_ack' => measure($n, function () use ($payload) {
        Ferrophp\Jobs::dispatch('bench2', $payload);
        Ferrophp\Jobs::take('bench2')->ack();
    }),
    'lpush_rpop' => measure($n, function () use ($redis, $payload) {
        $redis->lPush('bench2', serialize($payload));
        unserialize($redis->rPop('bench2'));
    }),
];
echo json_encode($out);
