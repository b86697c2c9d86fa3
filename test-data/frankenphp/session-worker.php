<?php
// A user session save handler registered once, before the request loop (as Symfony and
// Laravel apps do at boot), must serve every request. Sessions are kept in files under
// $_SERVER['SESSION_DIR'] (set through the worker's env) so the test can read them.
final class FileSessions implements SessionHandlerInterface
{
    public static array $calls = [];
    public function __construct(private string $dir) {}
    public function open(string $path, string $name): bool { self::$calls[] = 'open'; return true; }
    public function close(): bool { self::$calls[] = 'close'; return true; }
    public function read(string $id): string|false { self::$calls[] = 'read'; return (string)@file_get_contents("$this->dir/$id"); }
    public function write(string $id, string $data): bool { self::$calls[] = 'write'; return file_put_contents("$this->dir/$id", $data) !== false; }
    public function destroy(string $id): bool { @unlink("$this->dir/$id"); return true; }
    public function gc(int $max): int|false { return 0; }
}
session_set_save_handler(new FileSessions($_SERVER['SESSION_DIR']), true);
$handler = static function (): void {
    FileSessions::$calls = [];
    $started = session_start();
    $_SESSION['n'] = ($_SESSION['n'] ?? 0) + 1;
    $n = $_SESSION['n'];
    session_write_close();
    header('Content-Type: application/json');
    echo json_encode(['started' => $started, 'n' => $n, 'module' => session_module_name(), 'calls' => FileSessions::$calls, 'id' => session_id()]);
};
while (frankenphp_handle_request($handler)) {
}
