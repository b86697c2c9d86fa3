<?php
/**
 * Stubs for ferrophp's shared cache (implemented in Rust, cache/src). One cache of
 * PHP values shared by every PHP thread of the process; strings and arrays are returned
 * without copying (immutable values the engine copies only when a script writes to them).
 * See docs/usercache.md.
 *
 * scripts/gen-arginfo.sh turns this file into UserCache_arginfo.h (PHP's own
 * build/gen_stub.php): the method table and class registration cache/usercache.c
 * includes. Bodies are Rust (cache/src/api.rs), `zim_UserCache_Cache_<method>`.
 *
 * @generate-class-entries
 */
namespace UserCache;

/** Thrown for values that cannot be stored (the message names the path, e.g.
 *  `$value['a'][3]->b`) and for cached objects whose class cannot be found on fetch. */
class Exception extends \RuntimeException {}

/**
 * @strict-properties
 * @not-serializable
 */
final class Cache
{
    /** Stores (overwrites) $value. $ttl in seconds, 0 = no expiry. False when it does not
     *  fit in `usercache.memory_limit` even after eviction.
     *  @throws \ValueError empty key, key over 4096 bytes, negative ttl
     *  @throws Exception closures, resources, generators, internal objects that cannot be rebuilt */
    public static function store(string $key, mixed $value, int $ttl = 0): bool {}

    /** Like store(), only when the key is absent (or expired). */
    public static function add(string $key, mixed $value, int $ttl = 0): bool {}

    /** The cached value, or $default; $found tells which. Objects are rebuilt per fetch. */
    public static function fetch(string $key, mixed $default = null, ?bool &$found = null): mixed {}

    /** A deep copy of the cached value in request memory (the copy-on-read reference the
     *  benchmark compares against; never needed by applications). */
    public static function fetchCopy(string $key, mixed $default = null): mixed {}

    /** Found keys only, in input order: [key => value]. */
    public static function fetchMultiple(array $keys): array {}

    /** Stores every key => value; returns the keys that could not be stored. */
    public static function storeMultiple(array $values, int $ttl = 0): array {}

    public static function exists(string $key): bool {}

    /** A string: whether it existed. An array of keys: the keys that did not exist. */
    public static function delete(string|array $key): bool|array {}

    /** Atomic; creates the key at 0 when absent. False when the entry is not an int. */
    public static function increment(string $key, int $step = 1, int $ttl = 0): int|false {}

    /** Atomic; creates the key at 0 when absent. False when the entry is not an int. */
    public static function decrement(string $key, int $step = 1, int $ttl = 0): int|false {}

    /** Sets $new when the entry is the int $old. */
    public static function cas(string $key, int $old, int $new): bool {}

    /** The cached value, or the result of $producer (stored with $ttl). One producer runs
     *  per key at a time across threads; others wait for its value, never for the cache. */
    public static function remember(string $key, callable $producer, int $ttl = 0): mixed {}

    /** Removes every entry. Values already fetched stay valid. */
    public static function clear(): bool {}

    /** entries, memory_used (live + retired), memory_live, memory_limit, retired_bytes,
     *  retired_limit, hits, misses (summed per-thread counters), stores, evictions,
     *  expunges (expired entries evicted), reclaimed, full_failures, threads, copy_mode. */
    public static function info(): array {}
}
