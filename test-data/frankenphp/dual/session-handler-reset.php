<?php
// A save handler set by one request must not break session_start() in the next request of
// the same worker, which sets none (TestSessionHandlerReset).
require_once __DIR__ . '/_serve.php';

final class ArraySessions implements SessionHandlerInterface
{
    private static array $data = [];
    public function open(string $path, string $name): bool { return true; }
    public function close(): bool { return true; }
    public function read(string $id): string|false { return self::$data[$id] ?? ''; }
    public function write(string $id, string $data): bool { self::$data[$id] = $data; return true; }
    public function destroy(string $id): bool { unset(self::$data[$id]); return true; }
    public function gc(int $max): int|false { return 0; }
}

serve(static function (): void {
    $out = [];
    $errors = [];
    set_error_handler(static function (int $no, string $str) use (&$errors): bool {
        $errors[] = $str;
        return true;
    });
    try {
        if (($_GET['action'] ?? '') === 'set_handler') {
            session_set_save_handler(new ArraySessions(), true);
            session_id('reset-one');
            $out['started'] = session_start();
            $_SESSION['value'] = 'x';
            session_write_close();
        } else {
            session_id('reset-two');
            $out['started'] = session_start();
            session_write_close();
        }
    } catch (Throwable $e) {
        $errors[] = get_class($e) . ': ' . $e->getMessage();
    }
    restore_error_handler();
    $out['save_handler'] = ini_get('session.save_handler');
    $out['errors'] = $errors;
    echo json_encode($out);
});
