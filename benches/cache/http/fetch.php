<?php
// One fetch per request (1,000-element array) plus an access probe.
require __DIR__ . '/common.php';
$v = fetch_value('http:array_1000');
echo $v['key500'];
