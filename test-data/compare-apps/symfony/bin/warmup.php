<?php
// Run once by the comparison harness before any server starts: builds the prod container
// into var/cache/prod and compiles the templates, as `cache:warmup` does on deploy, so
// every system serves from the same warm cache.

require \dirname(__DIR__) . '/autoload.php';

$kernel = new App\Kernel('prod', false);
$kernel->boot();
$twig = $kernel->getContainer()->get('twig');
foreach (['base.html.twig', '_price.html.twig', 'catalogue.html.twig'] as $template) {
    $twig->load($template);
}
echo "warmed ", $kernel->getCacheDir(), "\n";
