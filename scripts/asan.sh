#!/usr/bin/env bash
# Runs the core of the integration suite with ferrophp (and the test binaries, the
# worker and cache crates, the C of php-sys, worker/c and cache) built with
# AddressSanitizer on nightly. libphp itself is not instrumented (it is the cached ZTS
# build): ASan still checks every access our Rust and C code makes, and with
# USE_ZEND_ALLOC=0 (set below) PHP's request memory comes from ASan's malloc, so our
# accesses to it are bounds-checked too; PHP's own accesses are not (valgrind covers
# those for the cache: server/tests/cache_memory.rs, scripts/cache-fuzz.sh).
#
#   scripts/asan.sh                       # the default set below
#   scripts/asan.sh -p ferrophp --test http_php   # any cargo test selection
#
# Every process writes its report to target/asan/logs/ (the server under test is a child
# of the test binary, so a report there may not fail the test by itself): the script
# fails when any report exists. Exit 2 when nightly is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! cargo +nightly --version >/dev/null 2>&1; then
    echo "scripts/asan.sh: needs the nightly toolchain (-Zsanitizer=address); not installed." >&2
    echo "  Without it, valgrind covers the cache: cargo test -p ferrophp --test cache_memory" >&2
    exit 2
fi

if [ $# -eq 0 ]; then
    set -- -p ferrophp --test http_php --test http_security --test worker_http \
        -p ferrophp-worker --test cache_api --test server_vars --test input_parsing
fi

target=x86_64-unknown-linux-gnu
logs=$PWD/target/asan/logs
rm -rf "$logs"
mkdir -p "$logs"
export RUSTFLAGS="-Zsanitizer=address -Cforce-frame-pointers=yes"
export RUSTDOCFLAGS="-Zsanitizer=address"
# cc (php-sys's shim, worker/c, the cache's C, and ring's C) reads the per-target CFLAGS.
export CFLAGS_x86_64_unknown_linux_gnu="-fsanitize=address -fno-omit-frame-pointer"
# Leaks: PHP keeps persistent allocations until module shutdown and the tests stop
# servers with signals; leak reports would be noise. Heap errors abort at once.
# PHP's allocator off: emalloc becomes malloc, so ASan's redzones also guard the request
# memory our code reads and writes (PHP's own accesses stay unchecked).
export USE_ZEND_ALLOC=0
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:log_path=$logs/asan:${ASAN_OPTIONS:-}"
# PHP dlopens extensions with RTLD_DEEPBIND unless PHP itself was built with ASan, and
# the ASan runtime refuses that (google/sanitizers#611): OPcache (a zend_extension from the
# build's conf.d) cannot load. Scan a copy of conf.d without it instead.
prefix=$(scripts/setup.sh)
scan=$PWD/target/asan/conf.d
rm -rf "$scan"
mkdir -p "$scan"
for f in "$prefix"/etc/conf.d/*.ini; do
    if [ -e "$f" ] && ! grep -q '^ *zend_extension' "$f"; then cp "$f" "$scan/"; fi
done
export PHP_INI_SCAN_DIR=$scan
status=0
cargo +nightly test --no-fail-fast --target "$target" --target-dir target/asan "$@" -- --test-threads=1 || status=$?

if compgen -G "$logs/asan*" >/dev/null; then
    echo "scripts/asan.sh: AddressSanitizer reports:" >&2
    for f in "$logs"/asan*; do
        echo "== $f" >&2
        head -60 "$f" >&2
    done
    exit 1
fi
if [ $status -ne 0 ]; then
    echo "scripts/asan.sh: tests failed (no ASan report)" >&2
    exit $status
fi
echo "scripts/asan.sh: clean (no AddressSanitizer report)"
