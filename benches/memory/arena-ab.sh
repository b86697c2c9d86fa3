#!/usr/bin/env bash
# Throughput of the malloc arena cap (ferrophp's default, one arena per CPU) against
# glibc's own count (MALLOC_ARENA_MAX=16), same release binary, classic hello world,
# alternating three times so that drift on a shared machine hits both alike.
# Usage: benches/memory/arena-ab.sh   (needs target/release/ferrophp and wrk)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
root=test-data/soak
for round in 1 2 3; do
  for variant in cap glibc; do
    port=$((19100 + round * 2))
    [[ $variant == glibc ]] && port=$((port + 1))
    if [[ $variant == glibc ]]; then export MALLOC_ARENA_MAX=16; else unset MALLOC_ARENA_MAX; fi
    target/release/ferrophp serve --root "$root" --listen "127.0.0.1:$port" --threads 4 \
      --no-access-log >/dev/null 2>&1 &
    pid=$!
    for _ in $(seq 1 50); do curl -s -o /dev/null "http://127.0.0.1:$port/hello.php" && break; sleep 0.1; done
    wrk -t1 -c16 -d2s "http://127.0.0.1:$port/hello.php" >/dev/null
    rps=$(wrk -t1 -c16 -d5s "http://127.0.0.1:$port/hello.php" | awk '/Requests\/sec/ {print $2}')
    echo "$variant round $round: $rps req/s"
    kill -TERM "$pid"
    wait "$pid" 2>/dev/null || true
  done
done
