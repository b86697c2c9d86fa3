<?php
// frankenphp_handle_request() from a script that is not running as a worker.
frankenphp_handle_request(static function (): void {
    echo 'never';
});
echo 'after';
