<?php
// Writes ?mb= MiB (default 8) of output in 64 KiB flushed pieces, stopping early when
// the client is gone, then appends "TAG output COMPLETE ABORTED" to FERRO_JOURNAL: a
// test sees whether the PHP thread got past a client that never reads.
ignore_user_abort(true);
$chunk = str_repeat('0123456789abcdef', 4096);
$pieces = (int) ($_GET['mb'] ?? 8) * 16;
$sent = 0;
while ($ob = ob_get_level()) {
    ob_end_flush();
}
for ($i = 0; $i < $pieces && !connection_aborted(); $i++) {
    echo $chunk;
    flush();
    $sent++;
}
file_put_contents(
    getenv('FERRO_JOURNAL'),
    sprintf("%s output %d %d\n", $_GET['tag'] ?? '-', (int) ($sent === $pieces), connection_aborted()),
    FILE_APPEND | LOCK_EX
);
