#!/usr/bin/env bash
# Exact per-request counts of what a hand-off between threads costs the kernel: context
# switches and futex calls (plus the socket syscalls for scale), from `perf stat` on the
# release server under wrk. Counts, unlike timings, do not depend on how busy the machine
# is, which is why docs/benchmarks.md quotes them for the hand-off design. Also per thread
# role (PHP threads, tokio's): how often each slept and was preempted.
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
# Per thread role (the name without its number): voluntary switches (it slept), involuntary
# ones (it was preempted) and CPU, from /proc around the same window.
threads() {
  for t in /proc/"$server"/task/*; do
    printf '%s %s %s %s\n' "$(basename "$t")" "$(cat "$t/comm")" \
      "$(awk '/^voluntary_ctxt/ {v=$2} /^nonvoluntary_ctxt/ {n=$2} END {print v, n}' "$t/status")" \
      "$(awk '{print $14 + $15}' "$t/stat")"
  done | sort
}
threads >"$root/threads.before"
count_under_load "$events"
threads >"$root/threads.after"
awk -F, -v n="$requests" '$1 ~ /^[0-9]+$/ {printf "  %-36s %6.2f per request\n", $3, $1 / n}' "$root/stat.csv"
echo "  per thread role: slept (voluntary), preempted (involuntary), CPU"
join "$root/threads.before" "$root/threads.after" | awk -v n="$requests" -v tck="$(getconf CLK_TCK)" '
  { role = $2; sub(/[0-9]+$/, "", role)
    slept[role] += $7 - $3; preempted[role] += $8 - $4; cpu[role] += ($9 - $5) / tck }
  END { for (r in slept) if (cpu[r] > 0)
    printf "  %-20s %6.2f slept %6.2f preempted %7.2f us CPU per request\n", r, slept[r] / n, preempted[r] / n, cpu[r] * 1e6 / n }'
