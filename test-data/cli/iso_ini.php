<?php
// Per-thread ini and runtime settings: precision, timezone, error_reporting.
$tag = $argv[1];
$n = strlen($tag) + 3;
ini_set('precision', (string)$n);
date_default_timezone_set($n % 2 ? 'Asia/Tokyo' : 'America/New_York');
error_reporting($n % 2 ? E_ALL : E_ERROR);
for ($i = 0; $i < 100; $i++) {
    usleep(10);
    echo $tag, ' ', M_PI * $i, ' ', ini_get('precision'), ' ', date_default_timezone_get(), ' ',
        date('Y-m-d H:i T', 86400 * $i), ' ', error_reporting(), "\n";
}
