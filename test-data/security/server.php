<?php
// $_SERVER and getallheaders() as JSON, to see which request headers reached PHP and how.
header('Content-Type: application/json');
echo json_encode(['server' => $_SERVER, 'headers' => getallheaders()]);
