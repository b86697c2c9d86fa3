<?php

/**
 * The built-in APCu compatibility layer (cache/src/apcu.rs, apcu/info.rs,
 * apcu/iterator.rs): APCu 5.1's functions, APCUIterator and constants over the shared
 * cache, registered only when APCu itself is not loaded. See docs/apcu-compat.md.
 *
 * scripts/gen-arginfo.sh turns this file into apcu_arginfo.h (PHP's own
 * build/gen_stub.php), which cache/apcu.c includes. Bodies are Rust; since APCu's own
 * apcu.so defines zif_apcu_* and zim_APCUIterator_* too, apcu.c gives this layer's a
 * `ferrophp_` prefix (`ferrophp_zif_apcu_fetch`, `ferrophp_zim_APCUIterator_key`).
 *
 * @generate-class-entries
 */

/** @var int */
const APC_LIST_ACTIVE = 1;
/** @var int */
const APC_LIST_DELETED = 2;
/** @var int */
const APC_ITER_TYPE = 1 << 0;
/** @var int */
const APC_ITER_KEY = 1 << 1;
/** @var int */
const APC_ITER_VALUE = 1 << 2;
/** @var int */
const APC_ITER_NUM_HITS = 1 << 3;
/** @var int */
const APC_ITER_MTIME = 1 << 4;
/** @var int */
const APC_ITER_CTIME = 1 << 5;
/** @var int */
const APC_ITER_DTIME = 1 << 6;
/** @var int */
const APC_ITER_ATIME = 1 << 7;
/** @var int */
const APC_ITER_REFCOUNT = 1 << 8;
/** @var int */
const APC_ITER_MEM_SIZE = 1 << 9;
/** @var int */
const APC_ITER_TTL = 1 << 10;
/** @var int */
const APC_ITER_NONE = 0;
/** @var int */
const APC_ITER_ALL = 0xffffffff;

/** @param bool $success */
function apcu_fetch(mixed $key, &$success = null): mixed {}

function apcu_store(mixed $key, mixed $value = UNKNOWN, int $ttl = 0): mixed {}

function apcu_add(mixed $key, mixed $value = UNKNOWN, int $ttl = 0): mixed {}

function apcu_delete(mixed $key): mixed {}

/** @param string|array $key */
function apcu_exists($key): bool|array {}

/** @param bool $success */
function apcu_inc(string $key, int $step = 1, &$success = null, int $ttl = 0): int|false {}

/** @param bool $success */
function apcu_dec(string $key, int $step = 1, &$success = null, int $ttl = 0): int|false {}

function apcu_cas(string $key, int $old, int $new): bool {}

function apcu_entry(string $key, callable $callback, int $ttl = 0): mixed {}

function apcu_clear_cache(): bool {}

function apcu_cache_info(bool $limited = false): array|false {}

function apcu_key_info(string $key): ?array {}

function apcu_sma_info(bool $limited = false): array|false {}

function apcu_enabled(): bool {}

class APCUIterator implements Iterator
{
    /** @param array|string|null $search */
    public function __construct($search = null, int $format = APC_ITER_ALL, int $chunk_size = 0, int $list = APC_LIST_ACTIVE) {}

    public function rewind(): void {}

    public function next(): void {}

    public function valid(): bool {}

    public function key(): string|int {}

    public function current(): mixed {}

    public function getTotalHits(): int {}

    public function getTotalSize(): int {}

    public function getTotalCount(): int {}
}
