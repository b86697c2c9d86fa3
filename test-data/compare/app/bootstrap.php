<?php
// A framework-shaped page: PSR-4-style autoloading of 50 service classes, a data set,
// and a PHP template rendered with escaping. Shared by classic and worker entry points.
spl_autoload_register(static function (string $class): void {
    $prefix = 'App\\';
    if (strncmp($class, $prefix, strlen($prefix)) === 0) {
        require __DIR__ . '/src/' . substr($class, strlen($prefix)) . '.php';
    }
});

function render_page(): string
{
    $rows = [];
    for ($i = 1; $i <= 50; $i++) {
        $class = sprintf('App\\Service%02d', $i);
        $rows[] = (new $class())->describe(['id' => $i, 'name' => "item <$i> & co"]);
    }
    ob_start();
    require __DIR__ . '/template.php';
    return ob_get_clean();
}
