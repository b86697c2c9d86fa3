#!/usr/bin/env python3
"""UserCache benchmark against APCu (serializer=php and igbinary) and a copy-on-read
reference, in one command:

    python3 benches/cache/bench.py [--runs 5] [--quick]

Builds the anchors (benches/cache/build-extensions.sh), the release binary, runs every
backend `--runs` times per workload (CPU-pinned with taskset when possible), and writes
benches/cache/results.json and docs/cache-benchmark.md (JSON embedded). Yac is included
when build-extensions.sh could build it: from Debian's php-yac source package, or from
YAC_SRC=<directory with Yac's source> when the package's tarball is not available.
"""
import argparse, json, math, os, re, shutil, statistics, subprocess, sys, time, socket

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
BIN = os.path.join(ROOT, 'target', 'release', 'ferrophp')
WORKLOADS = os.path.join(ROOT, 'benches', 'cache', 'workloads.php')
HTTP_ROOT = os.path.join(ROOT, 'benches', 'cache', 'http')


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout


def pin(cpu):
    return ['taskset', '-c', str(cpu)] if shutil.which('taskset') else []


def backends(ext):
    b = {
        'usercache': ([], 'usercache'),
        'usercache_aa': ([], 'usercache'),  # A/A: the same backend again, the noise floor
        'copy_on_read': ([], 'usercache_copy'),
        'apcu_php': (['-d', f'extension={ext}/apcu.so', '-d', 'apc.enable_cli=1', '-d', 'apc.serializer=php'], 'apcu'),
        'apcu_igbinary': (['-d', f'extension={ext}/igbinary.so', '-d', f'extension={ext}/apcu.so', '-d', 'apc.enable_cli=1', '-d', 'apc.serializer=igbinary'], 'apcu'),
        'resident': ([], 'resident'),
    }
    if os.path.exists(f'{ext}/yac.so'):
        b['yac'] = (['-d', f'extension={ext}/yac.so', '-d', 'yac.enable_cli=1'], 'yac')
    return b


def cli_runs(ext, runs):
    """Interleaved rounds: each round runs every backend once, so a slow spell of this
    shared machine hits all backends alike instead of one backend's runs."""
    out = {name: [] for name in backends(ext)}
    for r in range(runs):
        for name, (ini, backend) in backends(ext).items():
            res = json.loads(sh(pin(1) + [BIN, 'php-cli', '-n', '-d', 'memory_limit=1G'] + ini + [WORKLOADS, backend]))
            if backend == 'apcu':
                assert res['serializer'] == ini[-1].split('=')[1], res['serializer']
            out[name].append(res)
        print(f'  round {r + 1}/{runs} done', file=sys.stderr)
    return out


def free_port():
    s = socket.socket(); s.bind(('127.0.0.1', 0)); p = s.getsockname()[1]; s.close(); return p


def http_runs(ext, runs, secs):
    """One fetch per request and hot read over HTTP: wrk req/s, servers pinned to CPU 1,
    wrk to CPU 0. Every backend's server runs (idle) for the whole measurement and rounds
    are interleaved, as for the CLI runs."""
    servers = {}
    try:
        for name, (ini, backend) in backends(ext).items():
            if backend == 'resident' or name == 'usercache_aa':
                continue
            port = free_port()
            cmd = pin(1) + [BIN, 'serve', '--root', HTTP_ROOT, '--listen', f'127.0.0.1:{port}', '--threads', '2', '--no-access-log', '--log', 'error'] + ini
            srv = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            srv.stdout.readline()
            servers[name] = (srv, port, backend)
            for wl in ['fetch', 'hot']:
                sh(['curl', '-s', f'http://127.0.0.1:{port}/{wl}.php?b={backend}'])
        out = {name: {'http_fetch': [], 'http_hot': []} for name in servers}
        for r in range(runs):
            for name, (_, port, backend) in servers.items():
                for wl in ['fetch', 'hot']:
                    o = sh(pin(0) + ['wrk', '-t1', '-c8', f'-d{secs}s', f'http://127.0.0.1:{port}/{wl}.php?b={backend}'])
                    out[name][f'http_{wl}'].append(float(re.search(r'Requests/sec:\s+([\d.]+)', o).group(1)))
            print(f'  http round {r + 1}/{runs} done', file=sys.stderr)
        return out
    finally:
        for srv, _, _ in servers.values():
            srv.terminate(); srv.wait()


