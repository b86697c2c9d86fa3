<?php
// Fetches key $argv[1], waits until the file $argv[2] exists (others overwrite the key
// meanwhile), then checks the value it holds is intact.
$v = UserCache\Cache::fetch($argv[1]);
$copy = serialize($v);
$keys = array_keys($v['data']);
$deadline = microtime(true) + 20;
while (!file_exists($argv[2]) && microtime(true) < $deadline) usleep(2000);
$v['data']['extra'] = 1; // separate now, after the overwrites
unset($v['data']['extra']);
echo serialize($v) === $copy && array_keys($v['data']) === $keys ? 'intact' : 'CHANGED';
