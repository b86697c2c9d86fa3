<?php
// $_GET, $_POST, $_COOKIE and $_REQUEST as JSON (TestPostSuperGlobals, TestCookies,
// TestMalformedCookie, TestRequestSuperGlobal).
require_once __DIR__ . '/_serve.php';

serve(static function (): void {
    header('Content-Type: application/json');
    echo json_encode(['get' => $_GET, 'post' => $_POST, 'cookie' => $_COOKIE, 'request' => $_REQUEST]);
});
