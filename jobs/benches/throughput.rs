//! Throughput of the job queue, with wall and CPU time (getrusage) per operation, and a
//! same-run baseline: the same payload pushed to a real redis-server with LPUSH through
//! the `redis` crate (the PHP-level comparison with phpredis is the worker's to make).
//!
//! `cargo bench -p ferrophp-jobs --bench throughput` (needs `redis-server` on PATH).
//! Measures: dispatch on the local store under each fsync policy (one thread and four),
//! dispatch + take + ack end to end, and the same on the Redis backend next to raw
//! LPUSH / LPUSH+RPOP. `-- --quick` runs fewer operations; `-- --dispatch-only` runs
//! 200,000 local dispatches and nothing else, for a profiler.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use jobs::{BackendConfig, DispatchOptions, Durability, Queue, QueueConfig, RedisOptions};

const PAYLOAD: usize = 256;

fn cpu_time() -> Duration {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::uninit();
    // SAFETY: getrusage fills the struct it is given; RUSAGE_SELF is always valid.
    let usage = unsafe {
        libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr());
        usage.assume_init()
    };
    let tv = |t: libc::timeval| {
        Duration::from_secs(u64::try_from(t.tv_sec).unwrap_or(0))
            + Duration::from_micros(u64::try_from(t.tv_usec).unwrap_or(0))
    };
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

struct Sample {
    name: String,
    ops: u64,
    wall: Duration,
    cpu: Duration,
}

impl Sample {
    fn wall_us(&self) -> f64 {
        self.wall.as_secs_f64() * 1e6 / self.ops as f64
    }
    fn cpu_us(&self) -> f64 {
        self.cpu.as_secs_f64() * 1e6 / self.ops as f64
    }
    fn print(&self) {
        println!(
            "{:<44} {:>9.0} ops/s  wall {:>7.2} us/op  cpu {:>7.2} us/op",
            self.name,
            self.ops as f64 / self.wall.as_secs_f64(),
            self.wall_us(),
            self.cpu_us()
        );
    }
}

/// Runs `per_thread` on `threads` threads, `ops` operations in all.
fn measure(name: &str, ops: u64, threads: u64, per_thread: impl Fn(u64) + Sync) -> Sample {
    let (cpu0, t0) = (cpu_time(), Instant::now());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| per_thread(ops / threads));
        }
    });
    let sample = Sample {
        name: name.into(),
        ops,
        wall: t0.elapsed(),
        cpu: cpu_time() - cpu0,
    };
    sample.print();
    sample
}

fn local(dir: &std::path::Path, durability: Durability) -> Queue {
    Queue::open(QueueConfig {
        backend: BackendConfig::Local {
            data_dir: dir.to_path_buf(),
            durability,
        },
        max_payload_bytes: 1 << 20,
    })
    .unwrap()
}

