// Load for server/tests/swarm.rs: the project's own request (test-data/load-test.js: a
// 4,000-byte POST echoed back, Firefox-like headers, a 40-cookie Cookie header) at a
// constant arrival rate, and beside it logged-in users of the session demo
// (test-data/swarm/app) whose every page view is judged, while the test updates, kills or
// restarts things at a planned moment.
//
//   BASE_URL         the stack's published port, e.g. http://127.0.0.1:8080
//   PREFIX           where the demo is mounted (/swarm)
//   RATE, DURATION   echo requests per second, and how long (VUS, MAX_VUS: k6's pool)
//   SESSIONS         logged-in users (VUs), each viewing page.php every PAUSE_MS over a
//                    new connection, so that its requests move between replicas
//   EVENT_AT         Unix time in ms of the event: requests started before it count as
//                    "before", the others as "during"
//   WARM_UP_MS       requests started this long after the start are not measured
//
// Counted:
//   echo_failed        an echo request without a 200 or with another body than sent
//   session_failed     a page view without a 200 (500 "session store unavailable" is
//                      session_unavailable too; k6 errors and anything else are not)
//   sessions_lost      a logged-in user who got 401 (logged out), another user, or a
//                      counter that did not go up: the session or an update of it was lost
//   session_moves      page views served by another instance than the user's previous one
//   logins, login_failed
// Latency: echo_before/echo_during and session_before/session_during. The Trends
// *_failed_at / session_ok_at hold Unix times in ms, so that the summary's min and max say
// when the first and last failure (and the last good page view) happened.
import http from 'k6/http';
import { sleep } from 'k6';
import { Counter, Trend } from 'k6/metrics';
import { payload, params } from '../load-test.js';

const base = __ENV.BASE_URL;
const prefix = __ENV.PREFIX || '/swarm';
const eventAt = Number(__ENV.EVENT_AT || 0);
const sessions = Number(__ENV.SESSIONS || 0);
const pauseMs = Number(__ENV.PAUSE_MS || 100);
const duration = __ENV.DURATION || '30s';
const measureFrom = Date.now() + Number(__ENV.WARM_UP_MS || 0);

const scenarios = {
  echo: {
    executor: 'constant-arrival-rate',
    exec: 'echo',
    rate: Number(__ENV.RATE || 100),
    timeUnit: '1s',
    duration,
    preAllocatedVUs: Number(__ENV.VUS || 64),
    maxVUs: Number(__ENV.MAX_VUS || 512),
  },
};
if (sessions > 0) {
  scenarios.sessions = { executor: 'constant-vus', exec: 'session', vus: sessions, duration };
}

export const options = {
  scenarios,
  // A user keeps its session cookie across iterations (k6 empties the jar after each
  // one by default).
  noCookiesReset: true,
  summaryTrendStats: ['count', 'min', 'med', 'p(99)', 'max'],
};

const echoFailed = new Counter('echo_failed');
const echoFailedAt = new Trend('echo_failed_at');
const echoBefore = new Trend('echo_before', true);
const echoDuring = new Trend('echo_during', true);
const sessionRequests = new Counter('session_requests');
const sessionFailed = new Counter('session_failed');
const sessionUnavailable = new Counter('session_unavailable');
const sessionFailedAt = new Trend('session_failed_at');
const sessionOkAt = new Trend('session_ok_at');
const sessionsLost = new Counter('sessions_lost');
const sessionMoves = new Counter('session_moves');
const sessionBefore = new Trend('session_before', true);
const sessionDuring = new Trend('session_during', true);
const logins = new Counter('logins');
const loginFailed = new Counter('login_failed');

// A run ended on purpose (SIGINT from the test) cancels the requests in flight: not the
// servers' doing.
function canceled(res) {
  return res.status === 0 && String(res.error).includes('context canceled');
}

function timing(started, res, before, during) {
  if (started < measureFrom) return;
  (eventAt && started >= eventAt ? during : before).add(res.timings.duration);
}

export function echo() {
  const started = Date.now();
  const res = http.post(`${base}${prefix}/echo.php`, payload, params);
  if (canceled(res)) return;
  if (res.status !== 200 || res.body !== payload) {
    echoFailed.add(1);
    echoFailedAt.add(started);
    console.warn(`echo failed at ${started}: status ${res.status} error ${res.error}`);
    return;
  }
  timing(started, res, echoBefore, echoDuring);
}

// Each session VU is one user: logged in once, then page views until the end. A new
// connection per request (Connection: close), so the routing mesh spreads them.
const closing = { headers: { Connection: 'close' } };
const user = { name: '', count: 0, instance: '' };

function login() {
  const name = `user${__VU}-${Date.now()}`;
  const res = http.post(`${base}${prefix}/login.php`, { user: name }, closing);
  if (canceled(res)) return;
  if (res.status !== 200) {
    loginFailed.add(1);
    console.warn(`login failed: status ${res.status} error ${res.error}`);
    return;
  }
  logins.add(1);
  user.name = name;
  user.count = 0;
  user.instance = res.json('instance');
}

export function session() {
  if (!user.name) {
    login();
    sleep(pauseMs / 1000);
    return;
  }
  const started = Date.now();
  const res = http.get(`${base}${prefix}/page.php`, closing);
  if (canceled(res)) return;
  sessionRequests.add(1);
  if (res.status === 401 || (res.status === 200 && res.json('user') !== user.name)) {
    sessionsLost.add(1);
    console.warn(`session lost at ${started}: ${user.name} got status ${res.status} ${res.body}`);
    user.name = '';
  } else if (res.status !== 200) {
    sessionFailed.add(1);
    sessionFailedAt.add(started);
    if (res.status === 500 && String(res.body).includes('session store unavailable')) {
      sessionUnavailable.add(1);
    }
    console.warn(`page view failed at ${started}: status ${res.status} error ${res.error}`);
  } else {
    const count = res.json('count');
    if (count <= user.count) {
      sessionsLost.add(1);
      console.warn(`session update lost at ${started}: ${user.name} saw ${count} after ${user.count}`);
    }
    user.count = count;
    const instance = res.json('instance');
    if (instance !== user.instance) sessionMoves.add(1);
    user.instance = instance;
    sessionOkAt.add(started);
    timing(started, res, sessionBefore, sessionDuring);
  }
  sleep(pauseMs / 1000);
}
