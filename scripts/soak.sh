#!/usr/bin/env bash
# Soak benchmark (issue 12): REQUESTS requests of a mixed load (hello, 256 KiB output,
# multipart uploads, sessions, shared-cache churn, and errors of every kind: exception,
# fatal, memory_limit, exit) against the release binary on loopback, in classic and/or
# worker mode. Reports resident memory after warm-up and at the end, file descriptors
# and threads against their baseline, and upload temp files left behind. A benchmark
# command, not a test: the figures go into issue notes.
#
#   scripts/soak.sh [classic|worker|both] [REQUESTS=500000] [CONNECTIONS=16]   (WARMUP_SECS=60)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="$HOME/.cargo/bin:$PATH"
modes=${1:-both}
total=${2:-500000}
conns=${3:-16}
[[ $modes == both ]] && modes="classic worker"
scripts/setup.sh >/dev/null
command -v wrk >/dev/null || scripts/install-test-deps.sh
cargo build --release --quiet --bin ferrophp
bin=target/release/ferrophp
root=$PWD/test-data/soak

rss_kib() { awk '/^VmRSS/{print $2}' "/proc/$1/status"; }
fds() { ls "/proc/$1/fd" | wc -l; }
threads() { awk '/^Threads/{print $2}' "/proc/$1/status"; }

for mode in $modes; do
  tmp=$(mktemp -d)
  mkdir -p "$tmp/uploads" "$tmp/sessions"
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  args=(serve --root "$root" --listen "127.0.0.1:$port" --threads 4 --no-access-log
    -d "upload_tmp_dir=$tmp/uploads" -d "session.save_path=$tmp/sessions"
    -d session.gc_probability=0 -d display_errors=0 -d log_errors=0)
  prefix=""
  if [[ $mode == worker ]]; then
    args+=(--worker "$root/worker.php,4")
    prefix=/worker.php
  fi
  "$bin" "${args[@]}" >"$tmp/server.log" 2>&1 &
  pid=$!
  trap 'kill $pid 2>/dev/null || true; rm -rf "$tmp"' EXIT
  for _ in $(seq 100); do
    curl -fs "http://127.0.0.1:$port$prefix/hello.php" >/dev/null 2>&1 && break
    sleep 0.1
  done
  sleep 1
  base_fds=$(fds "$pid") base_threads=$(threads "$pid") base_rss=$(rss_kib "$pid")

  run_wrk() { SOAK_PREFIX=$prefix wrk -t1 -c"$conns" -d"$1" -s "$root/mix.lua" "http://127.0.0.1:$port/" 2>&1; }
  out=$(run_wrk "${WARMUP_SECS:-60}s")
  warm=$(awk '/requests in/{print $1}' <<<"$out")
  warm_rss=$(rss_kib "$pid")
  done_reqs=0 socket_errors=0 non2xx=0 secs=0 cpu0=$(awk '{print $14+$15}' "/proc/$pid/stat")
  peak_rss=$warm_rss
  while ((done_reqs < total)); do
    out=$(run_wrk 20s)
    n=$(awk '/requests in/{print $1}' <<<"$out")
    done_reqs=$((done_reqs + n))
    secs=$((secs + 20))
    e=$(sed -n 's/.*Socket errors: connect \([0-9]*\), read \([0-9]*\), write \([0-9]*\), timeout \([0-9]*\).*/\1 \2 \3 \4/p' <<<"$out" |
      awk '{print $1+$2+$3+$4}')
    socket_errors=$((socket_errors + ${e:-0}))
    x=$(sed -n 's/.*Non-2xx or 3xx responses: \([0-9]*\).*/\1/p' <<<"$out")
    non2xx=$((non2xx + ${x:-0}))
    r=$(rss_kib "$pid")
    ((r > peak_rss)) && peak_rss=$r
    echo "soak $mode: $done_reqs/$total requests, rss ${r} KiB" >&2
  done
  cpu1=$(awk '{print $14+$15}' "/proc/$pid/stat")
  sleep 2
  end_rss=$(rss_kib "$pid") end_fds=$(fds "$pid") end_threads=$(threads "$pid")
  left=$(find "$tmp/uploads" -type f | wc -l)
  sessions=$(find "$tmp/sessions" -type f | wc -l)
  alive=$(curl -fs "http://127.0.0.1:$port$prefix/hello.php" || echo DEAD)
  growth=$(python3 -c "print(f'{($end_rss-$warm_rss)*100/$warm_rss:.1f}')")
  ticks=$(getconf CLK_TCK)
  echo "soak $mode: $done_reqs requests in ${secs}s (+$warm warm-up) at $conns connections," \
    "$(python3 -c "print(f'{$done_reqs/$secs:.0f}')") req/s," \
    "server CPU $(python3 -c "print(f'{($cpu1-$cpu0)/$ticks*1e6/$done_reqs:.1f}')") us/request;" \
    "socket errors $socket_errors; non-2xx $non2xx (error.php answers 500 by design: 1 request in 16)"
  echo "soak $mode: rss baseline ${base_rss} KiB, after warm-up ${warm_rss} KiB, peak ${peak_rss} KiB," \
    "end ${end_rss} KiB: growth after warm-up ${growth}%"
  echo "soak $mode: fds ${base_fds} -> ${end_fds}; threads ${base_threads} -> ${end_threads};" \
    "upload temp files left ${left}; session files ${sessions}; still serving: ${alive}"
  kill "$pid"
  wait "$pid" 2>/dev/null || true
  trap - EXIT
  rm -rf "$tmp"
done
