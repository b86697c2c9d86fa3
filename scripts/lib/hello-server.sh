# Sourced by the per-request counting scripts (count-handoffs.sh, count-allocs.sh): the one
# way they start the server they measure and count events under load.
#
# start_hello_server MODE BINARY [extra ferrophp args...]
#   Serves a copy of test-data/compare in $root (made if unset) with BINARY, 4 PHP threads
#   and, in worker mode, a 4-thread worker, on a free loopback port; waits until hello
#   world answers and warms it up (connections, thread caches and buffers reach their
#   steady state first). Sets root, url and server (the pid); the caller stops $server
#   and removes $root in its own EXIT trap. Run from the repository root.
start_hello_server() {
  local mode=$1 bin=$2
  shift 2
  root=${root:-$(mktemp -d)}
  cp -r test-data/compare/. "$root"
  local port
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  local args=(serve --no-access-log --log warn --listen "127.0.0.1:$port" --root "$root" --threads 4 "$@")
  if [[ $mode == worker ]]; then
    args+=(--worker "$root/worker.php,4")
    url="http://127.0.0.1:$port/worker.php/hello"
  else
    url="http://127.0.0.1:$port/hello.php"
  fi
  "$bin" "${args[@]}" >/dev/null 2>&1 &
  server=$!
  for _ in $(seq 100); do curl -fs -o /dev/null "$url" && break; sleep 0.1; done
  wrk -t2 -c32 -d1s "$url" >/dev/null
}

# count_under_load EVENTS
#   `perf stat` of EVENTS (comma-separated) on $server while wrk loads $url for 3 s;
#   writes $root/stat.csv (perf's -x, format), sets requests (what wrk completed) and
#   prints the heading line. Call after start_hello_server.
count_under_load() {
  perf stat -x, -e "$1" -p "$server" -o "$root/stat.csv" -- sleep 4 &
  local stat=$!
  sleep 0.3
  requests=$(wrk -t2 -c32 -d3s "$url" | awk '/requests in/ {print $1}')
  wait "$stat"
  echo "$mode $(basename "$bin") ${extra_args[*]}: $requests requests"
}
