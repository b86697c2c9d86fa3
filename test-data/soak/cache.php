<?php
// Shared cache under churn: overwrite one of 64 keys with a value of random size, read another.
$k = 'soak' . mt_rand(0, 63);
UserCache\Cache::store($k, ['n' => mt_rand(), 's' => str_repeat('c', mt_rand(0, 40000)), 'l' => range(1, mt_rand(1, 200))]);
$v = UserCache\Cache::fetch('soak' . mt_rand(0, 63));
echo is_array($v) ? count($v['l']) : 'miss';
