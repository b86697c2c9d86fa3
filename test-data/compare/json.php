<?php
require __DIR__ . '/app/records.php';
header('Content-Type: application/json');
echo json_encode(records());