def summarize(cli, http):
    med = {}
    for name, samples in cli.items():
        for wl in samples[0]['results']:
            med.setdefault(name, {})[wl] = statistics.median(s['results'][wl]['ns_per_op'] for s in samples)
        med[name]['cache_memory_bytes'] = samples[0].get('cache_memory')
        for wl in samples[0]['results']:
            if 'request_mem_bytes' in samples[0]['results'][wl]:
                med[name]['reqmem:' + wl] = samples[0]['results'][wl]['request_mem_bytes']
    http_med = {n: {wl: statistics.median(v) for wl, v in r.items()} for n, r in http.items()}
    speed = {}
    for anchor in ['apcu_igbinary', 'apcu_php', 'copy_on_read', 'usercache_aa'] + (['yac'] if 'yac' in med else []):
        s = {}
        for wl, ns in med['usercache'].items():
            if wl.startswith(('read:', 'hot_read', 'bulk_', 'store:')) and wl in med[anchor]:
                s[wl] = med[anchor][wl] / ns
        for wl, rps in http_med.get('usercache', {}).items():
            if anchor in http_med:
                s[wl] = rps / http_med[anchor][wl]
        fetch_keys = [k for k in s if not k.startswith('store:')]
        s['geomean_fetch'] = math.exp(sum(math.log(s[k]) for k in fetch_keys) / len(fetch_keys))
        speed[anchor] = s
    resident = {wl: med['usercache'][wl] / med['resident'][wl] for wl in med['resident'] if wl.startswith('read:')}
    floor = {wl: med['resident']['floor:' + wl[5:]] / med['resident'][wl] for wl in resident}
    targets = {
        'geomean_vs_apcu_igbinary_ge_5x': speed['apcu_igbinary']['geomean_fetch'] >= 5,
        'array_1000_vs_apcu_igbinary_ge_100x': speed['apcu_igbinary']['read:array_1000'] >= 100,
        'fetchMultiple_128_vs_apcu_fetch_array_ge_5x': med['apcu_igbinary']['bulk_multi:128'] / med['usercache']['bulk_multi:128'] >= 5,
        'fetch_plus_access_within_1_5x_of_resident': {wl: r <= 1.5 for wl, r in resident.items()},
        'reads_beat_every_anchor_on_every_workload': {
            a: all(v > 1 for k, v in speed[a].items() if not k.startswith('store:') and k != 'geomean_fetch')
            for a in ['apcu_php', 'apcu_igbinary', 'yac'] if a in speed},
    }
    return {'median_ns_per_op': med, 'http_req_per_s': http_med, 'speedup': speed,
            'fetch_vs_resident_ratio': resident, 'call_floor_vs_resident_ratio': floor, 'targets': targets}


