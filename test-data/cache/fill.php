<?php
// Stores $argv[1] values of about 10 KB under distinct keys (beyond a small limit).
$fail = 0;
for ($i = 0; $i < (int)$argv[1]; $i++) { if (!UserCache\Cache::store("fill:$i", str_repeat('x', 10000) . $i)) $fail++; }
$info = UserCache\Cache::info();
echo json_encode(['fail' => $fail, 'info' => $info, 'last' => substr(UserCache\Cache::fetch('fill:' . ((int)$argv[1] - 1)) ?? 'null', -4)]);
