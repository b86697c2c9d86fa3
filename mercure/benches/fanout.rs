//! The hub in process, against a baseline measured in the same run (tokio's broadcast
//! channel: the plainest in-process fan-out, with no selection, no authorization and no
//! SSE encoding):
//!
//! - one update to 10,000 subscribers: delivery latency p50/p99 (publish call to the
//!   subscriber's task holding the event), wall and CPU time (getrusage) per delivered
//!   event;
//! - publishes per second with 100 subscribers draining;
//! - bytes per idle subscriber (a counting global allocator: the subscription, its share
//!   of the index, its timer), and live bytes after rounds of 10,000 subscribers coming
//!   and going (memory must stay flat).
//!
//! `cargo bench -p ferrophp-mercure --bench fanout` (release build). Environment:
//! `FANOUT_SUBSCRIBERS` (10000), `FANOUT_ROUNDS` (30), `THROUGHPUT_UPDATES` (20000).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use mercure::{Config, Hub, SubscribeOptions, Update};

/// Counts live heap bytes.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every method forwards to the system allocator with the caller's arguments,
// unchanged; the counter is a side effect that does not touch the memory.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller upholds `alloc`'s contract, which `System.alloc` shares.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: `ptr` came from `alloc` above (System) with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` came from this allocator (System) with `layout`; the caller
        // upholds `realloc`'s contract.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            LIVE.fetch_add(new_size, Ordering::Relaxed);
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        }
        p
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

