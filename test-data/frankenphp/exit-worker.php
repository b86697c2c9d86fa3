<?php
// exit() inside the handler: the status and output written so far, including what
// destructors print and what sits in output buffers, reach the client (Symfony's dd()).
final class Loud { public function __destruct() { echo '[destructed]'; } }
$handler = static function (): void {
    switch ($_GET['do'] ?? '') {
        case 'dd':
            ob_start();
            header('HTTP/1.1 500 Internal Server Error');
            echo 'dumped';
            exit(1);
        case 'destructor':
            ob_start();
            ob_start();
            $loud = new Loud();
            http_response_code(418);
            echo 'before-exit';
            exit();
        case 'shutdown':
            // What a shutdown function prints, into a buffer still open at exit(): the
            // script's shutdown runs while this request is still the one installed.
            register_shutdown_function(static function (): void { echo '[shutdown]'; });
            ob_start();
            echo 'before-exit';
            exit(2);
        case 'clean-exit':
            exit();
        default:
            echo 'ok';
    }
};
while (frankenphp_handle_request($handler)) {
}
