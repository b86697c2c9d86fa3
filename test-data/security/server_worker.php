<?php
// Worker script: $_SERVER and getallheaders() of each request as JSON.
$handler = static function (): void {
    header('Content-Type: application/json');
    echo json_encode(['server' => $_SERVER, 'headers' => getallheaders()]);
};
while (ferrophp_handle_request($handler)) {
}
