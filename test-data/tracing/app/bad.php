<?php
// Bad input from PHP: each call below must throw Ferrophp\TraceException (or PHP's own
// TypeError for a declared parameter type) and leave the request and the span unharmed.
// Prints what each call threw, as JSON.
use Ferrophp\Span;
use Ferrophp\Trace;
use Ferrophp\TraceException;

$thrown = [];
$try = static function (string $what, callable $call) use (&$thrown): void {
    try {
        $call();
        $thrown[$what] = null;
    } catch (TraceException $e) {
        $thrown[$what] = $e->getMessage();
    }
};
$s = Trace::span('target');
$try('empty name', fn () => Trace::span(''));
$try('integer keys', fn () => Trace::span('x', ['a', 'b']));
$try('object value', fn () => $s->setAttribute('k', new stdClass()));
$try('resource value', fn () => $s->setAttribute('k', fopen('php://memory', 'r')));
$try('nested list', fn () => $s->setAttribute('k', [[1]]));
$try('mixed list', fn () => $s->setAttribute('k', [1, 'a']));
$try('map value', fn () => $s->setAttribute('k', ['a' => 1]));
$try('empty key', fn () => $s->setAttribute('', 1));
$try('partly bad array', fn () => $s->setAttributes(['good' => 1, 'bad' => new stdClass()]));
$try('bad kind', fn () => Trace::span('x', [], 9));
$try('bad status', fn () => $s->setStatus(7));
$try('empty event name', fn () => $s->addEvent(''));
$try('bad event attribute', fn () => $s->addEvent('e', ['k' => [1, [2]]]));
$try('empty new name', fn () => $s->updateName(''));
try {
    Trace::span([]);
    $thrown['type error'] = null;
} catch (TypeError $e) {
    $thrown['type error'] = get_class($e);
}
try {
    new Span();
    $thrown['constructor'] = null;
} catch (Error $e) {
    $thrown['constructor'] = get_class($e);
}
$s->setAttribute('after', 'fine');
$s->end();
header('Content-Type: application/json');
echo json_encode(['thrown' => $thrown, 'sampled' => Trace::isSampled()]);
