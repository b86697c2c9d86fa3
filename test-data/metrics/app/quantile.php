<?php
// Reads back merged state from PHP: the quantile of a series and the snapshot's counts.
use Ferrophp\Metrics;

header('Content-Type: application/json');
$q = (float)($_GET['q'] ?? 0.5);
$snap = Metrics::snapshot();
$counts = [];
foreach ($snap['series'] as $s) {
    if ($s['name'] === 'app_value') {
        $counts[$s['tags']['mode']] = $s['count'];
    }
}
echo json_encode([
    'classic' => Metrics::quantile('app_value', $q, ['mode' => 'classic']),
    'worker' => Metrics::quantile('app_value', $q, ['mode' => 'worker']),
    'counts' => $counts,
]);
