#!/usr/bin/env bash
# Where a worker-mode hello-world request's CPU goes: runs the release server (or the
# pure-hyper reference) under wrk, samples it with `perf record`, and prints the CPU per
# request (getrusage of the server process, from /proc) next to perf's split by thread
# role and by library. docs/benchmarks.md ("Server CPU per request, named") quotes it.
#
#   scripts/profile-hot-path.sh [worker|classic|hyper] [seconds]
#
# Needs a release build (`cargo build --release -p ferrophp-server -p ferrophp-benches`),
# wrk and perf. Leave the machine otherwise idle: perf attributes CPU, wrk shares the cores.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
mode=${1:-worker}
seconds=${2:-10}
threads=${PROFILE_THREADS:-4}
out=${PROFILE_OUT:-/tmp/ferrophp-profile-$mode}
mkdir -p "$out"
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
cp -r test-data/compare/. "$root"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
case $mode in
  worker)
    target/release/ferrophp serve --no-access-log --log warn --listen "127.0.0.1:$port" \
      --root "$root" --threads "$threads" --worker "$root/worker.php,$threads" &
    url="http://127.0.0.1:$port/worker.php/hello" ;;
  classic)
    target/release/ferrophp serve --no-access-log --log warn --listen "127.0.0.1:$port" \
      --root "$root" --threads "$threads" &
    url="http://127.0.0.1:$port/hello.php" ;;
  hyper)
    target/release/hyper-hello "127.0.0.1:$port" &
    url="http://127.0.0.1:$port/" ;;
  *) echo "usage: $0 [worker|classic|hyper] [seconds]" >&2; exit 2 ;;
esac
server=$!
trap 'kill "$server" 2>/dev/null; wait "$server" 2>/dev/null; rm -rf "$root"' EXIT
for _ in $(seq 100); do curl -fs -o /dev/null "$url" && break; sleep 0.1; done
wrk -t2 -c32 -d2s "$url" >/dev/null # warm-up

ticks=$(getconf CLK_TCK)
cpu() { awk '{print $14 + $15}' "/proc/$server/stat"; }
before=$(cpu)
perf record -q -F 2999 -g -p "$server" -o "$out/perf.data" -- sleep "$seconds" >/dev/null 2>&1 &
perf_pid=$!
wrk -t2 -c32 -d"${seconds}s" --latency "$url" >"$out/wrk.txt"
wait "$perf_pid" || true
after=$(cpu)
requests=$(awk '/requests in/ {print $1}' "$out/wrk.txt")
us=$(python3 -c "print(($after - $before) / $ticks * 1e6 / $requests)")
printf '%s: %d requests, server CPU %.1f us/request (utime+stime of the server, /proc/PID/stat)\n' \
  "$mode" "$requests" "$us"
grep -E "Requests/sec|99%" "$out/wrk.txt"
echo "--- CPU samples by thread (comm)"
perf report -i "$out/perf.data" --no-children --sort comm --stdio 2>/dev/null | grep -E '^ +[0-9]' | head -12
echo "--- by thread and library"
perf report -i "$out/perf.data" --no-children --sort comm,dso --stdio 2>/dev/null | grep -E '^ +[0-9]' | head -25
echo "--- named (scripts/cpu-buckets.py)"
perf report -i "$out/perf.data" --no-children --sort comm,dso,sym --stdio 2>/dev/null \
  | scripts/cpu-buckets.py "$us"
echo "--- top symbols"
perf report -i "$out/perf.data" --no-children --sort comm,sym --stdio 2>/dev/null | grep -E '^ +[0-9]' | head -45
