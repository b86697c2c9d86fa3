//! Shared test fixtures: a private redis-server on a free loopback port, temporary data
//! directories, and queue constructors for both backends.
#![allow(dead_code, unreachable_pub)]

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use jobs::{BackendConfig, Durability, Queue, QueueConfig, RedisOptions};

/// A redis-server this test started; killed on drop.
pub struct RedisServer {
    child: Option<Child>,
    pub port: u16,
}

impl RedisServer {
    pub fn start() -> Self {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        Self::start_on(port)
    }

    pub fn start_on(port: u16) -> Self {
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
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server must be installed (scripts/install-test-deps.sh)");
        let server = Self {
            child: Some(child),
            port,
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let ok = redis::Client::open(server.url())
                .and_then(|c| c.get_connection_with_timeout(Duration::from_secs(1)))
                .and_then(|mut c| redis::cmd("PING").query::<String>(&mut c));
            if ok.is_ok() {
                return server;
            }
            assert!(
                Instant::now() < deadline,
                "redis-server on port {port} did not come up"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// SIGKILLs the server.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
    }
}

pub fn redis_queue(server: &RedisServer, prefix: &str) -> Queue {
    Queue::open(QueueConfig {
        backend: BackendConfig::Redis {
            url: server.url(),
            options: RedisOptions {
                prefix: prefix.into(),
                ..RedisOptions::default()
            },
        },
        max_payload_bytes: 64 * 1024,
    })
    .unwrap()
}

pub fn local_queue(dir: &std::path::Path) -> Queue {
    Queue::open(QueueConfig {
        backend: BackendConfig::Local {
            data_dir: dir.to_path_buf(),
            durability: Durability::Buffered,
        },
        max_payload_bytes: 64 * 1024,
    })
    .unwrap()
}

/// Waits until `f` holds, failing after a generous deadline (states, not timings).
pub fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}
