<?php
// Worker mode for this directory: one worker script serves every path (`match = "/*"`)
// by running the page the path names, required afresh per request as classic mode runs
// it, so each page checks the same behaviour in both modes.
$handler = static function (): void {
    $page = basename((string) parse_url($_SERVER['REQUEST_URI'], PHP_URL_PATH));
    require __DIR__ . '/' . $page;
};
while (frankenphp_handle_request($handler)) {
}
