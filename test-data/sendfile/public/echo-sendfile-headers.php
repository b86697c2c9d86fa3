<?php
// What the app is told about sendfile support.
header('Content-Type: application/json');
echo json_encode([
    'type' => $_SERVER['HTTP_X_SENDFILE_TYPE'] ?? null,
    'mapping' => $_SERVER['HTTP_X_ACCEL_MAPPING'] ?? null,
]);
