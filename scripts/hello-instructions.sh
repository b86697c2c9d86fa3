#!/usr/bin/env bash
# Instructions per hello-world request (worker: /worker.php/hello on one worker thread;
# classic: /hello.php on one PHP thread) of one or more ferrophp binaries, counted by
# valgrind's callgrind over the same kind of load window: 200 warm-up requests, counters
# zeroed, `wrk -t1 -c1` for SECONDS, counters dumped (libphp.so included). Instruction
# counts do not depend on what else runs on the machine, so an A/B of two builds is
# level or not within a few hundred instructions (docs/benchmarks.md quotes the method).
#
# Usage: scripts/hello-instructions.sh [-s SECONDS] [-m worker|classic|both] NAME=BINARY...
#   e.g. scripts/hello-instructions.sh base=/tmp/ferrophp-base new=target/release/ferrophp
# Needs valgrind, wrk, curl and python3.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
window=6
modes=(worker classic)
while getopts "s:m:" opt; do
    case $opt in
    s) window=$OPTARG ;;
    m) [[ $OPTARG == both ]] || modes=("$OPTARG") ;;
    *) exit 2 ;;
    esac
done
shift $((OPTIND - 1))
(($#)) || { sed -n '2,10p' "$0" >&2; exit 2; }
for tool in valgrind callgrind_control callgrind_annotate wrk python3 curl; do
    command -v "$tool" >/dev/null || { echo "missing $tool" >&2; exit 1; }
done
work=$(mktemp -d)
server_pid=
cleanup() {
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
root=test-data/compare

# measure LABEL BINARY MODE: prints instructions per request.
measure() {
    local label=$1 bin=$2 mode=$3 port url args
    port=$(free_port)
    case $mode in
    worker)
        args=(--worker "$root/worker.php,1")
        url="http://127.0.0.1:$port/worker.php/hello" ;;
    classic)
        args=()
        url="http://127.0.0.1:$port/hello.php" ;;
    esac
    valgrind --tool=callgrind --callgrind-out-file="$work/$label-$mode.out" \
        "$bin" serve --listen "127.0.0.1:$port" --root "$root" --threads 1 \
        --no-access-log --log warn "${args[@]}" >"$work/$label-$mode.log" 2>&1 &
    server_pid=$!
    for _ in $(seq 120); do
        curl -fs -o /dev/null "$url" && break
        sleep 1
    done
    for _ in $(seq 200); do curl -s -o /dev/null "$url"; done
    callgrind_control -z "$server_pid" >/dev/null 2>&1
    local requests
    requests=$(wrk -t1 -c1 -d"${window}s" "$url" | awk '/requests in/ {print $1}')
    callgrind_control -d "$server_pid" >/dev/null 2>&1
    sleep 1
    kill "$server_pid"
    wait "$server_pid" 2>/dev/null || true
    server_pid=
    local total
    total=$(callgrind_annotate "$work/$label-$mode.out.1" 2>/dev/null |
        awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}')
    echo "$label $mode: $requests requests, $((total / requests)) instructions per request" >&2
    echo $((total / requests))
}

echo "| build | mode | instructions per request |"
echo "|---|---|---:|"
for mode in "${modes[@]}"; do
    for spec in "$@"; do
        label=${spec%%=*}
        bin=${spec#*=}
        [ -x "$bin" ] || { echo "not an executable: $bin" >&2; exit 1; }
        n=$(measure "$label" "$bin" "$mode")
        python3 -c "print('| $label | $mode | {:,} |'.format($n))"
    done
done
