<?php
// A Symfony 5.4 micro kernel: FrameworkBundle and TwigBundle, the container built once
// into var/cache/prod (bin/warmup.php) and loaded from there by every request.

namespace App;

use App\Controller\CatalogueController;
use Symfony\Bundle\FrameworkBundle\FrameworkBundle;
use Symfony\Bundle\FrameworkBundle\Kernel\MicroKernelTrait;
use Symfony\Bundle\TwigBundle\TwigBundle;
use Symfony\Component\DependencyInjection\Loader\Configurator\ContainerConfigurator;
use Symfony\Component\HttpKernel\Kernel as BaseKernel;
use Symfony\Component\Routing\Loader\Configurator\RoutingConfigurator;

final class Kernel extends BaseKernel
{
    use MicroKernelTrait;

    public function registerBundles(): iterable
    {
        yield new FrameworkBundle();
        yield new TwigBundle();
    }

    public function getProjectDir(): string
    {
        return \dirname(__DIR__);
    }

    protected function configureContainer(ContainerConfigurator $container): void
    {
        $container->extension('framework', [
            'secret' => 'ferrophp-compare-not-secret',
            'http_method_override' => false,
            'router' => ['utf8' => true],
            'php_errors' => ['log' => true],
        ]);
        $container->extension('twig', [
            'default_path' => '%kernel.project_dir%/templates',
            'strict_variables' => true,
        ]);
        $services = $container->services()->defaults()->autowire()->autoconfigure();
        $services->set(Catalogue::class);
        $services->set(CatalogueController::class)->public();
    }

    protected function configureRoutes(RoutingConfigurator $routes): void
    {
        $routes->add('catalogue', '/catalogue/{page}')
            ->controller([CatalogueController::class, 'list'])
            ->requirements(['page' => '\d+'])
            ->defaults(['page' => 1]);
        $routes->add('product', '/product/{sku}')
            ->controller([CatalogueController::class, 'product']);
    }
}
