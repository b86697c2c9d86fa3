<?php
// Worker mode entry point of lib.php: the libraries load once per PHP thread.
require_once __DIR__ . '/lib.php';
while (frankenphp_handle_request(function () {
    header('Content-Type: application/json');
    echo json_encode(apcu_consumer_run($_GET));
})) {
}
