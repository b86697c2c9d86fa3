#!/usr/bin/env bash
# Soak benchmark (issue 12): REQUESTS requests of a mixed load (hello, 256 KiB output,
# multipart uploads, sessions, shared-cache churn, and errors of every kind: exception,
# fatal, memory_limit, exit) against the release binary on loopback, in classic and/or
# worker mode. Reports resident memory at start, after warm-up and at the end (and where
# it lives: brk heap, glibc thread arenas, 2 MiB-aligned mappings such as ZendMM chunks),
# server CPU time, the PHP threads' heaps and the shared cache from /metrics, file
# descriptors and threads against their baseline, and upload temp files left behind. A
# benchmark command, not a test: the figures go into issue notes.
#
#   scripts/soak.sh [classic|worker|both] [REQUESTS=500000] [CONNECTIONS=16]
#
# Environment: WARMUP_SECS=60; SOAK_ONLY=hello,big,cache,error,session,upload keeps only
# those request types (to find which one grows memory); SOAK_MALLOC_STATS=1 prints glibc's
# per-arena malloc_stats() at the end (through gdb); SOAK_SERVER_ARGS adds server flags
# (e.g. "-d realpath_cache_size=0"); SOAK_BIN runs that binary instead of building the
# release one (to compare two builds). Anything else in the environment reaches the server,
# e.g. MALLOC_ARENA_MAX=2.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="$HOME/.cargo/bin:$PATH"
modes=${1:-both}
total=${2:-500000}
conns=${3:-16}
[[ $modes == both ]] && modes="classic worker"
scripts/setup.sh >/dev/null
command -v wrk >/dev/null || scripts/install-test-deps.sh
if [[ -n ${SOAK_BIN:-} ]]; then
  bin=$SOAK_BIN
else
  cargo build --release --quiet --bin ferrophp
  bin=target/release/ferrophp
fi
root=$PWD/test-data/soak

rss_kib() { awk '/^VmRSS/{print $2}' "/proc/$1/status"; }
fds() { ls "/proc/$1/fd" | wc -l; }
threads() { awk '/^Threads/{print $2}' "/proc/$1/status"; }
cpu_ticks() { awk '{print $14, $15}' "/proc/$1/stat"; } # utime stime
# Resident KiB by kind of mapping. glibc's thread arenas are 64 MiB-aligned heaps; ZendMM
# allocates 2 MiB-aligned chunks (huge blocks too), which the kernel may merge.
rss_split() {
  python3 - "/proc/$1/smaps" <<'PY'
import re, sys
kinds = {}
cur = None
for line in open(sys.argv[1]):
    m = re.match(r'([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \S+\s*(.*)', line)
    if m:
        start, end, name = int(m[1], 16), int(m[2], 16), m[4].strip()
        if name == '[heap]':
            cur = 'brk-heap'
        elif name.startswith('/'):
            cur = 'files'
        elif name:
            cur = 'other'
        elif start % (64 << 20) == 0:
            cur = 'glibc-arenas'
        elif start % (2 << 20) == 0 and (end - start) % (2 << 20) == 0:
            cur = '2MiB-chunks'
        else:
            cur = 'anon'
        continue
    if line.startswith('Rss:') and cur:
        kinds[cur] = kinds.get(cur, 0) + int(line.split()[1])
print(' '.join(f'{k} {kinds.get(k, 0)}' for k in
               ['brk-heap', 'glibc-arenas', '2MiB-chunks', 'anon', 'files', 'other']))
PY
}
# Sums of a few /metrics series: PHP threads' heaps, shared cache bytes and entries.
scrape() {
  { curl -fs "http://$1/metrics" || true; } | awk '
    /^ferrophp_php_thread_memory_bytes/ {php += $NF}
    /^ferrophp_usercache_memory_bytes/ {uc = $NF}
    /^ferrophp_usercache_entries/ {ue = $NF}
    END {printf "PHP heaps %.1f MiB, usercache %.1f MiB in %d entries", php/1048576, uc/1048576, ue}'
}

