<?php
// Boots, serves one request, then exits with status 1 inside the second (a crash after
// boot): the server logs it above debug level and boots the script again.
$requests = 0;
$handler = static function () use (&$requests): void {
    if (++$requests >= 2) {
        exit(1);
    }
    echo "ok $requests";
};
while (frankenphp_handle_request($handler)) {
}
