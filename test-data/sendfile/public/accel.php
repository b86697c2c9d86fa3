<?php
// Access control first, then hands the file over: X-Accel-Redirect with ?f=, after
// setting headers the answer must keep. The body printed here must never reach a client.
if (($_GET['token'] ?? '') !== 'let-me-in') {
    http_response_code(403);
    echo "denied\n";
    return;
}
header('Content-Disposition: attachment; filename="report.txt"');
header('Cache-Control: private, max-age=60');
header('X-App: sendfile-test');
header('Content-Type: application/x-php-default');
setcookie('downloaded', 'yes');
header('X-Accel-Redirect: ' . $_GET['f']);
echo "PHP BODY THAT MUST NOT BE SENT\n";
