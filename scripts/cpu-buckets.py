#!/usr/bin/env python3
"""Names where a request's CPU goes: reads `perf report --sort comm,dso,sym` output and
sums the samples into buckets (PHP engine, PHP glue, hand-offs, malloc, kernel network,
hyper/tokio, server glue), then scales them by the measured CPU per request.

    perf report -i perf.data --no-children --sort comm,dso,sym --stdio \
        | scripts/cpu-buckets.py US_PER_REQUEST

scripts/profile-hot-path.sh runs it; docs/benchmarks.md quotes its tables.
"""
import re
import sys

LINE = re.compile(r"^\s+([0-9.]+)%\s+(\S+)\s+(\S+)\s+\[(.)\]\s+(.*)$")

# Kernel symbols of waking, sleeping and switching threads: the price of a hand-off.
HANDOFF = re.compile(
    r"futex|wake|schedule|switch|_raw_spin_unlock_irq|pick_next|enqueue_|dequeue_|"
    r"select_task|update_curr|update_load|ttwu|psi_|set_next|put_prev|__switch_to|"
    r"native_sched_clock|sched_|cpuacct|reweight|idle|mwait|hrtimer|tick_"
)
MALLOC = re.compile(r"malloc|_int_free|cfree|free$|^free|tcache|realloc|calloc|consolidate|unlink_chunk")
MEMCPY = re.compile(r"memmove|memcpy|memset|memcmp|strlen")
RUNTIME = re.compile(r"^(<)?(hyper|tokio|hyper_util|http|h2|bytes|futures|httparse|mio|http_body|std|core|alloc|parking_lot|crossbeam)")


def bucket(comm, dso, kind, sym):
    php_thread = comm.startswith("php")
    if kind == "k":
        if HANDOFF.search(sym):
            return "wake/sleep/switch (kernel)"
        return "PHP thread: kernel (other)" if php_thread else "kernel: TCP, epoll, syscalls"
    if MALLOC.search(sym) and "libc" in dso:
        return "malloc/free"
    if MEMCPY.search(sym):
        return "memcpy/memset"
    if php_thread:
        if "libphp" in dso or "libxml" in dso or "libm" in dso or "libpcre" in dso:
            return "PHP thread: PHP engine (libphp)"
        if "libc" in dso:
            return "PHP thread: libc (other)"
        return "PHP thread: ferrophp glue (worker crate, shim)"
    if "libc" in dso or "vdso" in dso or "libm" in dso:
        return "I/O thread: libc (other)"
    if RUNTIME.search(sym):
        return "I/O thread: hyper, tokio, http, bytes"
    return "I/O thread: ferrophp glue (server crate)"


def main():
    us = float(sys.argv[1]) if len(sys.argv) > 1 else 100.0
    totals = {}
    for line in sys.stdin:
        m = LINE.match(line)
        if not m:
            continue
        pct, comm, dso, kind, sym = m.groups()
        b = bucket(comm, dso, kind, sym.strip())
        totals[b] = totals.get(b, 0.0) + float(pct)
    total = sum(totals.values()) or 1.0
    print(f"| where (perf samples) | share | us/request (of {us:.1f}) |")
    print("|---|---:|---:|")
    for b, pct in sorted(totals.items(), key=lambda kv: -kv[1]):
        print(f"| {b} | {pct / total * 100:.1f}% | {pct / total * us:.2f} |")


if __name__ == "__main__":
    main()
