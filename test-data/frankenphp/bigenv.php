<?php
// Found with MediaWiki (issue 11 follow-up): with PHP's own putenv(), two threads setting
// a big variable at once freed each other's environment strings and the server died
// (SIGSEGV). Sandboxed per thread, each request sees only its own value.
$v = $_GET['v'] ?? 'x';
putenv('FERRO_BIG=' . str_repeat($v, 3 << 20));
usleep(20000);
echo strlen((string)getenv('FERRO_BIG')), ' ', substr((string)getenv('FERRO_BIG'), 0, 1);
