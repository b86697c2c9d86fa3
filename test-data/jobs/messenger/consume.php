<?php
// Messenger's own Worker (what `bin/console messenger:consume ferrophp` runs) as a
// ferrophp background worker: it stops when the server tells it to.
require __DIR__ . '/bootstrap.php';

use Symfony\Component\EventDispatcher\EventDispatcher;
use Symfony\Component\Messenger\Event\WorkerRunningEvent;
use Symfony\Component\Messenger\Worker;

$events = new EventDispatcher();
$events->addListener(WorkerRunningEvent::class, function (WorkerRunningEvent $event) {
    if (Ferrophp\Background::shouldStop()) {
        $event->getWorker()->stop();
    }
});
$worker = new Worker(['ferrophp' => App\transport()], App\bus(), $events);
$worker->run(['sleep' => 0]);
