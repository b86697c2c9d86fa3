<?php
// The demo's worker script: booted once per thread, then serving requests in a loop.
$bootedAt = date(DATE_ATOM);
$handler = static function () use ($bootedAt): void {
    static $served = 0;
    $served++;
    header('Content-Type: text/plain; charset=utf-8');
    echo "ferrophp worker mode\n";
    echo "booted at $bootedAt, requests served by this thread: $served\n";
    echo 'shared hits: ', UserCache\Cache::increment('demo:hits'), "\n";
};
while (ferrophp_handle_request($handler)) {
}
