<?php
ini_set('memory_limit', '16M');
echo "before\n";
$chunks = [];
while (true) {
    $chunks[] = str_repeat('x', 1024 * 1024);
}
