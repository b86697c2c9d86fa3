<?php
// The fixture app: routes that show what a worker keeps across requests (the booted
// application, a per-boot id and counter) and what each request brings (query, JSON body,
// headers), plus a cookie and an exception.
namespace OctaneFixture;

use Illuminate\Foundation\Exceptions\Handler;
use Illuminate\Foundation\Http\Kernel;
use Illuminate\Http\JsonResponse;
use Illuminate\Http\Request;
use Illuminate\Support\Facades\Route;
use Illuminate\Support\ServiceProvider;
use Symfony\Component\HttpFoundation\Cookie;

final class HttpKernel extends Kernel
{
    protected $middleware = [];
}

final class ExceptionHandler extends Handler
{
}

final class Boot
{
    public static string $id = '';
    public static int $served = 0;
}

final class RouteProvider extends ServiceProvider
{
    public function boot(): void
    {
        Boot::$id = bin2hex(random_bytes(4));
        Route::get('/hello/{name}', static function (Request $request, string $name) {
            Boot::$served++;
            return new JsonResponse([
                'hello' => $name,
                'query' => $request->query(),
                'boot' => Boot::$id,
                'served' => Boot::$served,
                'worker' => $_SERVER['FRANKENPHP_WORKER'] ?? null,
                'uri' => $request->getRequestUri(),
            ]);
        });
        Route::post('/echo', static function (Request $request) {
            $response = new JsonResponse(['json' => $request->json()->all(), 'header' => $request->header('X-Fixture')], 201);
            $response->headers->setCookie(Cookie::create('octane', 'yes'));
            return $response;
        });
        Route::get('/boom', static function () {
            throw new \RuntimeException('boom');
        });
    }
}
