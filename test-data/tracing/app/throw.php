<?php
// An uncaught exception: the server span is marked as failed with its class and
// message. A span is still open when it happens; an exception thrown and caught before
// must not be the one reported. (Also included by worker.php's handler.)
use Ferrophp\Trace;

try {
    throw new LogicException('caught, not reported');
} catch (LogicException $e) {
}
$open = Trace::span('work');
$fail = static function (): void {
    throw new DomainException('boom: ' . ($_GET['why'] ?? 'no reason'));
};
$fail();
