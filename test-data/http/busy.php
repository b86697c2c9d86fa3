<?php
// Burns CPU for up to ?seconds= (default 20): max_execution_time should stop it first.
$end = microtime(true) + (float) ($_GET['seconds'] ?? 20);
$i = 0;
while (microtime(true) < $end) {
    $i++;
}
echo "finished after $i iterations";
