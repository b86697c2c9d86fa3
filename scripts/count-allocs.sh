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
# --callers records the call graph of every call for a second of load (DWARF
# unwinding: the release build has no frame pointers) and prints the call sites with
# their calls per request: the first frames outside the allocator and the collections
# that call it. Needs root (uprobes), perf (linux-perf) and wrk
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
  [[ -n ${ALLOCS_KEEP:-} ]] && cp -r "$root" "$ALLOCS_KEEP"; rm -rf "$root"
}
trap cleanup EXIT
functions=(malloc calloc realloc posix_memalign free)
for f in "${functions[@]}"; do
  perf probe -q -x "$libc" -a "$group:$f=$f"
done

# shellcheck source=scripts/lib/hello-server.sh
. scripts/lib/hello-server.sh
extra_args=("$@")
start_hello_server "$mode" "$bin" "$@"

events=$(printf "$group:%s," "${functions[@]}")
events=${events%,}
alloc_events=${events%,"$group":free}
if ((callers == 0)); then
  count_under_load "$events"
  awk -F, -v n="$requests" -v g="$group:" '$1 ~ /^[0-9]+$/ {
      name = $3; sub(g, "", name)
      printf "  %-16s %8.2f per request\n", name, $1 / n
      if (name != "free") allocs += $1
    }
    END { printf "  %-16s %8.2f per request\n", "allocations", allocs / n }' "$root/stat.csv"
  exit 0
fi

# Call sites: perf ignores a sampling period on uprobes, so every call is recorded, with
# its stack (DWARF: large), for a short run; perf stat counts the same window exactly,
# and each call site gets its share of that count (samples perf lost do not skew it).
perf stat -x, -e "$events" -p "$server" -o "$root/stat.csv" -- sleep 2.1 &
stat=$!
perf record -q -m 2048 --call-graph dwarf,8192 -e "$alloc_events" -p "$server" \
  -o "$root/perf.data" -- sleep 2 >/dev/null 2>&1 &
record=$!
sleep 0.3
requests=$(wrk -t2 -c32 -d1s "$url" | awk '/requests in/ {print $1}')
wait "$record" || true
wait "$stat"
allocs=$(awk -F, -v g="$group:" '$1 ~ /^[0-9]+$/ && $3 != g "free" {n += $1} END {print n}' "$root/stat.csv")
echo "$mode $(basename "$bin") $*: $requests requests, $allocs allocations"
cat >"$root/callers.py" <<'EOF'
import collections, re, sys

requests, allocs = int(sys.argv[1]), int(sys.argv[2])
# Frames that only pass the allocation on: the allocator, Rust's alloc plumbing, and the
# collections (Vec, String, Box, Arc) whose growth is their caller's doing.
plumbing = re.compile(
    r"^(_*(GI_+)?(libc_)?(malloc|calloc|realloc|posix_memalign)|_int_|__rust|__rdl_|"
    r"__rustc::|<?std::alloc::|std::sys::|<?alloc::|<?core::|alloc_impl|allocate|"
    r"box_new|try_allocate_in|with_capacity|to_vec|to_owned|to_string|grow|reserve|"
    r"finish_grow|do_reserve|exchange_malloc|from_iter|extend|spec_|push|clone<u8|"
    r"<\[u8\]>|<u8 as|<T as alloc|<str as|\[unknown\])"
)


def named(frame):
    """A function with a path (not an anonymous async block or closure)."""
    bare = re.sub(r"<[^<>]*>", "", re.sub(r"<[^<>]*>", "", frame))
    return "::" in bare and not frame.startswith("{")


sites, threads, total = collections.Counter(), collections.Counter(), 0


def flush(comm, groups):
    global total
    if comm is None:
        return
    total += 1
    threads[re.sub(r"-?\d+$", "", comm)] += 1
    # perf prints each address's function first, then the calls inlined into it from the
    # innermost out: innermost first overall is the inlined frames, then the function.
    frames = []
    for group in groups:
        inlined = [f for f, i in group if i]
        frames += inlined + [f for f, i in group if not i]
    useful = [f for f in frames if not plumbing.match(f)]
    if not useful:
        sites[" <- ".join(frames[:2])] += 1
        return
    detail = useful[0]
    owner = next((f for f in useful if named(f)), None)
    site = detail if named(detail) or owner is None else f"{detail} in {owner}"
    sites[site[:200]] += 1


comm, groups, last_ip = None, [], None
for line in sys.stdin:
    line = line.rstrip("\n")
    if not line.strip():
        flush(comm, groups)
        comm, groups, last_ip = None, [], None
    elif line.startswith((" ", "\t")):
        parts = line.split(None, 1)
        if len(parts) != 2:
            continue
        ip, name = parts
        inlined = name.endswith(" (inlined)")
        name = re.sub(r" \(inlined\)$", "", name)
        name = re.sub(r"::h[0-9a-f]{16}$", "", re.sub(r"\+0x[0-9a-f]+$", "", name))
        if ip != last_ip:
            groups.append([])
            last_ip = ip
        groups[-1].append((name, inlined))
    else:
        comm, groups, last_ip = line.split()[0], [], None
flush(comm, groups)

if total == 0:
    sys.exit("count-allocs: no call graph recorded")
scale = allocs / total / requests
print(f"  {allocs / requests:8.2f} allocations per request, {total} call graphs recorded")
print("  by thread:")
for name, n in threads.most_common():
    print(f"  {n * scale:8.2f}  {name}")
print("  by call site (first frame outside the allocator and collections, in its function):")
for site, n in sites.most_common(40):
    if n * scale >= 0.005:
        print(f"  {n * scale:8.2f}  {site}")
EOF
perf script -i "$root/perf.data" -F comm,event,ip,sym 2>/dev/null |
  python3 "$root/callers.py" "$requests" "$allocs"
