<?php
// What one request sees of the state a previous request may have left behind; ?dirty=1
// first leaves as much of it as a page can: timezone, ini values, headers (set and
// removed), response code, cookies, open output buffers, a session. ?upload=1 also
// reports $_FILES (the dirty request is sent with an upload).
$seen = [
    'timezone' => date_default_timezone_get(),
    'date.timezone' => ini_get('date.timezone'),
    'precision' => ini_get('precision'),
    'ob_level' => ob_get_level(),
    'status' => http_response_code(),
    'headers' => headers_list(),
    'cookie' => $_COOKIE,
    'files' => $_FILES,
    'session_status' => session_status(),
    'session' => $_SESSION ?? null,
];
if (isset($_GET['dirty'])) {
    date_default_timezone_set('Pacific/Auckland');
    ini_set('date.timezone', 'Asia/Tokyo');
    ini_set('precision', '5');
    header('X-Dirty: 1');
    header_remove('Content-Type');
    http_response_code(299);
    setcookie('dirty', '1');
    session_start();
    $_SESSION['dirty'] = 1;
}
header('X-Seen: ' . base64_encode(json_encode($seen)));
echo json_encode($seen);
if (isset($_GET['dirty'])) {
    ob_start();
    ob_start();
    echo 'buffered';
}
