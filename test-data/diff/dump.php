<?php
// Dumps $_SERVER as JSON, for the differential test against nginx + php-fpm.
header('Content-Type: application/json');
echo json_encode($_SERVER, JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE | JSON_PRETTY_PRINT);
