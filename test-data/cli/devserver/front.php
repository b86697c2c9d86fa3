<?php
// A front controller as many apps ship it for `php -S`: existing files go through as
// static files, only under the "cli-server" SAPI; everything else is the app's.
if (PHP_SAPI === 'cli-server' && is_file(__DIR__ . parse_url($_SERVER['REQUEST_URI'], PHP_URL_PATH))) {
    return false;
}
echo "app ", $_SERVER['REQUEST_URI'];
