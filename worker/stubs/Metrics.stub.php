<?php
/**
 * Stubs for ferrophp's metrics (implemented in Rust, worker/src/metrics.rs and the
 * ferrophp-metrics crate). Each PHP thread records into its own shard; the admin
 * `GET /metrics` endpoint and push mode merge every thread's series. See docs/metrics.md.
 *
 * scripts/gen-arginfo.sh turns this file into Metrics_arginfo.h (PHP's own
 * build/gen_stub.php): the method tables and class registration worker/c/metrics.c includes.
 * Method bodies are Rust, named `zim_Ferrophp_<Class>_<method>`.
 *
 * @generate-class-entries
 */
namespace Ferrophp;

/** Invalid metric name, NaN/infinite value, tags that are not string => scalar, a
 *  negative increment, or one name used as two kinds of metric. */
class MetricsException extends \InvalidArgumentException {}

/**
 * @strict-properties
 * @not-serializable
 */
final class Metrics
{
    /** Records $value into the DDSketch distribution $name (+ $tags). Names follow
     *  Prometheus rules ([a-zA-Z_:][a-zA-Z0-9_:]*); tag keys [a-zA-Z_][a-zA-Z0-9_]*;
     *  tag values int/float/bool/string (bools become "true"/"false"). */
    public static function observe(string $name, float $value, array $tags = []): void {}

    /** Adds $by (>= 0) to the counter $name. */
    public static function increment(string $name, int|float $by = 1, array $tags = []): void {}

    /** Sets the gauge $name (the latest value set by any thread wins). */
    public static function gauge(string $name, float $value, array $tags = []): void {}

    /** The value at quantile $q (0..1) of the distribution merged across all threads,
     *  within the relative accuracy (1% by default); null for an unknown series. */
    public static function quantile(string $name, float $q, array $tags = []): ?float {}

    /** ['series' => [['name', 'tags', 'type', 'count', 'sum', 'min', 'max',
     *  'quantiles' => ['0.5' => .., '0.9' => .., '0.99' => ..]] or ['name', 'tags', 'type',
     *  'value'], ...], 'series_count' => int, 'dropped' => int] */
    public static function snapshot(): array {}
}
