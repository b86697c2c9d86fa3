<?php
// POST user=NAME: logs in (a new session id, as a login should, against fixation) and
// starts the session's request counter at 0.
require __DIR__ . '/session.php';

if ($_SERVER['REQUEST_METHOD'] !== 'POST' || !is_string($_POST['user'] ?? null) || $_POST['user'] === '') {
    http_response_code(400);
    echo "POST user=NAME\n";
    return;
}
with_session(static function (): array {
    session_regenerate_id(true);
    $_SESSION = ['user' => $_POST['user'], 'count' => 0];
    return [200, ['user' => $_SESSION['user'], 'count' => 0]];
});
