<?php
// The catalogue app's class loading from its own vendor/ (a copy of Debian's Symfony, Twig
// and PSR packages, made by server/tests/package.rs), as a packed app carries it; the
// app's own classes under App\ from src/.
require_once __DIR__ . '/vendor/Symfony/Bundle/FrameworkBundle/autoload.php';
require_once __DIR__ . '/vendor/Symfony/Bundle/TwigBundle/autoload.php';
require_once __DIR__ . '/vendor/Twig/autoload.php';

spl_autoload_register(static function (string $class): void {
    if (str_starts_with($class, 'App\\')) {
        $file = __DIR__ . '/src/' . str_replace('\\', '/', substr($class, 4)) . '.php';
        if (is_file($file)) {
            require $file;
        }
    }
});
