<?php
// ?do=throw|error|exit|fatal|echo-exit|ok: how a worker survives (or not) what a handler does.
$bootId = bin2hex(random_bytes(4));
$handler = static function () use ($bootId): void {
    static $served = 0;
    $served++;
    switch ($_GET['do'] ?? 'ok') {
        case 'throw':
            throw new RuntimeException('handler failed');
        case 'exit':
            exit(3);
        case 'fatal':
            trigger_error('fatal in worker', E_USER_ERROR);
            break;
        case 'error':
            undefined_function_in_worker();
            break;
        case 'echo-exit':
            echo "partial";
            exit(0);
    }
    echo "$bootId:$served";
};
while (frankenphp_handle_request($handler)) {
}
