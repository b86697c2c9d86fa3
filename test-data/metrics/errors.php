<?php
// Every invalid call throws a clear exception; the series cap drops and counts. Run by
// server/tests/metrics.rs with FERROPHP_METRICS_MAX_SERIES=3.
use Ferrophp\Metrics;
use Ferrophp\MetricsException;

$cases = [
    'bad name' => fn() => Metrics::observe('bad-name', 1.0),
    'digit first' => fn() => Metrics::observe('1abc', 1.0),
    'empty name' => fn() => Metrics::observe('', 1.0),
    'nan' => fn() => Metrics::observe('ok', NAN),
    'inf' => fn() => Metrics::gauge('ok_gauge', INF),
    'int tag key' => fn() => Metrics::observe('ok', 1.0, ['x']),
    'array tag value' => fn() => Metrics::observe('ok', 1.0, ['k' => [1]]),
    'null tag value' => fn() => Metrics::observe('ok', 1.0, ['k' => null]),
    'bad tag key' => fn() => Metrics::observe('ok', 1.0, ['bad key' => 'v']),
    'negative increment' => fn() => Metrics::increment('ok_total', -1),
    'quantile out of range' => fn() => Metrics::quantile('ok', 1.5),
];
foreach ($cases as $label => $f) {
    try {
        $f();
        echo "$label: no exception\n";
    } catch (MetricsException $e) {
        echo "$label: ", $e instanceof InvalidArgumentException ? 'InvalidArgumentException' : 'other', "\n";
    }
}
Metrics::observe('ok', 2.0, ['k' => 1, 'b' => true]);
try {
    Metrics::increment('ok');
    echo "kind mismatch: no exception\n";
} catch (MetricsException $e) {
    echo "kind mismatch: ", $e->getMessage(), "\n";
}
try {
    Metrics::observe('ok', 'x');
} catch (TypeError $e) {
    echo "type: TypeError\n";
}
// Cap of 3: 'ok' is one series; two more fit, the rest are dropped and counted.
for ($i = 0; $i < 5; $i++) {
    Metrics::increment('capped_total', 1, ['i' => $i]);
}
$s = Metrics::snapshot();
echo "series_count=", $s['series_count'], " dropped=", $s['dropped'], "\n";
echo "p50=", Metrics::quantile('ok', 0.5, ['b' => true, 'k' => '1']), "\n";
echo "unknown=", var_export(Metrics::quantile('nope', 0.5), true), "\n";
