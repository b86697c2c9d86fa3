<?php
// A fixture of Laravel Octane's FrankenPHP worker contract (laravel/octane
// bin/frankenphp-worker.php and bin/bootstrap.php; Octane itself is not packaged in
// Debian): refuse to run outside worker mode, ignore user aborts, find the app through
// APP_BASE_PATH, boot it once, then per request build an Illuminate request from the
// superglobals, handle it with the booted HTTP kernel, send the response with Symfony's
// Response::send(), terminate, and stop after MAX_REQUESTS so the server boots it again.
// (Octane also hands each request a clone of the application and resets services through
// its listeners: framework state, not part of the server contract checked here.)
use Illuminate\Contracts\Http\Kernel;
use Illuminate\Http\Request;
use Illuminate\Support\Facades\Facade;
use Symfony\Component\HttpFoundation\Response;

if ((! ($_SERVER['FRANKENPHP_WORKER'] ?? false)) || ! function_exists('frankenphp_handle_request')) {
    echo 'FrankenPHP must be in worker mode to use this script.';
    exit(1);
}

ignore_user_abort(true);
ini_set('display_errors', 'stderr');
$_ENV['APP_RUNNING_IN_CONSOLE'] = false;

$basePath = $_SERVER['APP_BASE_PATH'] ?? $_ENV['APP_BASE_PATH'] ?? null;
if (! is_string($basePath)) {
    echo 'Cannot find application base path.';
    exit(11);
}

$app = require $basePath . '/bootstrap/app.php';
$app->make(Kernel::class)->bootstrap();

$requestCount = 0;
$maxRequests = $_ENV['MAX_REQUESTS'] ?? $_SERVER['MAX_REQUESTS'] ?? 1000;

$kernel = $app->make(Kernel::class);
$handleRequest = static function () use ($app, $kernel): void {
    try {
        $request = Request::createFromGlobals();
        $response = $kernel->handle($request);
        $response->send();
        $kernel->terminate($request, $response);
    } catch (Throwable $e) {
        (new Response('Internal Server Error', 500, ['Content-Type' => 'text/plain']))->send();
    } finally {
        // What Octane's listeners reset between requests, reduced to this app's needs.
        $app->forgetInstance('request');
        Facade::clearResolvedInstance('request');
    }
};

try {
    while ($requestCount < $maxRequests && frankenphp_handle_request($handleRequest)) {
        $requestCount++;
    }
} finally {
    gc_collect_cycles();
}
