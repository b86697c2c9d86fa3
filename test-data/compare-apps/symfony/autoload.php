<?php
// The catalogue app's class loading: Debian's packaged Symfony and Twig (each package
// ships an autoload.php that registers its class map and requires its dependencies'),
// and the app's own classes under App\ from src/.
require_once '/usr/share/php/Symfony/Bundle/FrameworkBundle/autoload.php';
require_once '/usr/share/php/Symfony/Bundle/TwigBundle/autoload.php';
require_once '/usr/share/php/Twig/autoload.php';

spl_autoload_register(static function (string $class): void {
    if (str_starts_with($class, 'App\\')) {
        $file = __DIR__ . '/src/' . str_replace('\\', '/', substr($class, 4)) . '.php';
        if (is_file($file)) {
            require $file;
        }
    }
});