def report(data):
    s = data['summary']
    med = s['median_ns_per_op']
    names = [n for n in med if n != 'resident']
    wls = [w for w in med['usercache'] if not w.startswith(('reqmem:', 'cache_memory'))]
    lines = ['# UserCache benchmark', '',
             f"Generated by `python3 benches/cache/bench.py` on {data['when']} ({data['runs']} runs per backend, medians; "
             f"CPU pinned with taskset: {data['pinned']}). PHP {data['php']}, APCu and igbinary built from Debian bookworm "
             "source packages with our phpize. Yac: " + (f"included ({data.get('yac_source', 'built')})" if 'yac' in med else 'not built (no source: see build-extensions.sh)') + '.', '',
             'Every backend runs the same loops with direct calls (`\\UserCache\\Cache::fetch($key)`, `apcu_fetch($key)`, `$yac->get($key)`).', '',
             'Lower is better (ns per operation; bulk rows are per bulk read of N keys). The speedup columns divide the anchor by UserCache.', '',
             '| workload | ' + ' | '.join(names) + ' | resident | x vs APCu/igbinary | x vs APCu/php | ' + ('x vs Yac | ' if 'yac' in med else '') + 'x vs copy-on-read | A/A |',
             '|---' * (len(names) + 6 + ('yac' in med)) + '|']
    for wl in wls:
        row = [f'{med[n].get(wl, float("nan")):.0f}' for n in names]
        res = med['resident'].get(wl)
        sp = s['speedup']
        lines.append(f'| {wl} | ' + ' | '.join(row) + f" | {'' if res is None else f'{res:.0f}'} | "
                     f"{sp['apcu_igbinary'].get(wl, float('nan')):.1f} | {sp['apcu_php'].get(wl, float('nan')):.1f} | "
                     + (f"{sp['yac'].get(wl, float('nan')):.1f} | " if 'yac' in sp else '')
                     + f"{sp['copy_on_read'].get(wl, float('nan')):.1f} | {sp['usercache_aa'].get(wl, float('nan')):.2f} |")
    lines += ['', '## HTTP (requests/s, wrk -t1 -c8, server on 2 PHP threads)', '',
              '| workload | ' + ' | '.join(s['http_req_per_s']) + ' |', '|---' * (len(s['http_req_per_s']) + 1) + '|']
    for wl in ['http_fetch', 'http_hot']:
        lines.append(f'| {wl} | ' + ' | '.join(f"{s['http_req_per_s'][n].get(wl, 0):.0f}" for n in s['http_req_per_s']) + ' |')
    lines += ['', '## Geometric mean of fetch speedups', '']
    for a, sp in s['speedup'].items():
        lines.append(f"- vs {a}: **{sp['geomean_fetch']:.1f}x**")
    lines += ['', 'The A/A row (`usercache_aa`: the same backend run again) shows the noise floor: ratios near 1.00.', '',
              '## Memory', '', 'Request memory growth per read workload (bytes, one run) and cache memory after the run:', '',
              '| | ' + ' | '.join(names) + ' |', '|---' * (len(names) + 1) + '|']
    for wl in [w for w in med['usercache'] if w.startswith('reqmem:')]:
        lines.append(f'| {wl[7:]} | ' + ' | '.join(str(med[n].get(wl, '')) for n in names) + ' |')
    lines.append('| cache memory | ' + ' | '.join(str(med[n].get('cache_memory_bytes')) for n in names) + ' |')
    lines += ['', '## Fetch + access vs the same value resident in the request', '',
              'The floor column is the resident loop plus one internal function call (`str_contains($key, ...)`): '
              'what any function-call API costs before doing anything.', '',
              '| workload | UserCache fetch + access / resident | call floor / resident |', '|---|---|---|']
    for wl, r in s['fetch_vs_resident_ratio'].items():
        lines.append(f"| {wl} | {r:.2f} | {s['call_floor_vs_resident_ratio'][wl]:.2f} |")
    lines += ['', '## Targets', '', '```', json.dumps(s['targets'], indent=2), '```', '',
              '## Raw data', '', '```json', json.dumps(data, indent=1), '```', '']
    return '\n'.join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--runs', type=int, default=5)
    ap.add_argument('--http-secs', type=int, default=3)
    ap.add_argument('--no-http', action='store_true')
    a = ap.parse_args()
    ext = sh(['bash', os.path.join(ROOT, 'benches/cache/build-extensions.sh')]).strip().splitlines()[-1]
    subprocess.run(['cargo', 'build', '--release', '-p', 'ferrophp'], cwd=ROOT, check=True)
    php = 'PHP 8.2.32 ZTS (ferrophp php-cli / serve, release build)'
    cli = cli_runs(ext, a.runs)
    http = {} if a.no_http else http_runs(ext, a.runs, a.http_secs)
    data = {'when': time.strftime('%Y-%m-%d %H:%M:%S'), 'runs': a.runs, 'pinned': bool(pin(0)), 'php': php,
            'extensions': ext, 'cli': cli, 'http': http}
    if os.environ.get('YAC_SRC'):
        data['yac_source'] = 'built from YAC_SRC, the upstream source ' + sh(['grep', '-h', 'define PHP_YAC_VERSION', os.path.join(os.environ['YAC_SRC'], 'php_yac.h')]).split()[-1]
    data['summary'] = summarize(cli, http)
    with open(os.path.join(ROOT, 'benches/cache/results.json'), 'w') as f:
        json.dump(data, f, indent=1)
    with open(os.path.join(ROOT, 'docs/cache-benchmark.md'), 'w') as f:
        f.write(report(data))
    print(json.dumps(data['summary']['speedup'], indent=1))
    print(json.dumps(data['summary']['targets'], indent=1))


if __name__ == '__main__':
    main()