struct Redis(Child, u16);

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_redis() -> Redis {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new("redis-server")
        .args([
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ])
        .stdout(Stdio::null())
        .spawn()
        .expect("redis-server");
    // Owned by the guard from here on, so every path ends the server.
    let server = Redis(child, port);
    let url = format!("redis://127.0.0.1:{port}/");
    for _ in 0..500 {
        if redis::Client::open(url.as_str())
            .and_then(|c| c.get_connection())
            .is_ok()
        {
            return server;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("redis-server did not start");
}

fn cycle(q: &Queue, n: u64, payload: &[u8], opts: &DispatchOptions) {
    for _ in 0..n {
        q.dispatch("bench", payload, opts).unwrap();
        let lease = q.take(&["bench"], Duration::ZERO).unwrap().unwrap();
        q.ack(&lease).unwrap();
    }
}

fn main() {
    if std::env::args().any(|a| a == "--dispatch-only") {
        // For a profiler: nothing but local dispatches.
        let dir = tempfile::tempdir().unwrap();
        let q = local(dir.path(), Durability::default());
        let payload = vec![b'x'; PAYLOAD];
        measure("dispatch only, 200000", 200_000, 1, |k| {
            for _ in 0..k {
                q.dispatch("bench", &payload, &DispatchOptions::default())
                    .unwrap();
            }
        });
        return;
    }
    let quick = std::env::args().any(|a| a == "--quick");
    let n: u64 = if quick { 2_000 } else { 40_000 };
    let payload = vec![b'x'; PAYLOAD];
    let opts = DispatchOptions::default();
    println!("payload {PAYLOAD} bytes; {n} operations per line unless noted");

    println!("\n-- local store (fjall), by fsync policy --");
    let mut results = Vec::new();
    for (label, durability) in [
        ("buffered (no fsync)", Durability::Buffered),
        (
            "interval 200 ms (default)",
            Durability::Interval(Duration::from_millis(200)),
        ),
        ("interval 1 s", Durability::Interval(Duration::from_secs(1))),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let q = local(dir.path(), durability);
        results.push(measure(
            &format!("dispatch, 1 thread, {label}"),
            n,
            1,
            |k| {
                for _ in 0..k {
                    q.dispatch("bench", &payload, &opts).unwrap();
                }
            },
        ));
        measure(&format!("dispatch, 4 threads, {label}"), n, 4, |k| {
            for _ in 0..k {
                q.dispatch("bench", &payload, &opts).unwrap();
            }
        });
    }
    let always_n = if quick { 200 } else { 2_000 };
    {
        let dir = tempfile::tempdir().unwrap();
        let q = local(dir.path(), Durability::Always);
        measure(
            &format!("dispatch, 1 thread, always fsync ({always_n})"),
            always_n,
            1,
            |k| {
                for _ in 0..k {
                    q.dispatch("bench", &payload, &opts).unwrap();
                }
            },
        );
        measure(
            &format!("dispatch, 4 threads, always fsync ({always_n})"),
            always_n,
            4,
            |k| {
                for _ in 0..k {
                    q.dispatch("bench", &payload, &opts).unwrap();
                }
            },
        );
    }
    println!("\n-- one dispatch's latency, 1 thread (an fsync holds fjall's journal lock) --");
    for (label, durability) in [
        ("buffered (no fsync)", Durability::Buffered),
        (
            "interval 200 ms (default)",
            Durability::Interval(Duration::from_millis(200)),
        ),
        ("interval 1 s", Durability::Interval(Duration::from_secs(1))),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let q = local(dir.path(), durability);
        let mut lat: Vec<Duration> = (0..n)
            .map(|_| {
                let t = Instant::now();
                q.dispatch("bench", &payload, &opts).unwrap();
                t.elapsed()
            })
            .collect();
        lat.sort_unstable();
        let at = |p: f64| lat[((lat.len() - 1) as f64 * p) as usize].as_secs_f64() * 1e6;
        println!(
            "{label:<28} p50 {:>7.1} us  p99 {:>7.1} us  p99.9 {:>8.1} us  max {:>8.1} us",
            at(0.5),
            at(0.99),
            at(0.999),
            at(1.0)
        );
    }
    let local_dispatch = &results[1];
    let local_cycle = {
        let dir = tempfile::tempdir().unwrap();
        let q = local(dir.path(), Durability::default());
        measure("dispatch+take+ack, 1 thread, default", n, 1, |k| {
            cycle(&q, k, &payload, &opts)
        })
    };
    {
        let dir = tempfile::tempdir().unwrap();
        let q = Arc::new(local(dir.path(), Durability::default()));
        let producers = measure("dispatch+take+ack, 2 producers + 2 workers", n, 1, |k| {
            std::thread::scope(|s| {
                for _ in 0..2 {
                    s.spawn(|| {
                        for _ in 0..k / 2 {
                            q.dispatch("bench", &payload, &opts).unwrap();
                        }
                    });
                }
                for _ in 0..2 {
                    s.spawn(|| {
                        for _ in 0..k / 2 {
                            let lease = q
                                .take(&["bench"], Duration::from_secs(10))
                                .unwrap()
                                .unwrap();
                            q.ack(&lease).unwrap();
                        }
                    });
                }
            });
        });
        let _ = producers;
    }

    println!("\n-- Redis (redis-server on loopback) --");
    let server = start_redis();
    let url = format!("redis://127.0.0.1:{}/", server.1);
    let q = Queue::open(QueueConfig {
        backend: BackendConfig::Redis {
            url: url.clone(),
            options: RedisOptions::default(),
        },
        max_payload_bytes: 1 << 20,
    })
    .unwrap();
    let mut conn = redis::Client::open(url.as_str())
        .unwrap()
        .get_connection()
        .unwrap();
    let redis_n = n / 4;
    let conn_cell = std::sync::Mutex::new(&mut conn);
    let lpush = measure(&format!("baseline: LPUSH ({redis_n})"), redis_n, 1, |k| {
        let mut c = conn_cell.lock().unwrap();
        for _ in 0..k {
            let _: i64 = redis::cmd("LPUSH")
                .arg("baseline")
                .arg(&payload)
                .query(&mut **c)
                .unwrap();
        }
    });
    let push_pop = measure(
        &format!("baseline: LPUSH+RPOP ({redis_n})"),
        redis_n,
        1,
        |k| {
            let mut c = conn_cell.lock().unwrap();
            for _ in 0..k {
                let _: i64 = redis::cmd("LPUSH")
                    .arg("baseline2")
                    .arg(&payload)
                    .query(&mut **c)
                    .unwrap();
                let _: Vec<u8> = redis::cmd("RPOP").arg("baseline2").query(&mut **c).unwrap();
            }
        },
    );
    let redis_dispatch = measure(
        &format!("redis backend: dispatch ({redis_n})"),
        redis_n,
        1,
        |k| {
            for _ in 0..k {
                q.dispatch("bench", &payload, &opts).unwrap();
            }
        },
    );
    let redis_cycle = measure(
        &format!("redis backend: dispatch+take+ack ({redis_n})"),
        redis_n,
        1,
        |k| {
            // Drain what the dispatch line left first, so takes find their own jobs.
            while let Some(l) = q.take(&["bench"], Duration::ZERO).unwrap() {
                q.ack(&l).unwrap();
            }
            cycle(&q, k, &payload, &opts);
        },
    );

    let conn = conn_cell.into_inner().unwrap();
    let stats: String = redis::cmd("INFO")
        .arg("commandstats")
        .query(&mut *conn)
        .unwrap();
    println!("redis-server's own time per call (INFO commandstats):");
    for line in stats.lines().filter(|l| {
        ["evalsha", "lpush", "rpop"]
            .iter()
            .any(|c| l.starts_with(&format!("cmdstat_{c}:")))
    }) {
        println!("  {line}");
    }

    println!("\n-- ratios (same run; >1 means the first is cheaper) --");
    let ratio = |a: &Sample, b: &Sample| (b.wall_us() / a.wall_us(), b.cpu_us() / a.cpu_us());
    for (what, a, b) in [
        ("local dispatch vs Redis LPUSH", local_dispatch, &lpush),
        (
            "local dispatch+take+ack vs Redis LPUSH+RPOP",
            &local_cycle,
            &push_pop,
        ),
        (
            "local dispatch vs redis-backend dispatch",
            local_dispatch,
            &redis_dispatch,
        ),
        (
            "local cycle vs redis-backend cycle",
            &local_cycle,
            &redis_cycle,
        ),
        (
            "redis-backend dispatch vs LPUSH (overhead)",
            &redis_dispatch,
            &lpush,
        ),
    ] {
        let (wall, cpu) = ratio(a, b);
        println!("{what:<48} wall {wall:>5.2}x  cpu {cpu:>5.2}x");
    }
    println!(
        "(the Redis lines' CPU is this process's only; redis-server's own CPU is not counted)"
    );
}
