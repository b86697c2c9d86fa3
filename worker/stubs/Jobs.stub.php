<?php
/**
 * Stubs for ferrophp's job queue and background workers (implemented in Rust:
 * worker/src/jobs/ over the ferrophp-jobs crate; docs/jobs.md). Request code dispatches,
 * background code (`--background-worker`) takes, acknowledges or fails.
 *
 * scripts/gen-arginfo.sh turns this file into Jobs_arginfo.h (PHP's own
 * build/gen_stub.php): the method tables and class registration worker/c/jobs.c includes.
 * Method bodies are Rust, named `zim_Ferrophp_<Class>_<method>`.
 *
 * @generate-class-entries
 */
namespace Ferrophp;

/** A payload that cannot be stored (a resource, a closure, an unserializable object, too
 *  large), a bad queue name or option, or the job store failing (unreachable Redis, disk
 *  error). Nothing was stored when a dispatch throws. */
class JobsException extends \RuntimeException {}

/**
 * @strict-properties
 * @not-serializable
 */
final class Jobs
{
    /** Stores a job and returns its id once it is durable (docs/jobs.md, "fsync policy").
     *  The payload is stored with serialize(). $delay is in seconds (0.3: 300 ms);
     *  $priority -1000..1000, higher first; with $uniqueKey held by a job of this queue
     *  that is not done yet, nothing is stored and that job's id is returned. */
    public static function dispatch(string $queue, mixed $payload, float $delay = 0, int $priority = 0, ?string $uniqueKey = null, int $maxAttempts = 3): string {}

    /** The next job of the first of $queue (one name, or names by precedence) that has
     *  one, waiting up to $timeout seconds (0: do not wait); null on timeout and when the
     *  server stops (a background worker's wait ends at once then). */
    public static function take(string|array $queue, float $timeout = 0): ?Job {}
}

/**
 * @strict-properties
 * @not-serializable
 */
final class Job
{
    public readonly string $id;
    public readonly string $queue;
    public readonly mixed $payload;
    /** This delivery's number, from 1. */
    public readonly int $attempts;

    /** Jobs come from Jobs::take(). */
    private function __construct() {}

    /** Done: the job is deleted. Throws when the lease was lost (already acknowledged or
     *  failed, or its visibility timeout passed and it was delivered again). */
    public function ack(): void {}

    /** Failed: retried after its backoff, or dead-lettered after its last attempt.
     *  Returns true when it will be retried. A Job released without ack() or fail() (the
     *  script ended, a fatal error) is failed with "released without ack". */
    public function fail(?string $reason = null): bool {}
}

/**
 * @strict-properties
 * @not-serializable
 */
final class Background
{
    /** True once the server tells this background worker to stop (shutdown, restart):
     *  finish the current job and return. Always false outside a background worker. */
    public static function shouldStop(): bool {}
}
