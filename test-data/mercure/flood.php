<?php
// Publishes ?n= updates of ?size= bytes on ?topic= as fast as mercure_publish() goes;
// prints how many it published.
$n = (int) ($_GET['n'] ?? 1000);
$data = str_repeat('x', (int) ($_GET['size'] ?? 1024));
for ($i = 0; $i < $n; $i++) {
    mercure_publish($_GET['topic'] ?? 'flood', $data, id: "f$i");
}
echo $n;
