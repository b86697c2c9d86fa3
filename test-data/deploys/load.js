// Load for server/tests/deploys.rs: GET TARGET_URL at a constant arrival rate while the
// test switches releases at planned moments, and judge every response.
//
//   TARGET_URL   the endpoint (each release answers `release N` with X-Release: N)
//   RATE         requests per second; DURATION (k6 duration) how long
//   SWITCHES     comma-separated Unix times in ms at which releases FIRST+1, FIRST+2, ...
//                go live
//   DRAIN_MS     after a switch, how long a request may still be answered by an older
//                release (requests in flight, workers still rolling over)
//   WINDOW_MS    requests started this long after a switch count as "during a switch"
//   STEADY_FROM  Unix time in ms before which nothing is measured (warm-up)
//   FIRST        the release serving before the first switch (1 unless the server went
//                through earlier runs)
//
// Counted: `wrong_responses` (not a 200, or a body that does not match its X-Release
// header, or a document root or script path of another release than the code that
// ran), `stale_responses`
// (a release older than the switches allowed), `future_responses` (a release newer than
// any switch made: a broken test). Latency goes to `steady_duration` (outside any switch
// window) or `switching_duration` (inside one); both since STEADY_FROM.
import http from 'k6/http';
import { Counter, Trend } from 'k6/metrics';

const url = __ENV.TARGET_URL;
const switches = (__ENV.SWITCHES || '').split(',').filter((s) => s !== '').map(Number);
const drain = Number(__ENV.DRAIN_MS || 1000);
const windowMs = Number(__ENV.WINDOW_MS || 1500);
const steadyFrom = Number(__ENV.STEADY_FROM || 0);
const first = Number(__ENV.FIRST || 1);

export const options = {
  discardResponseBodies: false,
  scenarios: {
    deploys: {
      executor: 'constant-arrival-rate',
      rate: Number(__ENV.RATE || 100),
      timeUnit: '1s',
      duration: __ENV.DURATION || '30s',
      preAllocatedVUs: Number(__ENV.VUS || 64),
      maxVUs: Number(__ENV.MAX_VUS || 512),
    },
  },
  summaryTrendStats: ['count', 'avg', 'med', 'p(99)', 'max'],
};

const steady = new Trend('steady_duration', true);
const switching = new Trend('switching_duration', true);
const wrong = new Counter('wrong_responses');
const stale = new Counter('stale_responses');
const future = new Counter('future_responses');
const served = new Counter('judged_responses');

export default function () {
  const started = Date.now();
  const res = http.get(url);
  const ended = Date.now();
  // A run ended early on purpose (SIGINT: server/tests/deploys.rs stops the load when a
  // Docker rolling update is done) cancels the requests in flight: not the server's doing.
  if (res.status === 0 && String(res.error).includes('context canceled')) return;
  const release = Number(res.headers['X-Release']);
  if (
    res.status !== 200 ||
    !(release > 0) ||
    res.body !== `release ${release}\n` ||
    res.headers['X-Root-Release'] !== String(release) ||
    res.headers['X-Script-Release'] !== String(release)
  ) {
    wrong.add(1);
    // Each failure is reported (there should be none): the status, k6's error, and when.
    console.warn(
      `wrong response at ${started} (+${ended - started} ms): status ${res.status} ` +
        `error ${res.error} headers ${JSON.stringify(res.headers)} body ${JSON.stringify(res.body)}`,
    );
    return;
  }
  served.add(1);
  const oldest = first + switches.filter((s) => s + drain <= started).length;
  const newest = first + switches.filter((s) => s <= ended).length;
  if (release < oldest) {
    stale.add(1);
    if (__ENV.VERBOSE) console.warn(`stale: release ${release} at ${started}, expected >= ${oldest}`);
  }
  if (release > newest) future.add(1);
  if (started < steadyFrom) return;
  const inWindow = switches.some((s) => started >= s && started < s + windowMs);
  (inWindow ? switching : steady).add(res.timings.duration);
}
