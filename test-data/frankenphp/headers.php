<?php
// apache_response_headers(), header lines without a colon, REMOTE_HOST and HTTPS.
header('Invalid');
header('X-One: 1');
header('X-Two: 2');
echo json_encode([
    'response_headers' => apache_response_headers(),
    'remote_host' => $_SERVER['REMOTE_HOST'] ?? null,
    'remote_addr' => $_SERVER['REMOTE_ADDR'] ?? null,
    'https' => $_SERVER['HTTPS'] ?? null,
]);
