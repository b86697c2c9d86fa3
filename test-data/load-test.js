// The classic FrankenPHP load test, for ferrophp: every VU POSTs "foo\n" x 1000 to
// echo.php with Firefox-like headers and a long Cookie, and checks the body comes back.
//
//   TARGET_URL=http://127.0.0.1:8080/echo.php k6 run test-data/load-test.js
//   (VUS and DURATION override the defaults of 100 VUs for 30 s.)
// test-data/swarm/load.js imports the request (payload, params) to send the same one.
import http from 'k6/http';
import { check } from 'k6';

export const options = {
  vus: Number(__ENV.VUS || 100),
  duration: __ENV.DURATION || '30s',
  thresholds: {
    checks: ['rate==1.0'],
    http_req_failed: ['rate==0'],
  },
};

const url = __ENV.TARGET_URL || 'http://127.0.0.1:8080/echo.php';
export const payload = 'foo\n'.repeat(1000);
const cookie = Array.from({ length: 40 }, (_, i) => `cookie${i}=${'v'.repeat(32)}${i}`).join('; ');
export const params = {
  headers: {
    'Accept': 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8',
    'Accept-Encoding': 'gzip, deflate, br',
    'Accept-Language': 'fr,fr-FR;q=0.8,en-US;q=0.5,en;q=0.3',
    'Cache-Control': 'no-cache',
    'Connection': 'keep-alive',
    'Content-Type': 'text/plain',
    'Cookie': cookie,
    'DNT': '1',
    'Pragma': 'no-cache',
    'Sec-Fetch-Dest': 'document',
    'Sec-Fetch-Mode': 'navigate',
    'Sec-Fetch-Site': 'cross-site',
    'Sec-GPC': '1',
    'Upgrade-Insecure-Requests': '1',
    'User-Agent': 'Mozilla/5.0 (X11; Linux x86_64; rv:109.0) Gecko/20100101 Firefox/111.0',
  },
};

export default function () {
  const res = http.post(url, payload, params);
  check(res, {
    'is status 200': (r) => r.status === 200,
    'is echoed': (r) => r.body === payload,
  });
}
