<?php
// Router of the `php-cli -S` tests (server/tests/php_cli.rs): declines /static.txt and
// /page.php, which are then served as without a router; answers everything else itself.
$path = parse_url($_SERVER['REQUEST_URI'], PHP_URL_PATH);
if ($path === '/static.txt' || $path === '/page.php') {
    return false;
}
echo "router ", $path, " ", PHP_SAPI, " ", basename($_SERVER['SCRIPT_FILENAME']);
