<?php
// Ends itself after $_SERVER['EVERY'] requests, so the server boots it again
// (TestWorkerRestart): each request still gets its answer.
$every = (int) ($_SERVER['EVERY'] ?? 10);
$loops = 0;
do {
    $more = frankenphp_handle_request(static function (): void {
        echo 'Counter (', $_GET['i'] ?? 'i not set', ')';
    });
} while ($more && ++$loops < $every);
