<?php
// One client's session must never reach another's request (TestSessionNoLeakBetweenRequests,
// TestSessionNoLeakAfterExit): ?action=set|set_and_exit|check_empty|get.
require_once __DIR__ . '/_serve.php';

serve(static function (): void {
    switch ($_GET['action'] ?? '') {
        case 'set':
            session_start();
            $_SESSION['secret'] = $_GET['value'] ?? 'secret';
            session_write_close();
            echo 'SET secret=', $_SESSION['secret'];
            break;
        case 'set_and_exit':
            session_start();
            $_SESSION['secret'] = $_GET['value'] ?? 'secret';
            echo 'BEFORE_EXIT';
            flush();
            exit(1);
        case 'check_empty':
            echo 'CHECK empty=', empty($_SESSION) ? 'true' : 'false', ' id=', session_id(), ' ', json_encode($_SESSION ?? null);
            break;
        case 'get':
            session_start();
            echo 'READ secret=', $_SESSION['secret'] ?? 'NOT_FOUND';
            session_write_close();
            break;
    }
});
