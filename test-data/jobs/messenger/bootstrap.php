<?php
// A Symfony Messenger app from Debian's php-symfony-messenger: a message bus whose
// transport is ferrophp's job queue (Ferrophp\Jobs), so web requests dispatch and a
// background worker (consume.php) runs Messenger's own Worker, as `messenger:consume`
// would under supervisord.
namespace App;

require_once '/usr/share/php/Symfony/Component/Messenger/autoload.php';
require_once '/usr/share/php/Symfony/Component/EventDispatcher/autoload.php';

use Symfony\Component\Messenger\Envelope;
use Symfony\Component\Messenger\Handler\HandlersLocator;
use Symfony\Component\Messenger\MessageBus;
use Symfony\Component\Messenger\Middleware\HandleMessageMiddleware;
use Symfony\Component\Messenger\Middleware\SendMessageMiddleware;
use Symfony\Component\Messenger\Stamp\TransportMessageIdStamp;
use Symfony\Component\Messenger\Transport\Sender\SendersLocatorInterface;
use Symfony\Component\Messenger\Transport\Serialization\PhpSerializer;
use Symfony\Component\Messenger\Transport\TransportInterface;

final class SendReport
{
    public function __construct(public readonly int $n) {}
}

final class SendReportHandler
{
    public function __invoke(SendReport $message): void
    {
        file_put_contents(
            getenv('JOBS_OUT'),
            sprintf("messenger %d %d\n", $message->n, getmypid()),
            FILE_APPEND | LOCK_EX,
        );
    }
}

/** Messenger's transport over Ferrophp\Jobs: send() dispatches, get() takes. */
final class FerrophpJobsTransport implements TransportInterface
{
    private PhpSerializer $serializer;
    /** @var array<string, \Ferrophp\Job> the jobs taken and not yet acked or rejected */
    private array $taken = [];

    public function __construct(private string $queue)
    {
        $this->serializer = new PhpSerializer();
    }

    public function send(Envelope $envelope): Envelope
    {
        $id = \Ferrophp\Jobs::dispatch($this->queue, $this->serializer->encode($envelope));
        return $envelope->with(new TransportMessageIdStamp($id));
    }

    public function get(): iterable
    {
        $job = \Ferrophp\Jobs::take($this->queue, 1.0);
        if ($job === null) {
            return [];
        }
        $this->taken[$job->id] = $job;
        return [$this->serializer->decode($job->payload)->with(new TransportMessageIdStamp($job->id))];
    }

    public function ack(Envelope $envelope): void
    {
        $this->finish($envelope)?->ack();
    }

    public function reject(Envelope $envelope): void
    {
        $this->finish($envelope)?->fail('rejected by Messenger');
    }

    private function finish(Envelope $envelope): ?\Ferrophp\Job
    {
        $id = $envelope->last(TransportMessageIdStamp::class)?->getId();
        $job = $this->taken[$id] ?? null;
        unset($this->taken[$id]);
        return $job;
    }
}

function transport(): FerrophpJobsTransport
{
    static $transport;
    return $transport ??= new FerrophpJobsTransport('messenger');
}

function bus(): MessageBus
{
    $senders = new class implements SendersLocatorInterface {
        public function getSenders(Envelope $envelope): iterable
        {
            yield 'ferrophp' => transport();
        }
    };
    return new MessageBus([
        new SendMessageMiddleware($senders),
        new HandleMessageMiddleware(new HandlersLocator([SendReport::class => [new SendReportHandler()]])),
    ]);
}
