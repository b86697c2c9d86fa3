<?php
// A minimal worker: a static counter that survives across requests on one thread.
$booted = microtime(true);
$handler = static function () use ($booted): void {
    static $count = 0;
    $count++;
    header('Content-Type: text/plain');
    echo json_encode([
        'count' => $count,
        'booted' => $booted,
        'worker' => $_SERVER['FRANKENPHP_WORKER'] ?? null,
        'uri' => $_SERVER['REQUEST_URI'],
        'get' => $_GET,
    ]);
};
while (ferrophp_handle_request($handler)) {
    gc_collect_cycles();
}
