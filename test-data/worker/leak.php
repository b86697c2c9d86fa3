<?php
// Isolation probe over HTTP: reports everything one request sees (superglobals, uploads,
// HTTP_* entries, session, the status and headers it started with) and then changes
// per-request state from the query: ?login=NAME starts a session holding NAME (later
// requests with the session cookie count hits in it), ?status=N sets the status,
// ?mark=V sets an X-Mark header and a `mark` cookie.
$bootId = bin2hex(random_bytes(4));
$handler = static function () use ($bootId): void {
    $before = [
        'status' => http_response_code(),
        'headers' => headers_list(),
        'session_status' => session_status(),
        'ob_level' => ob_get_level(),
    ];
    $files = [];
    foreach ($_FILES as $field => $file) {
        $files[$field] = [
            'name' => $file['name'],
            'size' => $file['size'],
            'error' => $file['error'],
            'content' => is_uploaded_file($file['tmp_name']) ? file_get_contents($file['tmp_name']) : null,
        ];
    }
    $http = [];
    foreach ($_SERVER as $key => $value) {
        if (str_starts_with($key, 'HTTP_')) {
            $http[$key] = $value;
        }
    }
    ksort($http);
    $report = [
        'boot' => $bootId,
        'get' => $_GET,
        'post' => $_POST,
        'cookie' => $_COOKIE,
        'request' => $_REQUEST,
        'files' => $files,
        'http' => $http,
        'before' => $before,
    ];
    if (isset($_GET['login'])) {
        session_start();
        $_SESSION = ['user' => $_GET['login'], 'hits' => 0];
    } elseif (isset($_COOKIE[session_name()])) {
        session_start();
    }
    if (isset($_SESSION['user'])) {
        $_SESSION['hits']++;
    }
    $report['session'] = $_SESSION ?? null;
    if (isset($_GET['status'])) {
        http_response_code((int) $_GET['status']);
    }
    if (isset($_GET['mark'])) {
        header('X-Mark: ' . $_GET['mark']);
        setcookie('mark', $_GET['mark']);
    }
    header('Content-Type: application/json');
    echo json_encode($report);
};
while (ferrophp_handle_request($handler)) {
}
