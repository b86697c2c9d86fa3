<?php
// The smallest Laravel 8 application (Debian's php-laravel-framework): an HTTP kernel,
// an exception handler and one service provider with the routes.
require_once '/usr/share/php/Illuminate/autoload.php';
require_once __DIR__ . '/../app/App.php';

$app = new Illuminate\Foundation\Application(dirname(__DIR__));
$app->singleton(Illuminate\Contracts\Http\Kernel::class, OctaneFixture\HttpKernel::class);
$app->singleton(Illuminate\Contracts\Debug\ExceptionHandler::class, OctaneFixture\ExceptionHandler::class);
return $app;
