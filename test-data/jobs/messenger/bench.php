<?php
// End to end through Symfony Messenger on one PHP thread: ?n= messages dispatched through
// the bus, then consumed by Messenger's Worker until all are handled, over (a) the Redis
// transport (Debian's php-symfony-redis-messenger, phpredis) and (b) the Ferrophp\Jobs
// transport of bootstrap.php. Prints JSON: messages per second and process CPU per
// message (getrusage: every thread of this process, not redis-server's).
require __DIR__ . '/bootstrap.php';

use Symfony\Component\EventDispatcher\EventDispatcher;
use Symfony\Component\Messenger\Bridge\Redis\Transport\Connection;
use Symfony\Component\Messenger\Bridge\Redis\Transport\RedisTransport;
use Symfony\Component\Messenger\Envelope;
use Symfony\Component\Messenger\EventListener\StopWorkerOnMessageLimitListener;
use Symfony\Component\Messenger\Handler\HandlersLocator;
use Symfony\Component\Messenger\MessageBus;
use Symfony\Component\Messenger\Middleware\HandleMessageMiddleware;
use Symfony\Component\Messenger\Middleware\SendMessageMiddleware;
use Symfony\Component\Messenger\Transport\Sender\SendersLocatorInterface;
use Symfony\Component\Messenger\Worker;

$n = (int)($_GET['n'] ?? 2000);
function cpu_us(): float {
    $r = getrusage();
    return $r['ru_utime.tv_sec'] * 1e6 + $r['ru_utime.tv_usec'] + $r['ru_stime.tv_sec'] * 1e6 + $r['ru_stime.tv_usec'];
}
function run(int $n, $transport): array {
    $handled = 0;
    $senders = new class($transport) implements SendersLocatorInterface {
        public function __construct(private $t) {}
        public function getSenders(Envelope $envelope): iterable { yield 't' => $this->t; }
    };
    $handler = function (App\SendReport $m) use (&$handled) { $handled++; };
    $bus = new MessageBus([
        new SendMessageMiddleware($senders),
        new HandleMessageMiddleware(new HandlersLocator([App\SendReport::class => [$handler]])),
    ]);
    $events = new EventDispatcher();
    $events->addSubscriber(new StopWorkerOnMessageLimitListener($n));
    $c = cpu_us();
    $t = hrtime(true);
    for ($i = 0; $i < $n; $i++) {
        $bus->dispatch(new App\SendReport($i));
    }
    (new Worker(['t' => $transport], $bus, $events))->run(['sleep' => 0]);
    $s = (hrtime(true) - $t) / 1e9;
    return ['handled' => $handled, 'per_second' => $n / $s, 'cpu_us' => (cpu_us() - $c) / $n];
}
$redis = new RedisTransport(Connection::fromDsn('redis://127.0.0.1:' . (int)$_GET['port'] . '/bench'));
$out = [
    'messenger_redis' => run($n, $redis),
    'messenger_ferrophp' => run($n, new App\FerrophpJobsTransport('mbench')),
];
echo json_encode($out);
