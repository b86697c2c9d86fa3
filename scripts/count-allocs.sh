#!/usr/bin/env bash
# Exact number of heap allocations per request in the server process under wrk: calls to
# libc's malloc, calloc, realloc and posix_memalign (Rust's System allocator uses the
# last for alignments above 16, tokio's task cells among them), counted with uprobes and
# `perf stat`. Like scripts/count-handoffs.sh, a count does not depend on how busy the
# machine is, so it measures allocation work where a timing could not. Allocations PHP
# makes through its own allocator (emalloc) are not malloc calls and do not show here.
#
#   scripts/count-allocs.sh [--callers] [worker|classic] [BINARY] [extra ferrophp args...]
#
# --callers records a call graph of every ALLOCS_SAMPLE_PERIOD-th call (default 10,
# DWARF unwinding: the release build has no frame pointers) and prints the call sites
# with their calls per request: the first frames outside the allocator and the
# collections that call it. Needs root (uprobes), perf (linux-perf) and wrk
# (scripts/install-test-deps.sh installs both).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
callers=0
if [[ ${1:-} == --callers ]]; then
  callers=1
  shift
fi
mode=${1:-worker}
bin=${2:-target/release/ferrophp}
shift $(($# < 2 ? $# : 2))
period=${ALLOCS_SAMPLE_PERIOD:-10}
case $mode in
  worker | classic) ;;
  *)
    echo "usage: $0 [--callers] [worker|classic] [BINARY] [extra ferrophp args...]" >&2
    exit 2
    ;;
esac
libc=$(ldd "$bin" | awk '$1 ~ /^libc\.so/ {print $3}')
[[ -n $libc ]] || { echo "count-allocs: $bin does not link libc dynamically" >&2; exit 1; }
# perf probe and uprobe events need tracefs (a fresh VM may not have it mounted).
if [[ ! -e /sys/kernel/tracing/uprobe_events ]]; then
  mount -t tracefs nodev /sys/kernel/tracing
fi

root=$(mktemp -d)
# A probe group of our own, so concurrent runs and other probes on libc stay untouched.
group=count_allocs_$$
server=
cleanup() {
  [[ -n $server ]] && { kill "$server" 2>/dev/null; wait "$server" 2>/dev/null || true; }
  perf probe -q -d "$group:*" 2>/dev/null || true
  rm -rf "$root"
}
trap cleanup EXIT
functions=(malloc calloc realloc posix_memalign free)
for f in "${functions[@]}"; do
  perf probe -q -x "$libc" -a "$group:$f=$f"
done

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
for _ in $(seq 100); do curl -fs -o /dev/null "$url" && break; sleep 0.1; done
# Warm-up: connections, thread caches and buffers reach their steady state first.
wrk -t2 -c32 -d1s "$url" >/dev/null

events=$(printf "$group:%s," "${functions[@]}")
events=${events%,}
if ((callers == 0)); then
  perf stat -x, -e "$events" -p "$server" -o "$root/stat.csv" -- sleep 4 &
  stat=$!
  sleep 0.3
  requests=$(wrk -t2 -c32 -d3s "$url" | awk '/requests in/ {print $1}')
  wait "$stat"
  echo "$mode $(basename "$bin") $*: $requests requests"
  awk -F, -v n="$requests" -v g="$group:" '$1 ~ /^[0-9]+$/ {
      name = $3; sub(g, "", name)
      printf "  %-16s %8.2f per request\n", name, $1 / n
      if (name != "free") allocs += $1
    }
    END { printf "  %-16s %8.2f per request\n", "allocations", allocs / n }' "$root/stat.csv"
  exit 0
fi

# Call sites: a short run (DWARF call graphs are large), every $period-th call sampled.
alloc_events=$(printf "$group:%s," malloc calloc realloc posix_memalign)
perf record -q -c "$period" --call-graph dwarf,16384 -e "${alloc_events%,}" -p "$server" \
  -o "$root/perf.data" -- sleep 2.3 >/dev/null 2>&1 &
record=$!
sleep 0.3
requests=$(wrk -t2 -c32 -d1s "$url" | awk '/requests in/ {print $1}')
wait "$record" || true
echo "$mode $(basename "$bin") $*: $requests requests, every ${period}th allocation's caller"
perf script -i "$root/perf.data" -F comm,event,ip,sym 2>/dev/null |
  python3 - "$requests" "$period" <<'EOF'
import collections, re, sys

requests, period = int(sys.argv[1]), int(sys.argv[2])
# Frames that only pass the allocation on: the allocator itself, Rust's alloc plumbing,
# and the collections whose growth is their caller's doing.
plumbing = re.compile(
    r"^(malloc|calloc|realloc|posix_memalign|__libc_|_int_|__rust_|__rdl_|__rg_|"
    r"alloc::|<alloc::|core::ptr::|<core::|std::alloc::|std::sys::|hashbrown::|"
    r"<hashbrown::|bytes::|<bytes::|smallvec::|<smallvec::|\[unknown\])"
)
sites, threads, total = collections.Counter(), collections.Counter(), 0

def flush(comm, frames):
    global total
    if comm is None:
        return
    total += 1
    threads[re.sub(r"-?\d+$", "", comm)] += 1
    useful = [f for f in frames if not plumbing.match(f)]
    sites[" <- ".join(useful[:3]) or " <- ".join(frames[:3])] += 1

comm, frames = None, []
for line in sys.stdin:
    line = line.rstrip("\n")
    if not line.strip():
        flush(comm, frames)
        comm, frames = None, []
    elif line.startswith((" ", "\t")):
        parts = line.split(None, 1)
        if len(parts) == 2:
            name = re.sub(r"\+0x[0-9a-f]+$", "", parts[1].split(" (")[0])
            frames.append(re.sub(r"::h[0-9a-f]{16}$", "", name))
    else:
        comm, frames = line.split()[0], []
flush(comm, frames)

scale = period / requests
print(f"  {total * scale:8.2f} allocations per request (sampled)")
print("  by thread:")
for name, n in threads.most_common():
    print(f"  {n * scale:8.2f}  {name}")
print("  by call site (first frames outside the allocator and collections):")
for site, n in sites.most_common(40):
    print(f"  {n * scale:8.2f}  {site}")
EOF
