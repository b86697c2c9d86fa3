<?php
// Classic mode: records the value given in ?v= into a distribution, counts the request and
// sets a gauge. server/tests/metrics.rs checks the scrape against what it sent.
use Ferrophp\Metrics;

$v = (float)($_GET['v'] ?? 0);
Metrics::observe('app_value', $v, ['mode' => 'classic']);
Metrics::increment('app_requests_total', 1, ['mode' => 'classic']);
Metrics::gauge('app_last_value', $v, ['mode' => 'classic']);
header('Content-Type: text/plain');
echo "ok\n";
