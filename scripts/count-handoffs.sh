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
server=
trap '[[ -n $server ]] && { kill "$server" 2>/dev/null; wait "$server" 2>/dev/null; }; rm -rf "$root"' EXIT
# shellcheck source=scripts/lib/hello-server.sh
. scripts/lib/hello-server.sh
extra_args=("$@")
start_hello_server "$mode" "$bin" "$@"
events=context-switches,syscalls:sys_enter_futex,syscalls:sys_enter_epoll_wait
events+=,syscalls:sys_enter_recvfrom,syscalls:sys_enter_writev,syscalls:sys_enter_mincore
events+=,syscalls:sys_enter_timer_settime
count_under_load "$events"
awk -F, -v n="$requests" '$1 ~ /^[0-9]+$/ {printf "  %-36s %6.2f per request\n", $3, $1 / n}' "$root/stat.csv"
