<?php
// Front controller: reports how routing reached it.
header('Content-Type: application/json');
echo json_encode([
    'script' => 'index.php',
    'REQUEST_URI' => $_SERVER['REQUEST_URI'],
    'SCRIPT_NAME' => $_SERVER['SCRIPT_NAME'],
    'PATH_INFO' => $_SERVER['PATH_INFO'] ?? null,
    'PHP_SELF' => $_SERVER['PHP_SELF'],
    'QUERY_STRING' => $_SERVER['QUERY_STRING'],
]);
