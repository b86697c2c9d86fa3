<?php
// The classic front controller, as php-fpm runs it: every request builds a kernel, which
// loads the compiled container from var/cache/prod, handles the request and terminates.

use App\Kernel;
use Symfony\Component\HttpFoundation\Request;

require \dirname(__DIR__) . '/autoload.php';

$kernel = new Kernel('prod', false);
$request = Request::createFromGlobals();
$response = $kernel->handle($request);
$response->send();
$kernel->terminate($request, $response);