fn cpu_seconds() -> f64 {
    // SAFETY: getrusage writes into the zeroed struct we own.
    let usage = unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut u);
        u
    };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn quantile(sorted: &[f64], q: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

fn hub(buffer: usize) -> Hub {
    Hub::start(Config {
        anonymous: true,
        subscriber_buffer: buffer,
        heartbeat: Some(Duration::from_secs(40)),
        ..Config::with_hmac("publisher-key", "subscriber-key")
    })
    .unwrap()
}

struct Run {
    latencies: Vec<f64>,
    wall: f64,
    cpu: f64,
    delivered: usize,
}

impl Run {
    fn report(&self, name: &str) {
        let mut l = self.latencies.clone();
        l.sort_by(f64::total_cmp);
        println!(
            "  {name:<10} p50 {:>8.1} us  p99 {:>8.1} us  wall/event {:>6.0} ns  cpu/event {:>6.0} ns  ({} events)",
            quantile(&l, 0.5) * 1e6,
            quantile(&l, 0.99) * 1e6,
            self.wall / self.delivered as f64 * 1e9,
            self.cpu / self.delivered as f64 * 1e9,
            self.delivered
        );
    }
}

/// One update to `n` subscribers, `rounds` times, through the hub.
async fn hub_fanout(n: usize, rounds: usize) -> Run {
    let hub = hub(64);
    let starts: Arc<Mutex<Vec<Instant>>> = Arc::new(Mutex::new(Vec::new()));
    let received = Arc::new(AtomicUsize::new(0));
    let (done_tx, mut done_rx) = tokio::sync::mpsc::unbounded_channel::<Vec<f64>>();
    for i in 0..n {
        // Half on the exact topic, half through a template: both index paths.
        let topic = if i % 2 == 0 {
            "https://example.com/books/1".to_string()
        } else {
            "https://example.com/books/{id}".to_string()
        };
        let mut sub = hub
            .subscribe(SubscribeOptions {
                topics: vec![topic],
                ..Default::default()
            })
            .await
            .unwrap();
        let starts = starts.clone();
        let done = done_tx.clone();
        let received = received.clone();
        tokio::spawn(async move {
            let mut lat = Vec::with_capacity(rounds);
            sub.next_chunk().await; // the opening comment
            while lat.len() < rounds {
                let Some(chunk) = sub.next_chunk().await else {
                    break;
                };
                if chunk.as_ref() == b":\n" {
                    continue;
                }
                let now = Instant::now();
                let round = lat.len();
                let t0 = starts.lock().unwrap()[round];
                lat.push((now - t0).as_secs_f64());
                received.fetch_add(1, Ordering::Relaxed);
            }
            let _ = done.send(lat);
        });
    }
    drop(done_tx);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (wall0, cpu0) = (Instant::now(), cpu_seconds());
    for round in 0..rounds {
        starts.lock().unwrap().push(Instant::now());
        hub.publish(Update::new(
            "https://example.com/books/1",
            format!("round {round}"),
        ))
        .await
        .unwrap();
        // Every subscriber takes it before the next round (one update in flight).
        while received.load(Ordering::Relaxed) < (round + 1) * n {
            tokio::task::yield_now().await;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let mut latencies = Vec::with_capacity(n * rounds);
    while let Some(l) = done_rx.recv().await {
        latencies.extend(l);
    }
    let (wall, cpu) = (wall0.elapsed().as_secs_f64(), cpu_seconds() - cpu0);
    let stats = hub.stats();
    assert_eq!(stats.slow_subscribers_closed, 0);
    Run {
        delivered: latencies.len(),
        latencies,
        wall,
        cpu,
    }
}

/// The same with tokio's broadcast channel.
async fn broadcast_fanout(n: usize, rounds: usize) -> Run {
    let (tx, _) = tokio::sync::broadcast::channel::<(usize, Bytes)>(64);
    let starts: Arc<Mutex<Vec<Instant>>> = Arc::new(Mutex::new(Vec::new()));
    let received = Arc::new(AtomicUsize::new(0));
    let (done_tx, mut done_rx) = tokio::sync::mpsc::unbounded_channel::<Vec<f64>>();
    for _ in 0..n {
        let mut rx = tx.subscribe();
        let starts = starts.clone();
        let done = done_tx.clone();
        let received = received.clone();
        tokio::spawn(async move {
            let mut lat = Vec::with_capacity(rounds);
            while lat.len() < rounds {
                let Ok((round, _)) = rx.recv().await else {
                    break;
                };
                let now = Instant::now();
                let t0 = starts.lock().unwrap()[round];
                lat.push((now - t0).as_secs_f64());
                received.fetch_add(1, Ordering::Relaxed);
            }
            let _ = done.send(lat);
        });
    }
    drop(done_tx);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (wall0, cpu0) = (Instant::now(), cpu_seconds());
    for round in 0..rounds {
        starts.lock().unwrap().push(Instant::now());
        let _ = tx.send((round, Bytes::from(format!("round {round}"))));
        while received.load(Ordering::Relaxed) < (round + 1) * n {
            tokio::task::yield_now().await;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let mut latencies = Vec::new();
    while let Some(l) = done_rx.recv().await {
        latencies.extend(l);
    }
    let (wall, cpu) = (wall0.elapsed().as_secs_f64(), cpu_seconds() - cpu0);
    Run {
        delivered: latencies.len(),
        latencies,
        wall,
        cpu,
    }
}

/// Publishes per second with `subs` subscribers draining: (publishes/s, cpu s).
async fn hub_throughput(subs: usize, updates: usize) -> (f64, f64, u64) {
    let hub = hub(updates + 16);
    let mut tasks = Vec::new();
    for _ in 0..subs {
        let mut sub = hub
            .subscribe(SubscribeOptions {
                topics: vec!["t".into()],
                ..Default::default()
            })
            .await
            .unwrap();
        tasks.push(tokio::spawn(async move {
            let mut n = 0;
            while n < updates {
                match sub.next_chunk().await {
                    Some(c) if c.as_ref() != b":\n" => n += 1,
                    Some(_) => {}
                    None => break,
                }
            }
        }));
    }
    let (wall0, cpu0) = (Instant::now(), cpu_seconds());
    for i in 0..updates {
        hub.publish(Update::new("t", format!("update {i}")))
            .await
            .unwrap();
        if i % 64 == 0 {
            tokio::task::yield_now().await;
        }
    }
    for t in tasks {
        t.await.unwrap();
    }
    let wall = wall0.elapsed().as_secs_f64();
    (
        updates as f64 / wall,
        cpu_seconds() - cpu0,
        hub.stats().slow_subscribers_closed,
    )
}

async fn broadcast_throughput(subs: usize, updates: usize) -> (f64, f64) {
    let (tx, _) = tokio::sync::broadcast::channel::<Bytes>(updates + 16);
    let mut tasks = Vec::new();
    for _ in 0..subs {
        let mut rx = tx.subscribe();
        tasks.push(tokio::spawn(async move {
            let mut n = 0;
            while n < updates && rx.recv().await.is_ok() {
                n += 1;
            }
        }));
    }
    let (wall0, cpu0) = (Instant::now(), cpu_seconds());
    for i in 0..updates {
        let mut event = Vec::new();
        mercure::sse::encode_event(&mut event, "id", None, None, &format!("update {i}"));
        let _ = tx.send(Bytes::from(event));
        if i % 64 == 0 {
            tokio::task::yield_now().await;
        }
    }
    for t in tasks {
        t.await.unwrap();
    }
    (
        updates as f64 / wall0.elapsed().as_secs_f64(),
        cpu_seconds() - cpu0,
    )
}

/// Live bytes per idle subscriber, and live bytes after rounds of churn.
async fn memory(n: usize) -> (f64, Vec<isize>) {
    let hub = hub(64);
    // Warm the selector cache and the runtime's timer structures.
    drop(
        hub.subscribe(SubscribeOptions {
            topics: vec!["https://example.com/users/1".into()],
            ..Default::default()
        })
        .await
        .unwrap(),
    );
    let waker = std::task::Waker::noop();
    let mut cx = std::task::Context::from_waker(waker);
    let mut churn = Vec::new();
    let base = LIVE.load(Ordering::Relaxed) as isize;
    let mut per_sub = 0.0;
    for round in 0..4 {
        let before = LIVE.load(Ordering::Relaxed);
        let mut subs = Vec::with_capacity(n);
        for i in 0..n {
            let mut s = hub
                .subscribe(SubscribeOptions {
                    // Distinct topics: each subscriber's own index entry counts.
                    topics: vec![format!("https://example.com/users/{i}")],
                    ..Default::default()
                })
                .await
                .unwrap();
            // Idle as on a connection: the opening comment sent, waiting with its timer
            // armed and its waker registered.
            let _ = std::pin::Pin::new(&mut s).poll_next_for_bench(&mut cx);
            let _ = std::pin::Pin::new(&mut s).poll_next_for_bench(&mut cx);
            subs.push(s);
        }
        let after = LIVE.load(Ordering::Relaxed);
        // The Vec holding them is the bench's, not the hub's.
        let holder = subs.capacity() * std::mem::size_of::<mercure::Subscription>();
        if round == 0 {
            per_sub = (after - before - holder) as f64 / n as f64;
        }
        drop(subs);
        churn.push(LIVE.load(Ordering::Relaxed) as isize - base);
    }
    (per_sub, churn)
}

trait PollForBench {
    fn poll_next_for_bench(self, cx: &mut std::task::Context<'_>)
        -> std::task::Poll<Option<Bytes>>;
}

impl PollForBench for std::pin::Pin<&mut mercure::Subscription> {
    fn poll_next_for_bench(
        self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Bytes>> {
        futures_core::Stream::poll_next(self, cx)
    }
}

fn main() {
    let n = env("FANOUT_SUBSCRIBERS", 10_000);
    let rounds = env("FANOUT_ROUNDS", 30);
    let updates = env("THROUGHPUT_UPDATES", 20_000);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        println!("one update to {n} subscribers, {rounds} rounds (2 worker threads):");
        let base = broadcast_fanout(n, rounds).await;
        let ours = hub_fanout(n, rounds).await;
        base.report("broadcast");
        ours.report("hub");
        let p = |r: &Run, q| {
            let mut l = r.latencies.clone();
            l.sort_by(f64::total_cmp);
            quantile(&l, q)
        };
        println!(
            "  hub/broadcast: p50 {:.2}x  p99 {:.2}x  cpu/event {:.2}x",
            p(&ours, 0.5) / p(&base, 0.5),
            p(&ours, 0.99) / p(&base, 0.99),
            (ours.cpu / ours.delivered as f64) / (base.cpu / base.delivered as f64)
        );

        println!("publishes per second, 100 subscribers, {updates} updates:");
        let (b_rate, b_cpu) = broadcast_throughput(100, updates).await;
        let (h_rate, h_cpu, slow) = hub_throughput(100, updates).await;
        let events = (updates * 100) as f64;
        println!(
            "  broadcast  {b_rate:>9.0}/s  cpu/delivered {:>5.0} ns",
            b_cpu / events * 1e9
        );
        println!(
            "  hub        {h_rate:>9.0}/s  cpu/delivered {:>5.0} ns  (slow subscribers closed: {slow})",
            h_cpu / events * 1e9
        );
        println!("  hub/broadcast: {:.2}x publishes/s", h_rate / b_rate);

        let (per_sub, churn) = memory(n).await;
        println!("memory: {per_sub:.0} bytes per idle subscriber (hub side: subscription, index, timer)");
        println!(
            "  live bytes above the start after each of 4 rounds of {n} subscribers coming and going: {churn:?}"
        );
    });
}
