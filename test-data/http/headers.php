<?php
// Status and headers exactly as set: replace vs append, several cookies, removal,
// headers_sent() before and after output, header() after output is refused.
http_response_code(201);
header('X-Single: one');
header('X-Single: two');
header('X-Multi: a');
header('X-Multi: b', false);
header('X-Removed: gone');
header_remove('X-Removed');
setcookie('first', '1');
setcookie('second', 'two words', ['path' => '/sub', 'httponly' => true]);
header('Set-Cookie: third=3; Path=/', false);
header('Content-Type: text/plain; charset=utf-8');
$before = headers_sent();
echo 'before=' . var_export($before, true) . "\n";
// Push the output (and so the headers) past any output buffer to the SAPI.
if (ob_get_level() > 0) {
    ob_flush();
}
flush();
echo 'after=' . var_export(headers_sent($file, $line), true) . "\n";
@header('X-Late: yes');
echo "done\n";
