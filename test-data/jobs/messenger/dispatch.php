<?php
// A web request dispatches a message through Messenger's bus (sent, not handled, here).
require __DIR__ . '/bootstrap.php';
App\bus()->dispatch(new App\SendReport((int)($_GET['n'] ?? 0)));
echo 'sent';
