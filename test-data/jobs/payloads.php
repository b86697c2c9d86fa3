<?php
// Payloads that cannot be stored: ?kind=resource|nested|closure|big|ok|queue|priority.
$kind = $_GET['kind'] ?? 'ok';
$payload = match ($kind) {
    'resource' => fopen('php://memory', 'r'),
    'nested' => ['a' => ['b' => [1, 2, fopen('php://memory', 'r')]]],
    'closure' => ['cb' => fn() => 1],
    'big' => str_repeat('x', 2 * 1024 * 1024),
    default => ['fine' => true],
};
$queue = $kind === 'queue' ? 'bad queue name!' : 'payloads';
$priority = $kind === 'priority' ? 5000 : 0;
try {
    $id = Ferrophp\Jobs::dispatch($queue, $payload, 0, $priority);
    echo 'OK ', $id;
} catch (Throwable $e) {
    echo get_class($e), ': ', $e->getMessage();
}
