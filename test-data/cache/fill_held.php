<?php
$d = []; for ($j = 0; $j < 100; $j++) $d["k$j"] = "seed-$j";
UserCache\Cache::store($argv[1], ['data' => $d]);
echo "seeded";
