<?php
// Overwrites key $argv[1] many times, deletes it, clears, then creates file $argv[2].
for ($i = 0; $i < 2000; $i++) {
    $d = []; for ($j = 0; $j < 100; $j++) $d["k$j"] = "v$i-$j";
    UserCache\Cache::store($argv[1], ['data' => $d]);
}
UserCache\Cache::delete($argv[1]);
UserCache\Cache::clear();
$info = UserCache\Cache::info();
touch($argv[2]);
echo "retired:", $info['retired_bytes'] > 0 ? 'held' : 'none';
