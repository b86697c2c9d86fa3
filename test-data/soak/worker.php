<?php
// Worker mode for the soak: the same scripts, run inside the handler by path.
$dir = __DIR__;
while (frankenphp_handle_request(static function () use ($dir): void {
    $script = basename(parse_url($_SERVER['REQUEST_URI'], PHP_URL_PATH));
    if ($script === 'worker.php' || !is_file("$dir/$script")) {
        http_response_code(404);
        return;
    }
    include "$dir/$script";
})) {
}
