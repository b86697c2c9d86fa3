#!/usr/bin/env bash
# Exact per-request counts of what a hand-off between threads costs the kernel: context
# switches and futex calls (plus the socket syscalls for scale), from `perf stat` on the
# release server under wrk. Counts, unlike timings, do not depend on how busy the machine
# is, which is why docs/benchmarks.md quotes them for the hand-off design.
#
#   scripts/count-handoffs.sh [worker|classic] [BINARY] [extra ferrophp args...]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
mode=${1:-worker}
bin=${2:-target/release/ferrophp}
shift $(($# < 2 ? $# : 2))
root=$(mktemp -d)
cp -r test-data/compare/. "$root"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
args=(serve --no-access-log --log warn --listen "127.0.0.1:$port" --root "$root" --threads 4 "$@")
if [[ $mode == worker ]]; then
  args+=(--worker "$root/worker.php,4")
  url="http://127.0.0.1:$port/worker.php/hello"
else
  url="http://127.0.0.1:$port/hello.php"
fi
"$bin" "${args[@]}" >/dev/null 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null; wait "$server" 2>/dev/null; rm -rf "$root"' EXIT
for _ in $(seq 100); do curl -fs -o /dev/null "$url" && break; sleep 0.1; done
wrk -t2 -c32 -d1s "$url" >/dev/null
events=context-switches,syscalls:sys_enter_futex,syscalls:sys_enter_epoll_wait
events+=,syscalls:sys_enter_recvfrom,syscalls:sys_enter_writev,syscalls:sys_enter_mincore
events+=,syscalls:sys_enter_timer_settime
perf stat -x, -e "$events" -p "$server" -o "$root/stat.csv" -- sleep 4 &
stat=$!
sleep 0.3
requests=$(wrk -t2 -c32 -d3s "$url" | awk '/requests in/ {print $1}')
wait "$stat"
echo "$mode $(basename "$bin") $*: $requests requests"
awk -F, -v n="$requests" '$1 ~ /^[0-9]+$/ {printf "  %-36s %6.2f per request\n", $3, $1 / n}' "$root/stat.csv"
