<?php
// Worker mode: boots once per thread (about as much work as a small framework's kernel,
// so a rolling restart has a boot to wait for), then serves requests in a loop. ?ms=N
// makes a request sleep, to be in flight when the release switches.
require __DIR__ . '/../src/release.php';
require __DIR__ . '/../src/page.php';
// A release may make its boot slow (src/boot-delay-ms, written by a test): its threads
// then take that long to be ready, and the old ones must serve meanwhile.
$delay = __DIR__ . '/../src/boot-delay-ms';
if (is_file($delay)) {
    usleep((int) file_get_contents($delay) * 1000);
}
$container = [];
for ($i = 0; $i < 50000; $i++) {
    $container["service.$i"] = md5((string) $i);
}
$handler = static function () use ($container): void {
    if (isset($_GET['ms'])) {
        usleep((int) $_GET['ms'] * 1000);
    }
    release_page();
};
while (frankenphp_handle_request($handler)) {
}
