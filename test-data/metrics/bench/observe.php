<?php
// One benchmark request: $argv[3] intervals of $argv[1] calls each; after each interval
// the request given $argv[4] = 1 takes Metrics::snapshot() (a full merge of every
// thread's shard, the flush's work). $argv[2] picks the call: "observe" (one tag),
// "observe0" (no tags), "increment" (one tag) or "empty" (the loop alone, the baseline).
// Prints the ns spent in the call loops (hrtime), snapshots excluded.
use Ferrophp\Metrics;

$n = (int)($argv[1] ?? 1000);
$mode = $argv[2] ?? 'observe';
$reps = (int)($argv[3] ?? 1);
$flush = ($argv[4] ?? '0') === '1';
$tags = ['route' => '/api/items'];
$ns = 0;
for ($r = 0; $r < $reps; $r++) {
    $t0 = hrtime(true);
    switch ($mode) {
        case 'observe':
            for ($i = 0; $i < $n; $i++) {
                Metrics::observe('bench_latency_seconds', 0.001 + ($i & 1023) * 0.0001, $tags);
            }
            break;
        case 'observe0':
            for ($i = 0; $i < $n; $i++) {
                Metrics::observe('bench_latency_seconds_untagged', 0.001 + ($i & 1023) * 0.0001);
            }
            break;
        case 'increment':
            for ($i = 0; $i < $n; $i++) {
                Metrics::increment('bench_requests_total', 1, $tags);
            }
            break;
        default:
            for ($i = 0; $i < $n; $i++) {
                $x = 0.001 + ($i & 1023) * 0.0001;
            }
    }
    $ns += hrtime(true) - $t0;
    if ($flush) {
        Metrics::snapshot();
    }
}
echo $ns;
