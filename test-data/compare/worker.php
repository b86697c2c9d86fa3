<?php
// Worker-mode twin of the classic workload scripts: /worker.php/<workload>.
require __DIR__ . '/app/bootstrap.php';
require __DIR__ . '/app/records.php';
$handler = static function (): void {
    switch ($_SERVER['PATH_INFO'] ?? '') {
        case '/hello':
            echo 'Hello, World!';
            break;
        case '/echo':
            echo file_get_contents('php://input');
            break;
        case '/server':
            print_r($_SERVER);
            break;
        case '/json':
            header('Content-Type: application/json');
            echo json_encode(records());
            break;
        case '/page':
            echo render_page();
            break;
        case '/sleep':
            usleep(200000);
            echo 'Slept';
            break;
        case '/session':
            session_start();
            $_SESSION['n'] = ($_SESSION['n'] ?? 0) + 1;
            echo 'visit ', $_SESSION['n'];
            session_write_close();
            break;
        default:
            http_response_code(404);
    }
};
while (ferrophp_handle_request($handler)) {
}
