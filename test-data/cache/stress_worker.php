<?php
// Worker-mode stress: values fetched in one HTTP request stay in a static and in worker
// globals and are re-checked in later requests while other threads overwrite the keys.
require __DIR__ . '/stress_lib.php';
$kept_across_requests = [];
$handler = static function () use (&$kept_across_requests): void {
    static $statics = [];
    $secs = (float)($_GET['secs'] ?? 0.1);
    $r = stress_run($secs, $kept_across_requests);
    if (count($kept_across_requests) > 0) { $statics[mt_rand(0, 7)] = $kept_across_requests[array_rand($kept_across_requests)]; }
    foreach ($statics as $i => [$v, $ser, $kind]) { if (serialize($v) !== $ser) { $r = "static $i changed"; } }
    echo $r;
};
while (ferrophp_handle_request($handler)) {}
