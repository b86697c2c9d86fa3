<?php
// ?code= via a raw status line (?line=1) or http_response_code(); ?throw=1 dies with an
// uncaught exception; ?exit=N calls exit(N) after some output.
$code = (int) ($_GET['code'] ?? 200);
if (isset($_GET['line'])) {
    header("HTTP/1.1 $code Custom Reason");
} else {
    http_response_code($code);
}
if (isset($_GET['throw'])) {
    throw new RuntimeException('ferrophp-uncaught-marker');
}
if (isset($_GET['exit'])) {
    echo 'before exit';
    exit((int) $_GET['exit']);
}
echo "status $code";
