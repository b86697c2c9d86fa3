<?php
/**
 * Stubs for ferrophp's tracing (implemented in Rust: worker/src/trace/ and the
 * ferrophp-trace crate). Each request traced by the server (W3C `traceparent` in,
 * OTLP/HTTP out, see docs/operating.md "Traces") has a server span; PHP adds child spans
 * with Trace::span() and reads the context to forward to the services it calls.
 *
 * scripts/gen-arginfo.sh turns this file into Trace_arginfo.h (PHP's own
 * build/gen_stub.php): the method tables and class registration worker/c/trace.c includes.
 * Method bodies are Rust, named `zim_Ferrophp_<Class>_<method>`.
 *
 * @generate-class-entries
 */
namespace Ferrophp;

/** Invalid input: an empty span or event name, an attribute key that is not a non-empty
 *  string, an attribute value that is not a string, int, float, bool or a list of one of
 *  those, a kind or status code that does not exist. Thrown whether or not the request is
 *  sampled. Volume limits (spans per request, attributes, events) never throw: what is
 *  past them is dropped and counted. */
class TraceException extends \InvalidArgumentException {}

/**
 * @strict-properties
 * @not-serializable
 */
final class Trace
{
    /** Starts a span, child of the innermost span still open in this request (else of
     *  the request's server span). It ends with end(), when the object is freed, or at the
     *  end of the request, whichever comes first. Attribute values: string, int, float,
     *  bool, or a list of one of those; null values are skipped. Not recording (every
     *  call a no-op) when the request is not sampled, outside an HTTP request, or past
     *  FERROPHP_TRACE_MAX_SPANS spans in this request. */
    public static function span(string $name, array $attributes = [], int $kind = Span::KIND_INTERNAL): Span {}

    /** The `traceparent` header value for an outgoing call made now: this trace, the
     *  innermost open span (else the server span) as parent. With tracing off, the
     *  request's own `traceparent` as received (the trace passes through). Null outside
     *  an HTTP request or without any trace. */
    public static function traceparent(): ?string {}

    /** The request's `tracestate`, to forward unchanged next to traceparent(); null when
     *  the request came without a valid traceparent or tracestate. */
    public static function tracestate(): ?string {}

    /** This request's trace id (32 hex digits), or null. */
    public static function traceId(): ?string {}

    /** Whether this request's spans are recorded and exported. */
    public static function isSampled(): bool {}

    /** The request's server span: set attributes on it (http.route, user ids), add events,
     *  rename it. end() on it does nothing: it ends with the request. */
    public static function server(): Span {}
}

/**
 * @strict-properties
 * @not-serializable
 */
final class Span
{
    /** @var int */
    public const KIND_INTERNAL = 1;
    /** @var int */
    public const KIND_SERVER = 2;
    /** @var int */
    public const KIND_CLIENT = 3;
    /** @var int */
    public const KIND_PRODUCER = 4;
    /** @var int */
    public const KIND_CONSUMER = 5;

    /** @var int */
    public const STATUS_UNSET = 0;
    /** @var int */
    public const STATUS_OK = 1;
    /** @var int */
    public const STATUS_ERROR = 2;

    /** Spans come from Trace::span() and Trace::server(). */
    private function __construct() {}

    /** Sets one attribute (an earlier value of the same key is replaced). */
    public function setAttribute(string $key, mixed $value): static {}

    /** Sets several attributes; a bad entry throws before any is set. */
    public function setAttributes(array $attributes): static {}

    /** Adds a timestamped event. */
    public function addEvent(string $name, array $attributes = []): static {}

    /** Adds an `exception` event (exception.type, .message, .stacktrace). Does not
     *  change the status: call setStatus(Span::STATUS_ERROR) for that. */
    public function recordException(\Throwable $exception, array $attributes = []): static {}

    /** STATUS_OK is final; STATUS_UNSET is ignored; the description is kept with
     *  STATUS_ERROR only. */
    public function setStatus(int $code, string $description = ""): static {}

    public function updateName(string $name): static {}

    /** Ends the span (a second call does nothing). */
    public function end(): void {}

    /** False once ended, for a span of an earlier request, and when not sampled. */
    public function isRecording(): bool {}

    public function traceId(): string {}

    public function spanId(): string {}

    /** The `traceparent` naming this span as the parent of an outgoing call. */
    public function traceparent(): ?string {}
}
