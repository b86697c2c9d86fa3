<?php
// The session demo's one helper: PHP's native sessions (whatever session.save_handler
// says: files on one instance, redis across instances) with every failure of the store
// made visible. A store that cannot be read or written (Redis down, a lock not acquired in
// time) gives a 500 and one log line, never a page that looks logged out: a client must
// be able to tell "the store failed" from "my session is gone".

/** Runs $body inside the request's session, or answers 500 if the store fails. */
function with_session(callable $body): void
{
    // The store's warnings ("Failed to read session data", "Failed to write session
    // data", phpredis' connection errors) become exceptions so that none passes unseen.
    set_error_handler(static function (int $severity, string $message): bool {
        throw new ErrorException($message, 0, $severity);
    });
    try {
        if (!session_start()) {
            throw new RuntimeException('session_start() failed');
        }
        $reply = $body();
        // The write happens here, before anything is sent: a failed write is a 500, so a
        // 200 always means the session as shown was stored.
        session_write_close();
    } catch (Throwable $e) {
        restore_error_handler();
        if (session_status() === PHP_SESSION_ACTIVE) {
            session_abort();
        }
        error_log(sprintf('session demo: session store unavailable (%s): %s',
            ini_get('session.save_handler'), $e->getMessage()));
        http_response_code(500);
        header('Content-Type: text/plain');
        echo "session store unavailable\n";
        return;
    }
    restore_error_handler();
    [$status, $data] = $reply;
    http_response_code($status);
    header('Content-Type: application/json');
    header('Cache-Control: no-store');
    echo json_encode($data + ['instance' => gethostname()]), "\n";
}
