<?php
// die() right after the first request: the script ends after every request and the server
// boots it again each time (TestWorkerDie).
do {
    $ok = frankenphp_handle_request(static function (): void {
        echo 'Hello, world';
    });
    die();
} while ($ok);
