<?php
// Reports the worker script's PHP memory use after a request that touched the
// superglobals and read the body through php://input.
$handler = static function (): void {
    $touch = [$_GET, $_POST, $_COOKIE, $_SERVER, $_REQUEST, $_FILES, file_get_contents('php://input')];
    unset($touch);
    echo memory_get_usage();
};
while (ferrophp_handle_request($handler)) {
}
