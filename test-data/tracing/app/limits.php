<?php
// Past the limits: attributes and events per span, value length, spans per request
// (set by the test through OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT, OTEL_SPAN_EVENT_COUNT_LIMIT,
// OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT and FERROPHP_TRACE_MAX_SPANS). Nothing throws.
use Ferrophp\Trace;

$s = Trace::span('limited');
for ($i = 0; $i < 10; $i++) {
    $s->setAttribute("a$i", $i);
}
for ($i = 0; $i < 10; $i++) {
    $s->addEvent("e$i", ['x' => 1, 'y' => 2, 'z' => 3]);
}
$s->setAttribute('a0', str_repeat('é', 100));
$s->setAttribute('a1', "bin\xffary");
$s->end();
$recorded = 0;
for ($i = 0; $i < 10; $i++) {
    $t = Trace::span("s$i");
    $recorded += $t->isRecording() ? 1 : 0;
    $t->end();
}
echo json_encode(['recorded' => $recorded]);
