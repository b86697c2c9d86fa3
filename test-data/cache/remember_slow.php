<?php
// Single-flight: concurrent requests remember the same key; the producer counts its runs.
$v = UserCache\Cache::remember($argv[1], function () use ($argv) {
    UserCache\Cache::increment($argv[1] . ':calls');
    usleep(300000);
    return ['produced' => true];
});
echo json_encode($v), ' ', UserCache\Cache::fetch($argv[1] . ':calls');
