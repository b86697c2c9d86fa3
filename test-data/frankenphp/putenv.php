<?php
// Classic mode: putenv() is this request's only (PHP resets it at request end) and never
// visible to a request running at the same time on another thread.
header('Content-Type: application/json');
if (isset($_GET['set'])) {
    $ok = putenv('SANDBOXED=' . $_GET['set']);
    usleep((int)($_GET['ms'] ?? 0) * 1000);
}
if (isset($_GET['unset'])) {
    putenv($_GET['unset']);
}
echo json_encode([
    'sandboxed' => getenv('SANDBOXED'),
    'in_array' => getenv()['SANDBOXED'] ?? null,
    'path' => getenv('PATH') !== false,
    'path_in_array' => isset(getenv()['PATH']),
    'local_only' => getenv('SANDBOXED', true),
]);
