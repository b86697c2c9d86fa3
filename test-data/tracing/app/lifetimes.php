<?php
// When spans end without end(): when their object is freed, or at the end of the request.
// Nesting follows the spans still open.
use Ferrophp\Trace;

function scoped(): string
{
    $span = Trace::span('scoped');
    return $span->spanId();
}
$ids = ['scoped' => scoped()];
Trace::span('discarded');
$GLOBALS['kept'] = Trace::span('kept-open');
$ids['kept-open'] = $GLOBALS['kept']->spanId();
$child = Trace::span('child-of-kept');
$ids['child-of-kept'] = $child->spanId();
$child->end();
$child->end();
echo json_encode($ids);
