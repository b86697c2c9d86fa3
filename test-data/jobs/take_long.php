<?php
// A request that waits for a job far longer than its time limit allows.
set_time_limit(1);
$started = microtime(true);
$job = Ferrophp\Jobs::take('nothing-here', 30);
echo 'returned after ', round(microtime(true) - $started, 1), ' s';
