<?php
// Copies STDIN to STDOUT upper-cased, writes a marker to STDERR, exits with argv[1].
$in = stream_get_contents(STDIN);
fwrite(STDOUT, strtoupper($in));
echo "|echo|";
fwrite(STDERR, "to-stderr\n");
exit((int)($argv[1] ?? 0));
