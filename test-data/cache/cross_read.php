<?php
$v = UserCache\Cache::fetch($argv[1]);
echo $v === null ? 'missing' : $v['v'] . ':' . array_sum($v['list']);
