#!/usr/bin/env bash
# Session workload: req/s of a page that starts a session while 150,000 other session
# files sit in the save path (the state a busy site reaches between clean-ups).
#
#   benches/sessions/bench.sh [SECONDS=10] [FILES=150000] [CONNECTIONS=32]
#
# Three servers, same document root (test-data/ops/public/session.php), same session
# directory, one after the other:
#   ferrophp           defaults: session.gc_probability=0, background sweep
#   ferrophp php-gc    PHP's built-in GC defaults (gc_probability=1, gc_divisor=100):
#                      one request in 100 scans the whole directory
#   nginx+php-fpm      Debian's php.ini (gc_probability=0, cleaned by cron), 4 children
#                      (benches/baseline/nginx-fpm.sh), skipped if php-fpm8.2 is missing
#
# The pre-existing files are younger than gc_maxlifetime (1440 s), so a GC pass scans
# them all and deletes none: every pass costs the same. Requests carry one of 1,000
# session ids (a wrk Lua script), so the directory stays at FILES + 1,000 files and two
# requests rarely wait on one session's lock. Needs wrk and a release build
# (cargo build --release --bin ferrophp).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
secs=${1:-10}
files=${2:-150000}
conns=${3:-32}
bin=target/release/ferrophp
[[ -x $bin ]] || { echo "build first: cargo build --release --bin ferrophp" >&2; exit 1; }
command -v wrk >/dev/null || { echo "wrk is not installed" >&2; exit 1; }
root=$PWD/test-data/ops/public
work=$(mktemp -d /tmp/ferrophp-sessbench.XXXXXX)
sessdir=$work/sessions
mkdir -m 0700 "$sessdir"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  benches/baseline/nginx-fpm.sh stop "$work/fpm" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

echo "creating $files session files in $sessdir" >&2
python3 - "$sessdir" "$files" <<'PY'
import os, sys, time
d, n = sys.argv[1], int(sys.argv[2])
t = time.time() - 600  # ten minutes old: alive for PHP's GC (gc_maxlifetime 1440)
for i in range(n):
    p = f"{d}/sess_pre{i:08d}"
    with open(p, "w") as f:
        f.write("n|i:1;")
    os.utime(p, (t, t))
PY

cat >"$work/ids.lua" <<'LUA'
math.randomseed(42)
request = function()
  return wrk.format(nil, nil, { Cookie = "PHPSESSID=bench" .. math.random(1, 1000) })
end
LUA

port=18931
run_wrk() { # name url
  wrk -t1 -c"$conns" -d"${secs}s" -s "$work/ids.lua" "$2" >"$work/wrk.txt" 2>&1
  rps=$(awk '/Requests\/sec/ {print $2}' "$work/wrk.txt")
  errs=$(awk '/Non-2xx/ {print $5}' "$work/wrk.txt")
  p99=$(awk '/Latency/ {print $4}' "$work/wrk.txt" | head -1)
  printf "| %-28s | %10s | %8s | %s |\n" "$1" "$rps" "$p99" "${errs:-0}"
}
serve() { # name args...
  local name=$1; shift
  "$bin" serve --root "$root" --listen "127.0.0.1:$port" --no-access-log \
    -d "session.save_path=$sessdir" "$@" >"$work/out" 2>"$work/err" &
  local pid=$!
  pids+=("$pid")
  for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
  curl -sf "http://127.0.0.1:$port/session.php" >/dev/null
  run_wrk "$name" "http://127.0.0.1:$port/session.php"
  kill "$pid"; wait "$pid" 2>/dev/null || true
  port=$((port + 1))
}

echo "| server (${files} session files) | req/s | max latency | non-2xx |"
echo "|---|---:|---:|---:|"
serve "ferrophp (defaults)"
serve "ferrophp, PHP's GC defaults" --session-gc php -d session.gc_probability=1 -d session.gc_divisor=100
if command -v php-fpm8.2 >/dev/null || [[ -x /usr/sbin/php-fpm8.2 ]]; then
  mkdir -p "$work/conf.d"
  echo "session.save_path=$sessdir" >"$work/conf.d/99-bench.ini"
  # A leading ':' appends our directory to the compiled-in scan dir.
  PHP_INI_SCAN_DIR=":$work/conf.d" benches/baseline/nginx-fpm.sh start "$work/fpm" "$root" "$port" >/dev/null
  run_wrk "nginx + php-fpm (Debian)" "http://127.0.0.1:$port/session.php"
  benches/baseline/nginx-fpm.sh stop "$work/fpm"
fi
echo "session files at the end: $(find "$sessdir" -name 'sess_*' | wc -l)" >&2
