<?php
// Reads php://input twice and decodes it as JSON.
header('Content-Type: application/json');
$raw = file_get_contents('php://input');
echo json_encode([
    'length' => strlen($raw),
    'decoded' => json_decode($raw, true),
    'again_equal' => file_get_contents('php://input') === $raw,
    'content_type' => $_SERVER['CONTENT_TYPE'] ?? null,
    'post' => $_POST,
]);
