<?php
// Worker mode: the same recording as classic.php, from a long-lived worker script. Tags
// are built once at boot; increment() uses an int step.
use Ferrophp\Metrics;

$tags = ['mode' => 'worker'];
$handler = static function () use ($tags): void {
    $v = (float)($_GET['v'] ?? 0);
    Metrics::observe('app_value', $v, $tags);
    Metrics::increment('app_requests_total', 1, $tags);
    header('Content-Type: text/plain');
    echo "ok\n";
};
while (ferrophp_handle_request($handler)) {
}
