<?php
// Reports what one request sees; ?login=NAME starts a session and stores NAME in it.
$handler = static function (): void {
    if (isset($_GET['login'])) {
        session_start();
        $_SESSION['user'] = $_GET['login'];
    } elseif (isset($_COOKIE[session_name()])) {
        session_start();
    }
    $status = http_response_code();
    if (isset($_GET['status'])) {
        http_response_code((int) $_GET['status']);
        header('X-Leak: ' . $_GET['status']);
    }
    header('Content-Type: application/json');
    echo json_encode([
        'get' => $_GET,
        'post' => $_POST,
        'cookie' => $_COOKIE,
        'request' => $_REQUEST,
        'files' => array_keys($_FILES),
        'client' => $_SERVER['HTTP_X_CLIENT'] ?? null,
        'session' => $_SESSION ?? null,
        'status' => $status,
        'ob_level' => ob_get_level(),
    ]);
};
while (ferrophp_handle_request($handler)) {
}
