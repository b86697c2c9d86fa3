<?php
// Sets the header lines listed in the file $_SERVER['HEADERS_FILE'] (its first line the
// status code, then one header line per line, replace=false), and answers with PHP's own
// view of its header list (headers_list(), one hex-encoded line each): the oracle that
// worker/tests/response_headers.rs compares the response head ferrophp read with.
$lines = explode("\n", file_get_contents($_SERVER['HEADERS_FILE']));
http_response_code((int) array_shift($lines));
header('Content-Type: application/octet-stream');
foreach ($lines as $line) {
    if ($line !== '') {
        header($line, false);
    }
}
echo implode("\n", array_map('bin2hex', headers_list()));
