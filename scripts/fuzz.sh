#!/usr/bin/env bash
# Runs every cargo-fuzz target in fuzz/ for SECONDS_PER_TARGET (default 60), one after
# the other, each as a single libFuzzer process on one core, growing the corpora in
# fuzz/corpus/<target>/; prints execs and coverage per target. Needs the nightly
# toolchain (cargo-fuzz builds with -Zsanitizer=address); installs cargo-fuzz from
# crates.io when missing. Without nightly, `cargo test --test fuzz_replay` (stable, also
# in CI) replays the corpora and generated inputs through the same target functions.
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]
#   FUZZ_CMIN=1 scripts/fuzz.sh 600     # then minimise each corpus (cargo fuzz cmin)
#
# Exit status: 0 when every target ran clean, 1 when one found a crash (the input is in
# fuzz/artifacts/<target>/; turn it into a file under fuzz/regressions/<target>/), 2 when
# nightly or cargo-fuzz is missing.
set -euo pipefail

cd "$(dirname "$0")/.."
secs=${1:-60}
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    targets=(routing headers config cache_table string_arena)
fi

if ! cargo +nightly --version >/dev/null 2>&1; then
    echo "scripts/fuzz.sh: the nightly toolchain is not installed (cargo +nightly fails)." >&2
    echo "  cargo-fuzz needs nightly (sanitizer and coverage flags). Install it with" >&2
    echo "  'rustup toolchain install nightly', or run the stable replay instead:" >&2
    echo "  cargo test -p ferrophp --test fuzz_replay && cargo test -p ferrophp-worker --test fuzz_replay" >&2
    exit 2
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "scripts/fuzz.sh: installing cargo-fuzz from crates.io" >&2
    cargo install --locked cargo-fuzz || cargo install cargo-fuzz || {
        echo "scripts/fuzz.sh: cannot install cargo-fuzz" >&2
        exit 2
    }
fi

flags=(-O --debug-assertions)
(cd fuzz && cargo +nightly fuzz build "${flags[@]}")

logdir=fuzz/logs
mkdir -p "$logdir"
status=0
summary=()
for t in "${targets[@]}"; do
    dict=()
    if [ -f "fuzz/dict/$t.dict" ]; then dict=("-dict=dict/$t.dict"); fi
    mkdir -p "fuzz/corpus/$t"
    log="$logdir/$t.log"
    echo "== $t: ${secs}s" >&2
    # One process, one thread (libFuzzer's default): no -jobs/-workers fork mode.
    if (cd fuzz && cargo +nightly fuzz run "${flags[@]}" "$t" -- \
        -max_total_time="$secs" -print_final_stats=1 -rss_limit_mb=3072 \
        "${dict[@]}") >"$log" 2>&1; then
        result=clean
    else
        result="FAILED (see $log, fuzz/artifacts/$t/)"
        status=1
    fi
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    last=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
    cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
    ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
    corp=$(sed -n 's/.* corp: \([0-9]*\/[0-9]*[a-zA-Z]*\).*/\1/p' <<<"$last")
    summary+=("$(printf '%-14s %6ss %12s execs  cov %6s  ft %6s  corpus %-12s %s' \
        "$t" "$secs" "${execs:-?}" "${cov:-?}" "${ft:-?}" "${corp:-?}" "$result")")
    if [ "${FUZZ_CMIN:-0}" = 1 ]; then
        (cd fuzz && cargo +nightly fuzz cmin "${flags[@]}" "$t" -- "${dict[@]}") \
            >"$logdir/$t.cmin.log" 2>&1 || echo "cmin of $t failed ($logdir/$t.cmin.log)" >&2
    fi
done
printf '%s\n' "${summary[@]}"
exit $status
