<?php
// Symfony's Mercure component (Debian's php-symfony-mercure) publishing to the server's
// own hub over HTTP with a JWT: ?topic=T&data=D&jwt=TOKEN. Prints the update's id, or
// the exception's class and message with status 500.
require_once 'Symfony/Component/Mercure/autoload.php';
require_once 'Symfony/Component/HttpClient/autoload.php';

use Symfony\Component\Mercure\Hub;
use Symfony\Component\Mercure\Jwt\StaticTokenProvider;
use Symfony\Component\Mercure\Update;

header('Content-Type: text/plain');
try {
    $url = 'http://' . $_SERVER['HTTP_HOST'] . '/.well-known/mercure';
    $hub = new Hub($url, new StaticTokenProvider($_GET['jwt'] ?? ''));
    echo $hub->publish(new Update($_GET['topic'] ?? 'symfony', $_GET['data'] ?? '', isset($_GET['private'])));
} catch (\Throwable $e) {
    http_response_code(500);
    for (; $e; $e = $e->getPrevious()) {
        echo get_class($e), ': ', $e->getMessage(), "\n";
    }
}