for mode in $modes; do
  tmp=$(mktemp -d)
  mkdir -p "$tmp/uploads" "$tmp/sessions"
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  admin=127.0.0.1:$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  # shellcheck disable=SC2206 # SOAK_SERVER_ARGS is a list of words on purpose
  args=(serve --root "$root" --listen "127.0.0.1:$port" --admin "$admin" --threads 4 --no-access-log
    ${SOAK_SERVER_ARGS:-}
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
  base_split=$(rss_split "$pid")

  run_wrk() { SOAK_PREFIX=$prefix wrk -t1 -c"$conns" -d"$1" -s "$root/mix.lua" "http://127.0.0.1:$port/" 2>&1; }
  out=$(run_wrk "${WARMUP_SECS:-60}s")
  warm=$(awk '/requests in/{print $1}' <<<"$out")
  warm_rss=$(rss_kib "$pid") warm_split=$(rss_split "$pid") warm_scrape=$(scrape "$admin")
  done_reqs=0 socket_errors=0 non2xx=0 secs=0
  read -r utime0 stime0 < <(cpu_ticks "$pid")
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
  read -r utime1 stime1 < <(cpu_ticks "$pid")
  sleep 2
  end_rss=$(rss_kib "$pid") end_fds=$(fds "$pid") end_threads=$(threads "$pid")
  end_split=$(rss_split "$pid") end_scrape=$(scrape "$admin")
  left=$(find "$tmp/uploads" -type f | wc -l)
  sessions=$(find "$tmp/sessions" -type f | wc -l)
  alive=$(curl -fs "http://127.0.0.1:$port$prefix/hello.php" || echo DEAD)
  growth=$(python3 -c "print(f'{($end_rss-$warm_rss)*100/$warm_rss:.1f}')")
  ticks=$(getconf CLK_TCK)
  user_s=$(python3 -c "print(f'{($utime1-$utime0)/$ticks:.1f}')")
  sys_s=$(python3 -c "print(f'{($stime1-$stime0)/$ticks:.1f}')")
  echo "soak $mode${SOAK_ONLY:+ (only $SOAK_ONLY)}: $done_reqs requests in ${secs}s (+$warm warm-up) at $conns connections," \
    "$(python3 -c "print(f'{$done_reqs/$secs:.0f}')") req/s," \
    "server CPU ${user_s}s user + ${sys_s}s system =" \
    "$(python3 -c "print(f'{($utime1-$utime0+$stime1-$stime0)/$ticks*1e6/$done_reqs:.1f}')") us/request;" \
    "socket errors $socket_errors; non-2xx $non2xx (error.php answers 500 by design: 1 request in 16)"
  echo "soak $mode: rss baseline ${base_rss} KiB, after warm-up ${warm_rss} KiB, peak ${peak_rss} KiB," \
    "end ${end_rss} KiB: growth after warm-up ${growth}%"
  echo "soak $mode: rss KiB by mapping: baseline [$base_split]; after warm-up [$warm_split]; end [$end_split]"
  echo "soak $mode: after warm-up $warm_scrape; end $end_scrape"
  echo "soak $mode: fds ${base_fds} -> ${end_fds}; threads ${base_threads} -> ${end_threads};" \
    "upload temp files left ${left}; session files ${sessions}; still serving: ${alive}"
  if [[ ${SOAK_MALLOC_STATS:-} == 1 ]]; then
    # malloc_stats() writes every arena's system and in-use bytes to the server's stderr.
    gdb -p "$pid" -batch -ex 'call ((void (*)(void))malloc_stats)()' >/dev/null 2>&1 || true
    sleep 0.5
    echo "soak $mode: glibc malloc_stats:"
    sed -n '/^Arena 0:/,$p' "$tmp/server.log" | tr '\n' ' ' | sed 's/  */ /g; s/Arena/\n  Arena/g; s/Total/\n  Total/'
    echo
  fi
  kill "$pid"
  wait "$pid" 2>/dev/null || true
  trap - EXIT
  rm -rf "$tmp"
done
