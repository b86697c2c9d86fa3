<?php
// A small Symfony 5.4 application (Debian's php-symfony-* packages) run in worker mode the
// way runtime/frankenphp-symfony runs one: the HttpKernel is built once per PHP thread,
// then every request goes through Request::createFromGlobals() -> handle -> send ->
// terminate inside frankenphp_handle_request().

require_once '/usr/share/php/Symfony/Component/HttpKernel/autoload.php';
require_once '/usr/share/php/Symfony/Component/Routing/autoload.php';

use Symfony\Component\EventDispatcher\EventDispatcher;
use Symfony\Component\HttpFoundation\JsonResponse;
use Symfony\Component\HttpFoundation\Request;
use Symfony\Component\HttpFoundation\RequestStack;
use Symfony\Component\HttpKernel\Controller\ArgumentResolver;
use Symfony\Component\HttpKernel\Controller\ControllerResolver;
use Symfony\Component\HttpKernel\EventListener\RouterListener;
use Symfony\Component\HttpKernel\HttpKernel;
use Symfony\Component\Routing\Matcher\UrlMatcher;
use Symfony\Component\Routing\RequestContext;
use Symfony\Component\Routing\Route;
use Symfony\Component\Routing\RouteCollection;

final class GreetingController
{
    private static int $handled = 0;

    public function __construct(private string $bootId)
    {
    }

    public function __invoke(Request $request, string $name): JsonResponse
    {
        self::$handled++;
        return new JsonResponse([
            'greeting' => "Hello, $name!",
            'boot' => $this->bootId,
            'handled' => self::$handled,
            'method' => $request->getMethod(),
            'query' => $request->query->all(),
            'worker' => $request->server->get('FRANKENPHP_WORKER'),
        ]);
    }
}

$bootId = bin2hex(random_bytes(6));
$routes = new RouteCollection();
$routes->add('greet', new Route('/hello/{name}', [
    '_controller' => new GreetingController($bootId),
    'name' => 'World',
]));
$requestStack = new RequestStack();
$dispatcher = new EventDispatcher();
$dispatcher->addSubscriber(new RouterListener(new UrlMatcher($routes, new RequestContext()), $requestStack));
$kernel = new HttpKernel($dispatcher, new ControllerResolver(), $requestStack, new ArgumentResolver());

// What runtime/frankenphp-symfony does: the boot environment (FRANKENPHP_WORKER, the
// OS and configured env, minus the boot's HTTP_* keys) is merged into every request.
$server = array_filter($_SERVER, static fn (string $key) => !str_starts_with($key, 'HTTP_'), ARRAY_FILTER_USE_KEY);
$server['APP_RUNTIME_MODE'] = 'web=1&worker=1';
$handler = static function () use ($kernel, $server): void {
    $_SERVER += $server;
    $request = Request::createFromGlobals();
    $response = $kernel->handle($request);
    $response->send();
    $kernel->terminate($request, $response);
};
while (frankenphp_handle_request($handler)) {
    gc_collect_cycles();
}
