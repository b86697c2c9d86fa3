#!/usr/bin/env bash
# Instructions per request of the release server on hello world (classic, one PHP thread)
# with tracing off, on but not sampled, and on with every request sampled (its server
# span exported to a local collector), counted by valgrind's callgrind over the same load
# window (wrk -t1 -c1, after a warm-up; counters zeroed before the window, dumped after).
# Instruction counts do not depend on what else runs on the machine, which the CPU times
# of benches/src/bin/trace_bench.rs do (docs/benchmarks.md, "Tracing"): this gives the
# same ratios without the noise. Every request carries the same `traceparent` (flags 01;
# the unsampled configuration uses OTEL_TRACES_SAMPLER=always_off).
#
# Usage: scripts/trace-instructions.sh [SECONDS]   (default 20; needs valgrind, wrk,
# python3 and target/release/ferrophp: cargo build --release -p ferrophp)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
window=${1:-20}
bin=target/release/ferrophp
[ -x "$bin" ] || { echo "missing $bin: cargo build --release -p ferrophp" >&2; exit 1; }
for tool in valgrind callgrind_control callgrind_annotate wrk python3 curl; do
    command -v "$tool" >/dev/null || { echo "missing $tool" >&2; exit 1; }
done
work=$(mktemp -d)
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# The collector: answers every POST with 200.
sink_port=$(free_port)
cat > "$work/sink.py" <<'EOF'
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200); self.send_header("Content-Length", "0"); self.end_headers()
    def log_message(self, *a): pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
EOF
python3 "$work/sink.py" "$sink_port" &
sink_pid=$!
server_pid=
cleanup() {
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
    kill "$sink_pid" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

traceparent="00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
declare -A per_request
measure() {
    local label=$1; shift
    local port; port=$(free_port)
    env "$@" valgrind --tool=callgrind --callgrind-out-file="$work/$label.out" \
        "$bin" serve --listen "127.0.0.1:$port" --root test-data/compare --threads 1 \
        --no-access-log --log warn >"$work/$label.log" 2>&1 &
    server_pid=$!
    for _ in $(seq 120); do
        curl -s -o /dev/null "http://127.0.0.1:$port/hello.php" && break
        sleep 1
    done
    for _ in $(seq 100); do
        curl -s -o /dev/null -H "traceparent: $traceparent" "http://127.0.0.1:$port/hello.php"
    done
    callgrind_control -z "$server_pid" >/dev/null 2>&1
    local requests
    requests=$(wrk -t1 -c1 -d"${window}s" -H "traceparent: $traceparent" \
        "http://127.0.0.1:$port/hello.php" | awk '/requests in/ {print $1}')
    callgrind_control -d "$server_pid" >/dev/null 2>&1
    sleep 1
    kill "$server_pid"; wait "$server_pid" 2>/dev/null || true
    server_pid=
    local total
    total=$(callgrind_annotate "$work/$label.out.1" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}')
    per_request[$label]=$((total / requests))
    echo "$label: $requests requests, $((total / requests)) instructions per request" >&2
}

measure off A=1
measure not-sampled OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$sink_port" OTEL_TRACES_SAMPLER=always_off
measure sampled OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$sink_port" OTEL_BSP_SCHEDULE_DELAY=100

off=${per_request[off]}
echo "| tracing | instructions per request | difference to off | ratio to off |"
echo "|---|---:|---:|---:|"
for label in off not-sampled sampled; do
    n=${per_request[$label]}
    python3 -c "print('| $label | {:,} | {:+,} | {:.3f} |'.format($n, $n - $off, $n / $off))"
done
