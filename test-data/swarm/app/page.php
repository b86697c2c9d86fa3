<?php
// A page that needs a login: 401 without one; otherwise the session's counter goes up by
// one and comes back with the user and the instance that served the page. A client that
// sees 401 after logging in, or a counter lower than or equal to one it saw before, lost
// its session (or an update of it).
require __DIR__ . '/session.php';

with_session(static function (): array {
    if (!isset($_SESSION['user'])) {
        return [401, ['user' => null]];
    }
    $_SESSION['count']++;
    return [200, ['user' => $_SESSION['user'], 'count' => $_SESSION['count']]];
});
