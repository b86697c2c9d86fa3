<?php
// A worker's own env (TestWorkerEnv): in the boot $_SERVER; ferrophp also gives it to
// each request's $_SERVER.
$boot = $_SERVER;
while (frankenphp_handle_request(static function () use ($boot): void {
    echo json_encode(['boot' => $boot['FOO'] ?? null, 'request' => $_SERVER['FOO'] ?? null, 'i' => $_GET['i'] ?? null]);
})) {
}
