<?php
// The request superglobals as JSON.
header('Content-Type: application/json');
echo json_encode([
    'get' => $_GET,
    'post' => $_POST,
    'cookie' => $_COOKIE,
    'request' => $_REQUEST,
    'files' => $_FILES,
    'method' => $_SERVER['REQUEST_METHOD'],
]);
