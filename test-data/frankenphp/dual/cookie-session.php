<?php
// A counter in the session, carried by the session cookie (TestSession).
require_once __DIR__ . '/_serve.php';

serve(static function (): void {
    session_start();
    echo 'Count: ', $_SESSION['count'] ?? 0, "\n";
    $_SESSION['count'] = ($_SESSION['count'] ?? 0) + 1;
});
