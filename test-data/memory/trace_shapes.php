<?php
// Random use of Ferrophp\Trace for the span objects' hand-made layout (php-sys/trace.c:
// a ref before the zend_object, freed through free_obj) and the runtime's span slots and
// protobuf encoding (worker/src/trace/, trace/src/span.rs), run under valgrind by
// server/tests/memory_boundaries.rs.
//
// trace_shapes(seed, limits): span counts around the per-request cap, attribute and
// event counts around their limits, names and values from empty to 1 MiB (multi-byte
// characters across the length cut, invalid UTF-8), bad input of every kind, spans ended,
// ended twice, freed open, left open, and (worker mode) kept from an earlier request.
// Returns what the collector must receive: every recorded span with its parent, name,
// attributes, events and status, byte strings hex-encoded raw (the test applies UTF-8
// repair and the value-length cut).

use Ferrophp\Span;
use Ferrophp\Trace;

/** What one recorded span must arrive as. */
final class SpanModel
{
    public array $attributes = [];
    public int $droppedAttributes = 0;
    public array $events = [];
    public int $droppedEvents = 0;
    public int $status = 0;
    public string $message = '';
    public bool $ended = false;

    public function __construct(public string $name, public string $id, public string $parent)
    {
    }

    /** One attribute (already known good) under the span's rules: replace, or add within the limit. */
    public function set(string $key, mixed $value, int $limit): void
    {
        if ($value === null) {
            return;
        }
        if (array_key_exists($key, $this->attributes)) {
            $this->attributes[$key] = shapes_expect($value);
        } elseif (count($this->attributes) >= $limit) {
            $this->droppedAttributes++;
        } else {
            $this->attributes[$key] = shapes_expect($value);
        }
    }
}

function shapes_pick(array $from): mixed
{
    return $from[mt_rand(0, count($from) - 1)];
}

/** A string of `n` bytes: ASCII, two-byte characters (cut mid-character), or invalid UTF-8. */
function shapes_string(int $n): string
{
    switch (mt_rand(0, 2)) {
        case 0:
            return substr(str_repeat('abcdefghij', intdiv($n, 10) + 1), 0, $n);
        case 1:
            return substr(str_repeat('é', intdiv($n, 2) + 1), 0, $n);
        default:
            return substr(str_repeat("a\xff\xc3", intdiv($n, 3) + 1), 0, $n);
    }
}

/** [value, good]: a value for an attribute, and whether the API accepts it. */
function shapes_value(): array
{
    switch (mt_rand(0, 11)) {
        case 0:
        case 1:
        case 2:
            return [shapes_string(shapes_pick([0, 1, 15, 16, 17, 100, 4096, 1 << 20])), true];
        case 3:
            return [shapes_pick([0, -1, 7, PHP_INT_MAX, PHP_INT_MIN]), true];
        case 4:
            return [shapes_pick([1.5, -0.0, 1e300, -2.5e-300]), true];
        case 5:
            return [mt_rand(0, 1) === 1, true];
        case 6:
            return [null, true];
        case 7:
            return [shapes_pick([[], [1, 2, 3], [true, false], [0.5]]), true];
        case 8:
            return [[shapes_string(shapes_pick([0, 16, 17, 40])), shapes_string(3)], true];
        case 9:
            return [shapes_pick([[1, 'a'], ['k' => 1], [[1]], [null], [1 => 'a']]), false];
        case 10:
            return [new ArrayObject(), false];
        default:
            return [fopen('php://memory', 'r'), false];
    }
}

/** What the collector shows for a good value. */
function shapes_expect(mixed $v): array
{
    return match (true) {
        is_string($v) => ['string' => bin2hex($v)],
        is_bool($v) => ['bool' => $v],
        is_int($v) => ['int' => $v],
        is_float($v) => ['float' => $v],
        default => ['list' => array_map('shapes_expect', $v)],
    };
}

/** A key: ASCII, lengths 1-300 (never numeric, which PHP would make an int key). */
function shapes_key(): string
{
    return 'k' . str_repeat('y', shapes_pick([0, 1, 30, 299])) . mt_rand(0, 9);
}

