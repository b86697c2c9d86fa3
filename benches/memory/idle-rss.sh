#!/usr/bin/env bash
# Memory per idle PHP thread: RSS of `ferrophp serve` with N classic threads after every
# thread has served requests (so each has its TSRM context, its PHP heap and touched
# stack), then idle. The slope between thread counts is the cost of one more thread;
# the intercept is the process itself (binary, libphp, OPcache shared memory touched,
# tokio). Used to size deploy/kubernetes resources.
#
#   benches/memory/idle-rss.sh [THREAD COUNTS...]      default: 1 8 32 64
#
# Needs a release build (cargo build --release --bin ferrophp) and curl.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
bin=${FERROPHP_BIN:-target/release/ferrophp}
root=$PWD/test-data/ops/public
counts=("$@")
[[ ${#counts[@]} -gt 0 ]] || counts=(1 8 32 64)
port=18971
printf "| threads | RSS idle (MiB) | per thread over 1 thread (MiB) |\n|---:|---:|---:|\n"
base=""
for n in "${counts[@]}"; do
  "$bin" serve --root "$root" --listen "127.0.0.1:$port" --threads "$n" --no-access-log \
    >/dev/null 2>&1 &
  pid=$!
  for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
  # 3N requests of 100 ms each, N at a time: every thread serves several.
  seq $((3 * n)) | xargs -P "$n" -I{} curl -s -o /dev/null "http://127.0.0.1:$port/classic.php?ms=100"
  sleep 1
  rss=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status")
  kill "$pid"; wait "$pid" 2>/dev/null || true
  # The private session directory this instance made (keyed by its port).
  rm -rf "${TMPDIR:-/tmp}/ferrophp-$(id -u)-$port"
  mib=$(awk -v k="$rss" 'BEGIN {printf "%.1f", k/1024}')
  if [[ -z $base ]]; then base=$rss; basen=$n; per="-"; else
    per=$(awk -v a="$rss" -v b="$base" -v n="$n" -v m="$basen" 'BEGIN {printf "%.2f", (a-b)/1024/(n-m)}')
  fi
  printf "| %d | %s | %s |\n" "$n" "$mib" "$per"
  port=$((port + 1))
done
