<?php
// Reports the worker script's PHP memory use after handling each request's superglobals.
$handler = static function (): void {
    $touch = [$_GET, $_POST, $_COOKIE, $_SERVER, $_REQUEST, $_FILES];
    unset($touch);
    echo memory_get_usage();
};
while (ferrophp_handle_request($handler)) {
}
