<?php
// A worker that crashes: every request ends the script with exit(1); while the file
// $_SERVER['CRASH_AT_BOOT'] names exists, its boot fails too (an uncaught exception).
$flag = $_SERVER['CRASH_AT_BOOT'] ?? '';
if ($flag !== '' && file_exists($flag)) {
    throw new RuntimeException('crash at boot');
}
while (frankenphp_handle_request(static function (): void {
    echo 'crashing';
    exit(1);
})) {
}
