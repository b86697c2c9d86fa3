<?php
header('Content-Type: application/json');
echo json_encode([
    'getallheaders' => getallheaders(),
    'apache_request_headers' => apache_request_headers(),
]);
