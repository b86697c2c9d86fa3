<?php
// The same echo, as a worker script.
$handler = static function (): void {
    header('Content-Type: text/plain');
    echo file_get_contents('php://input');
};
while (ferrophp_handle_request($handler)) {
}
