//! A closed-loop HTTP/1.1 load generator for the one harness workload wrk cannot measure:
//! `head-of-line`, where each request belongs to a class (fast or slow) and the fast
//! class's latency must be known on its own. wrk reports one latency distribution for
//! all requests, and its Lua `response()` callback sees no timing, so per-class
//! percentiles cannot come out of it.
//!
//! Fixed keep-alive connections (hyper's client, one request in flight on each), the
//! class of each request drawn from a seeded generator per connection, and every latency
//! of the measured window kept (microseconds, a few bytes per request): percentiles are
//! exact, not bucketed. A request counts when it starts and ends inside the window.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;

/// What the connections ask for: `slow_path` with probability `slow_fraction`, else
/// `fast_path`.
#[derive(Clone, Debug)]
pub struct Mix {
    /// Path (and query) of the fast class's requests.
    pub fast_path: String,
    /// Path (and query) of the slow class's requests.
    pub slow_path: String,
    /// Share of requests that are slow (0..=1).
    pub slow_fraction: f64,
}

/// Latency of one request class over the measured window.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct ClassStats {
    /// Requests of the class that started and ended inside the window.
    pub requests: u64,
    /// Median latency.
    pub p50_ms: f64,
    /// 99th percentile latency.
    pub p99_ms: f64,
    /// Largest latency.
    pub max_ms: f64,
}

/// What one load run measured.
#[derive(Clone, Debug, Default)]
pub struct LoadResult {
    /// The fast class's latency.
    pub fast: ClassStats,
    /// The slow class's latency.
    pub slow: ClassStats,
    /// Non-2xx responses and failed exchanges (each failure reconnects).
    pub errors: u64,
    /// Completed requests of both classes per second of the measured window.
    pub requests_per_sec: f64,
}

/// Latencies (us) one connection recorded: fast, slow, and its error count.
type Recorded = (Vec<u32>, Vec<u32>, u64);

/// Runs `connections` closed-loop connections against `addr` for `warmup` (not recorded)
/// and then `measure`, on a runtime of `threads` threads (as wrk's `-t`).
pub fn run(
    addr: SocketAddr,
    connections: usize,
    threads: usize,
    warmup: Duration,
    measure: Duration,
    mix: &Mix,
) -> LoadResult {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_all()
        .build()
        .expect("load generator runtime");
    let start = Instant::now() + warmup;
    let end = start + measure;
    let mix = Arc::new(mix.clone());
    let recorded: Vec<Recorded> = runtime.block_on(async {
        let tasks: Vec<_> = (0..connections)
            .map(|c| tokio::spawn(connection(addr, c as u64, mix.clone(), start, end)))
            .collect();
        let mut out = Vec::new();
        for task in tasks {
            out.push(task.await.expect("load connection task"));
        }
        out
    });
    let mut fast = Vec::new();
    let mut slow = Vec::new();
    let mut errors = 0;
    for (f, s, e) in recorded {
        fast.extend(f);
        slow.extend(s);
        errors += e;
    }
    let requests = (fast.len() + slow.len()) as f64;
    LoadResult {
        fast: stats(fast),
        slow: stats(slow),
        errors,
        requests_per_sec: requests / measure.as_secs_f64(),
    }
}

/// Exact percentiles of `latencies` (microseconds), reported in milliseconds.
fn stats(mut latencies: Vec<u32>) -> ClassStats {
    if latencies.is_empty() {
        return ClassStats::default();
    }
    latencies.sort_unstable();
    let at = |p: f64| {
        let rank = ((p * latencies.len() as f64).ceil() as usize).clamp(1, latencies.len());
        latencies[rank - 1] as f64 / 1000.0
    };
    ClassStats {
        requests: latencies.len() as u64,
        p50_ms: at(0.50),
        p99_ms: at(0.99),
        max_ms: at(1.0),
    }
}

/// One connection's closed loop until `end`; reconnects after a failed exchange.
async fn connection(
    addr: SocketAddr,
    seed: u64,
    mix: Arc<Mix>,
    start: Instant,
    end: Instant,
) -> Recorded {
    let mut rng = XorShift::new(seed);
    let (mut fast, mut slow, mut errors) = (Vec::new(), Vec::new(), 0u64);
    let mut sender = None;
    while Instant::now() < end {
        let Some(s) = sender.as_mut() else {
            match connect(addr).await {
                Ok(s) => sender = Some(s),
                Err(_) => {
                    errors += 1;
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            }
            continue;
        };
        let is_slow = rng.next_f64() < mix.slow_fraction;
        let path = if is_slow {
            &mix.slow_path
        } else {
            &mix.fast_path
        };
        let began = Instant::now();
        let ok = exchange(s, path).await;
        let done = Instant::now();
        if began >= start && done <= end {
            match ok {
                Ok(true) => {
                    let us = (done - began).as_micros().min(u32::MAX as u128) as u32;
                    if is_slow {
                        slow.push(us);
                    } else {
                        fast.push(us);
                    }
                }
                _ => errors += 1,
            }
        }
        if ok.is_err() {
            sender = None;
        }
    }
    (fast, slow, errors)
}

async fn connect(addr: SocketAddr) -> Result<http1::SendRequest<Empty<Bytes>>, String> {
    let stream = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| e.to_string())?;
    let _ = stream.set_nodelay(true);
    let (sender, conn) = http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(sender)
}

/// One request and its whole body: Ok(true) for a 2xx, Ok(false) for another status.
async fn exchange(
    sender: &mut http1::SendRequest<Empty<Bytes>>,
    path: &str,
) -> Result<bool, String> {
    sender.ready().await.map_err(|e| e.to_string())?;
    let request = hyper::Request::get(path)
        .header(hyper::header::HOST, "localhost")
        .body(Empty::new())
        .map_err(|e| e.to_string())?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| e.to_string())?;
    let ok = response.status().is_success();
    response
        .into_body()
        .collect()
        .await
        .map_err(|e| e.to_string())?;
    Ok(ok)
}

/// xorshift64*: a reproducible class sequence per connection, no dependency.
struct XorShift(u64);

impl XorShift {
    fn new(seed: u64) -> XorShift {
        // Never zero (a fixed point); spread small seeds apart.
        XorShift(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    fn next_f64(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let x = self.0.wrapping_mul(0x2545_F491_4F6C_DD1D);
        (x >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_exact_ranks() {
        let s = stats((1..=1000).map(|ms| ms * 1000).collect());
        assert_eq!(s.requests, 1000);
        assert_eq!(s.p50_ms, 500.0);
        assert_eq!(s.p99_ms, 990.0);
        assert_eq!(s.max_ms, 1000.0);
        assert_eq!(stats(vec![7000]).p99_ms, 7.0);
        assert_eq!(stats(Vec::new()).requests, 0);
    }

    #[test]
    fn class_draw_follows_the_fraction() {
        let mut rng = XorShift::new(3);
        let slow = (0..100_000).filter(|_| rng.next_f64() < 0.05).count();
        assert!((4_500..5_500).contains(&slow), "{slow}");
    }
}
