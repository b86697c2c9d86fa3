<?php
// Stores $argv[1] => $argv[2] (as part of an array).
UserCache\Cache::store($argv[1], ['v' => $argv[2], 'list' => range(1, 50)]);
echo "stored";
