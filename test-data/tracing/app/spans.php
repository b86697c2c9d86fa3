<?php
// Nested spans with every kind of attribute, an event, a status; reports the ids PHP saw
// so the test can match them with what the collector received.
use Ferrophp\Span;
use Ferrophp\Trace;

$outer = Trace::span('outer', [
    'app.user' => 'alice',
    'app.n' => 3,
    'app.ratio' => 0.5,
    'app.flag' => true,
    'app.tags' => ['a', 'b'],
    'app.none' => null,
]);
$inner = Trace::span('db.query', ['db.system' => 'sqlite'], Span::KIND_CLIENT);
$inside = Trace::traceparent();
$inner->addEvent('rows', ['count' => 2]);
$inner->setAttribute('db.rows', 2)->setAttribute('db.rows', 3);
$inner->end();
$outer->setStatus(Span::STATUS_ERROR, 'it failed');
$outer->end();
$server = Trace::server();
$server->setAttribute('app.route', '/spans');
header('Content-Type: application/json');
echo json_encode([
    'traceparent' => $inside,
    'after' => Trace::traceparent(),
    'trace_id' => Trace::traceId(),
    'sampled' => Trace::isSampled(),
    'incoming' => $_SERVER['HTTP_TRACEPARENT'] ?? null,
    'tracestate' => Trace::tracestate(),
    'inner' => $inner->spanId(),
    'outer' => $outer->spanId(),
    'server' => $server->spanId(),
    'recording' => [$inner->isRecording(), $server->isRecording()],
]);