/** [attributes, good]: an attributes array, bad in one entry now and then. */
function shapes_attributes(int $around): array
{
    $n = max(0, $around + mt_rand(-1, 2) * mt_rand(0, 1));
    $attributes = [];
    $good = true;
    for ($i = 0; $i < $n; $i++) {
        [$v, $ok] = shapes_value();
        $attributes[shapes_key() . "_$i"] = $v;
        $good = $good && $ok;
    }
    if (mt_rand(0, 9) === 0) {
        $attributes[] = 'integer key';
        $good = false;
    }
    if (mt_rand(0, 19) === 0) {
        $attributes[''] = 'empty key';
        $good = false;
    }
    return [$attributes, $good];
}

function trace_shapes(int $seed, array $limits, ?Span &$kept): array
{
    mt_srand($seed);
    $models = [];
    $objects = [];
    $thrown = 0;
    $server = Trace::server();
    $stack = [$server->spanId()];
    $recording = Trace::isSampled();
    $created = 0;
    $target = shapes_pick([0, 1, $limits['spans'] - 1, $limits['spans'], $limits['spans'] + 1, 3 * $limits['spans']]);
    $steps = 0;

    // A span object from an earlier request (worker mode): records nothing, breaks nothing.
    if ($kept !== null) {
        $kept->setAttribute('stale', 1)->addEvent('stale')->setStatus(Span::STATUS_ERROR, 'stale');
        $kept->updateName('stale')->end();
        if ($kept->isRecording()) {
            throw new LogicException('a span of an earlier request still records');
        }
        $kept = null;
    }

    $try = function (callable $f) use (&$thrown): bool {
        try {
            $f();
            return true;
        } catch (Ferrophp\TraceException | TypeError | ValueError | Error $e) {
            $thrown++;
            return false;
        }
    };

    while ($created < $target || $steps < 40) {
        $steps++;
        if ($steps > 400) {
            break;
        }
        $open = array_keys(array_filter($objects, fn ($o) => $o !== null));
        $op = $created < $target ? mt_rand(0, 9) : mt_rand(1, 9);
        if ($op === 0 || !$open) {
            if ($created >= $target && $open === []) {
                break;
            }
            $name = mt_rand(0, 9) ? shapes_string(shapes_pick([1, 15, 16, 17, 300, 70000])) : '';
            [$attributes, $good] = shapes_attributes($limits['attributes']);
            $good = $good && $name !== '';
            $span = null;
            $ok = $try(function () use (&$span, $name, $attributes) {
                $span = Trace::span($name, $attributes);
            });
            if ($ok !== $good) {
                throw new LogicException("span('" . bin2hex(substr($name, 0, 20)) . "') " . ($ok ? 'accepted bad input' : 'refused good input'));
            }
            if (!$ok) {
                continue;
            }
            $created++;
            $i = count($objects);
            $objects[$i] = $span;
            if ($span->isRecording()) {
                $m = new SpanModel($name, $span->spanId(), end($stack));
                foreach ($attributes as $k => $v) {
                    $m->set((string) $k, $v, $limits['attributes']);
                }
                $models[$i] = $m;
                $stack[] = $span->spanId();
            } elseif ($recording && $created <= $limits['spans']) {
                throw new LogicException("span $created of a sampled request does not record");
            }
            continue;
        }
        $i = shapes_pick($open);
        $span = $objects[$i];
        $m = $models[$i] ?? null;
        $live = $m !== null && !$m->ended;
        switch ($op) {
            case 1:
            case 2:
                $key = mt_rand(0, 19) ? shapes_key() : '';
                [$v, $good] = shapes_value();
                $ok = $try(fn () => $span->setAttribute($key, $v));
                if ($ok !== ($good && $key !== '')) {
                    throw new LogicException('setAttribute: ' . ($ok ? 'accepted bad input' : 'refused good input'));
                }
                if ($ok && $live) {
                    $m->set($key, $v, $limits['attributes']);
                }
                break;
            case 3:
                [$attributes, $good] = shapes_attributes(2);
                $ok = $try(fn () => $span->setAttributes($attributes));
                if ($ok !== $good) {
                    throw new LogicException('setAttributes: ' . ($ok ? 'accepted bad input' : 'refused good input'));
                }
                if ($ok && $live) {
                    foreach ($attributes as $k => $v) {
                        $m->set((string) $k, $v, $limits['attributes']);
                    }
                }
                break;
            case 4:
            case 5:
                $name = mt_rand(0, 9) ? shapes_string(shapes_pick([1, 16, 17, 5000])) : '';
                [$attributes, $good] = shapes_attributes($limits['event_attributes']);
                $ok = $try(fn () => $span->addEvent($name, $attributes));
                if ($ok !== ($good && $name !== '')) {
                    throw new LogicException('addEvent: ' . ($ok ? 'accepted bad input' : 'refused good input'));
                }
                if ($ok && $live) {
                    if (count($m->events) >= $limits['events']) {
                        $m->droppedEvents++;
                    } else {
                        $event = ['name' => bin2hex($name), 'attributes' => [], 'dropped' => 0];
                        foreach ($attributes as $k => $v) {
                            if ($v === null) {
                                continue;
                            }
                            if (count($event['attributes']) >= $limits['event_attributes']) {
                                $event['dropped']++;
                            } else {
                                $event['attributes'][$k] = shapes_expect($v);
                            }
                        }
                        $m->events[] = $event;
                    }
                }
                break;
            case 6:
                $e = new RuntimeException(shapes_string(shapes_pick([0, 17, 100000])));
                $ok = $try(fn () => $span->recordException($e));
                if (!$ok) {
                    throw new LogicException('recordException refused an exception');
                }
                if ($live) {
                    if (count($m->events) >= $limits['events']) {
                        $m->droppedEvents++;
                    } else {
                        $m->events[] = ['name' => bin2hex('exception'), 'attributes' => null, 'dropped' => null];
                    }
                }
                break;
            case 7:
                $code = shapes_pick([0, 1, 2, 2, 3, -1]);
                $description = shapes_string(shapes_pick([0, 17, 3000]));
                $ok = $try(fn () => $span->setStatus($code, $description));
                if ($ok !== in_array($code, [0, 1, 2], true)) {
                    throw new LogicException("setStatus($code): " . ($ok ? 'accepted' : 'refused'));
                }
                if ($ok && $live && $code !== 0 && $m->status !== 1) {
                    $m->status = $code;
                    $m->message = $code === 2 ? $description : '';
                }
                break;
            case 8:
                $name = mt_rand(0, 9) ? shapes_string(shapes_pick([1, 16, 17, 2000])) : '';
                $ok = $try(fn () => $span->updateName($name));
                if ($ok !== ($name !== '')) {
                    throw new LogicException('updateName: ' . ($ok ? 'accepted ""' : 'refused a name'));
                }
                if ($ok && $live) {
                    $m->name = $name;
                }
                break;
            default:
                // End it, end it twice, or let go of the object while it is open.
                if (mt_rand(0, 1)) {
                    $span->end();
                    if (mt_rand(0, 1)) {
                        $span->end();
                    }
                } elseif (mt_rand(0, 3) === 0 && $kept === null) {
                    // Ended, and kept for the next request of this worker thread.
                    $span->end();
                    $kept = $span;
                }
                if ($m !== null) {
                    $m->ended = true;
                    $stack = array_values(array_filter($stack, fn ($id) => $id !== $m->id));
                }
                $objects[$i] = null;
                $span = null;
                break;
        }
    }

    $out = [];
    foreach ($models as $m) {
        $out[] = [
            'name' => bin2hex($m->name),
            'span_id' => $m->id,
            'parent' => $m->parent,
            'attributes' => $m->attributes,
            'dropped_attributes' => $m->droppedAttributes,
            'events' => $m->events,
            'dropped_events' => $m->droppedEvents,
            'status' => $m->status,
            'message' => bin2hex($m->message),
        ];
    }
    // Spans still open (objects held here) end with the request.
    return ['trace_id' => Trace::traceId(), 'sampled' => $recording, 'created' => $created,
        'thrown' => $thrown, 'spans' => $out];
}
