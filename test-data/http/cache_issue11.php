<?php
// Issue 11's repro served over HTTP: strings of 600..8000 bytes after a block's first
// (dedicated) string. Before the fix the 2nd store wrote past a 512-byte chunk and the
// whole server aborted with "malloc(): corrupted top size".
for ($i = 0; $i < 200; $i++) {
    UserCache\Cache::store("k$i", ['a' => 'x', 'b' => str_repeat('y', 600 + $i * 37), 'c' => str_repeat('z', 3000)]);
    apcu_store("apcu$i", ['a' => 'x', 'b' => str_repeat('y', 600 + $i * 37), 'c' => str_repeat('z', 3000)]);
}
echo strlen(UserCache\Cache::fetch('k5')['b']), ' ', strlen(apcu_fetch('apcu199')['b']), "\n";
