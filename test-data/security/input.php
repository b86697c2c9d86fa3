<?php
// What the script saw of the request body: php://input, $_POST, and whether PHP noticed
// the connection broke off. Marks its answer so a test can tell it apart from the server's.
header('Content-Type: application/json');
$raw = file_get_contents('php://input');
echo json_encode([
    'script' => 'input.php',
    'length' => strlen($raw),
    'body' => $raw,
    'post' => $_POST,
    'aborted' => connection_aborted(),
]);
