<?php
// Ends the response with ?fn= (fastcgi_finish_request or ferrophp_finish_request), keeps
// running for ?ms=, then writes ?marker=. ?flush=1 starts streaming before finishing.
$fn = $_GET['fn'] ?? 'fastcgi_finish_request';
if (!in_array($fn, ['fastcgi_finish_request', 'ferrophp_finish_request'], true)) {
    http_response_code(400);
    exit;
}
header('X-Finish: ' . $fn);
echo "response before finish\n";
if (!empty($_GET['flush'])) {
    // Already streaming when the response is finished.
    if (ob_get_level() > 0) {
        ob_flush();
    }
    flush();
}
$ok = $fn();
echo "discarded after finish\n";
usleep((int) ($_GET['ms'] ?? 1500) * 1000);
file_put_contents($_GET['marker'], 'after finish ok=' . var_export($ok, true));
