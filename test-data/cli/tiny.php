<?php
$values = [1, 2, 3, $argv[1] ?? 'none'];
echo count($values), ':', $values[3];
