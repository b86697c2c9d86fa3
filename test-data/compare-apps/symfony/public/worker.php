<?php
// Worker mode, the loop runtime/frankenphp-symfony runs: the kernel is built and booted
// once per PHP thread, then each request goes Request::createFromGlobals() -> handle ->
// send inside frankenphp_handle_request(), with terminate() and a GC pass after it.
// Between requests Symfony's own kernel.reset services are reset by Kernel::handle()
// (services_resetter), as under FrankenPHP.

use App\Kernel;
use Symfony\Component\HttpFoundation\Request;

require \dirname(__DIR__) . '/autoload.php';

$kernel = new Kernel('prod', false);
$kernel->boot();

// The boot environment (minus its HTTP_* keys) is merged into every request's $_SERVER,
// as runtime/frankenphp-symfony does.
$server = array_filter($_SERVER, static fn (string $key): bool => !str_starts_with($key, 'HTTP_'), ARRAY_FILTER_USE_KEY);
$server['APP_RUNTIME_MODE'] = 'web=1&worker=1';

$request = null;
$response = null;
$handler = static function () use ($kernel, $server, &$request, &$response): void {
    $_SERVER += $server;
    $request = Request::createFromGlobals();
    $response = $kernel->handle($request);
    $response->send();
};
do {
    $request = $response = null;
    $more = frankenphp_handle_request($handler);
    if ($request !== null && $response !== null) {
        $kernel->terminate($request, $response);
    }
    gc_collect_cycles();
} while ($more);
