<?php
// Reports the environment entries of $_SERVER, then changes them: the next request (on
// this thread or another) must see the environment as configured again, never a change
// an earlier request made (every request's $_SERVER is its own copy).
$handler = static function (): void {
    header('Content-Type: application/json');
    echo json_encode([
        'template_var' => $_SERVER['FERRO_TEMPLATE_VAR'] ?? null,
        'configured' => $_SERVER['CONFIGURED'] ?? null,
        'added' => $_SERVER['ADDED_BY_SCRIPT'] ?? null,
        'has_path' => isset($_SERVER['PATH']),
        'uri' => $_SERVER['REQUEST_URI'],
    ]);
    $_SERVER['FERRO_TEMPLATE_VAR'] = 'changed';
    $_SERVER['CONFIGURED'] .= '-appended';
    $_SERVER['ADDED_BY_SCRIPT'] = 'x';
    unset($_SERVER['PATH']);
};
while (frankenphp_handle_request($handler)) {
}
