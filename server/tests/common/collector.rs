//! The test OTLP collector: `test-data/tracing/receiver.py` (Python, PyPI
//! `opentelemetry-proto`, the reference schema) decoding every export request, and the
//! environment that points a server at it.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

use super::wait_until;

/// python3 with the reference OTLP schema, installed on first use.
pub fn python() -> &'static str {
    let ok = || {
        Command::new("python3")
            .args([
                "-c",
                "import opentelemetry.proto.collector.trace.v1.trace_service_pb2",
            ])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if !ok() {
        let _ = Command::new("python3")
            .args(["-m", "pip", "install", "--quiet", "opentelemetry-proto"])
            .status();
    }
    assert!(
        ok(),
        "python3 with the opentelemetry-proto package is required"
    );
    "python3"
}

/// The Python collector and every export request it decoded.
pub struct Collector {
    child: Child,
    port: u16,
    posts: Arc<Mutex<Vec<Value>>>,
}

impl Collector {
    pub fn start(args: &[&str]) -> Collector {
        let mut child = Command::new(python())
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("../test-data/tracing/receiver.py"))
            .args(args)
            .stdout(Stdio::piped())
            .stdin(Stdio::null())
            .spawn()
            .expect("collector starts");
        let posts = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = mpsc::channel();
        let out = child.stdout.take().unwrap();
        let sink = posts.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                if let Some(p) = line.strip_prefix("listening ") {
                    let _ = tx.send(p.parse::<u16>().unwrap());
                } else {
                    let v: Value = serde_json::from_str(&line).expect("collector JSON");
                    sink.lock().unwrap().push(v);
                }
            }
        });
        let port = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("collector listening");
        Collector { child, port, posts }
    }

    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn posts(&self) -> Vec<Value> {
        self.posts.lock().unwrap().clone()
    }

    /// Every span received so far.
    pub fn spans(&self) -> Vec<Value> {
        self.posts()
            .iter()
            .flat_map(|p| p["spans"].as_array().unwrap().clone())
            .collect()
    }

    /// Spans of `trace_id`, once `n` of them arrived (panics after 20 s).
    pub fn trace(&self, trace_id: &str, n: usize) -> Vec<Value> {
        let of = || -> Vec<Value> {
            self.spans()
                .into_iter()
                .filter(|s| s["trace_id"] == trace_id)
                .collect()
        };
        assert!(
            wait_until(Duration::from_secs(20), || of().len() >= n),
            "trace {trace_id}: {} of {n} spans arrived: {:#?}",
            of().len(),
            of()
        );
        of()
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        // Child::kill signals this child's own PID only.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The environment that sends traces to `endpoint`, batches every 100 ms.
pub fn otel_env(endpoint: &str) -> Vec<(&'static str, String)> {
    vec![
        ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.to_owned()),
        ("OTEL_BSP_SCHEDULE_DELAY", "100".to_owned()),
        ("OTEL_SERVICE_NAME", "tracing-test".to_owned()),
    ]
}
