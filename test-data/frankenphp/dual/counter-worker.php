<?php
// Requests counted by the worker script, with this request's input (TestWorker,
// TestKeepRunningOnConnectionAbort).
$handled = 0;
while (frankenphp_handle_request(static function () use (&$handled): void {
    echo json_encode(['handled' => $handled, 'get' => $_GET, 'post' => $_POST]);
})) {
    $handled++;
}
