<?php
// Classic mode entry point of lib.php.
require_once __DIR__ . '/lib.php';
header('Content-Type: application/json');
echo json_encode(apcu_consumer_run($_GET));
