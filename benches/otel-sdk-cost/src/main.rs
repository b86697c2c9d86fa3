//! What the OpenTelemetry SDK (opentelemetry_sdk + opentelemetry-otlp over HTTP/protobuf,
//! batch span processor on its own thread) costs per request, in the three shapes the
//! tracing targets name (issue 27): a request with tracing on but not sampled (W3C
//! context extracted from the headers, a non-recording server span), a sampled request
//! with its server span (12 attributes, exported through the batch processor to a local
//! collector), and one child span (`Trace::span()` from PHP, one attribute).
//!
//! CPU is getrusage(RUSAGE_SELF) over the loop plus a force_flush (so the export thread's
//! encoding and HTTP work counts), minus the collector thread's own CPU
//! (RUSAGE_THREAD), minus the same loop with no tracing call; wall time next to it.
//! Median of 5 rounds of 100,000 iterations.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::{Span as _, SpanKind, TraceContextExt, Tracer as _, TracerProvider as _};
use opentelemetry::{Context, KeyValue};
use opentelemetry_otlp::{Protocol, WithExportConfig};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{BatchConfigBuilder, BatchSpanProcessor, Sampler, SdkTracerProvider};
use opentelemetry_sdk::Resource;

const N: u64 = 100_000;
const ROUNDS: usize = 5;

fn rusage(who: i32) -> u64 {
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes into the struct we own.
    unsafe { libc::getrusage(who, &mut ru) };
    let us = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    (us(ru.ru_utime) + us(ru.ru_stime)) * 1000
}

/// A collector that accepts OTLP/HTTP POSTs and answers 200, counting its own CPU.
fn collector() -> (String, Arc<AtomicU64>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let cpu = Arc::new(AtomicU64::new(0));
    let cpu2 = cpu.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let cpu = cpu2.clone();
            std::thread::spawn(move || {
                let mut stream = stream.unwrap();
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                loop {
                    let start = rusage(libc::RUSAGE_THREAD);
                    let mut len = 0usize;
                    let mut line = String::new();
                    loop {
                        line.clear();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        if line == "\r\n" {
                            break;
                        }
                        let lower = line.to_ascii_lowercase();
                        if let Some(v) = lower.strip_prefix("content-length:") {
                            len = v.trim().parse().unwrap();
                        }
                    }
                    let mut body = vec![0; len];
                    reader.read_exact(&mut body).unwrap();
                    stream
                        .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\ncontent-type: application/x-protobuf\r\n\r\n")
                        .unwrap();
                    cpu.fetch_add(rusage(libc::RUSAGE_THREAD) - start, Ordering::Relaxed);
                }
            });
        }
    });
    (format!("http://{addr}/v1/traces"), cpu)
}

fn provider(endpoint: &str, sampler: Sampler) -> SdkTracerProvider {
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(endpoint)
        .build()
        .unwrap();
    // A queue large enough that nothing is dropped (drops would make it look cheaper).
    let bsp = BatchSpanProcessor::builder(exporter)
        .with_batch_config(
            BatchConfigBuilder::default()
                .with_max_queue_size(1 << 20)
                .with_max_export_batch_size(512)
                .with_scheduled_delay(Duration::from_millis(200))
                .build(),
        )
        .build();
    SdkTracerProvider::builder()
        .with_span_processor(bsp)
        .with_sampler(sampler)
        .with_resource(Resource::builder().with_service_name("bench").build())
        .build()
}

fn headers(traceparent: Option<&str>) -> http::HeaderMap {
    let mut h = http::HeaderMap::new();
    h.insert("host", "localhost".parse().unwrap());
    h.insert("user-agent", "wrk".parse().unwrap());
    if let Some(tp) = traceparent {
        h.insert("traceparent", tp.parse().unwrap());
    }
    h
}

/// Median (CPU ns, wall ns) per iteration of `f`, counting `flush` and excluding the
/// collector's CPU.
fn measure(collector_cpu: &AtomicU64, mut f: impl FnMut(u64), flush: impl Fn()) -> (f64, f64) {
    let mut cpu = Vec::new();
    let mut wall = Vec::new();
    for _ in 0..ROUNDS {
        let c0 = rusage(libc::RUSAGE_SELF);
        let k0 = collector_cpu.load(Ordering::Relaxed);
        let t0 = Instant::now();
        for i in 0..N {
            f(i);
        }
        flush();
        let t = t0.elapsed().as_nanos() as f64;
        let c = rusage(libc::RUSAGE_SELF) - c0 - (collector_cpu.load(Ordering::Relaxed) - k0);
        cpu.push(c as f64 / N as f64);
        wall.push(t / N as f64);
    }
    cpu.sort_by(f64::total_cmp);
    wall.sort_by(f64::total_cmp);
    (cpu[ROUNDS / 2], wall[ROUNDS / 2])
}

fn main() {
    let (endpoint, collector_cpu) = collector();
    let propagator = TraceContextPropagator::new();
    let unsampled_parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00";
    let sampled_parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    let with_unsampled = headers(Some(unsampled_parent));
    let with_sampled = headers(Some(sampled_parent));
    let without = headers(None);

    // Baseline: the loop and a header lookup, no tracing.
    let (base_cpu, base_wall) = measure(
        &collector_cpu,
        |_| {
            std::hint::black_box(without.get("traceparent"));
        },
        || {},
    );
    println!("baseline loop: {base_cpu:.0} ns CPU, {base_wall:.0} ns wall per iteration");

    let server_span = |tracer: &opentelemetry_sdk::trace::SdkTracer, h: &http::HeaderMap, i: u64| {
        let parent = propagator.extract(&opentelemetry_http::HeaderExtractor(h));
        let mut span = tracer
            .span_builder("GET /index.php")
            .with_kind(SpanKind::Server)
            .with_attributes([
                KeyValue::new("http.request.method", "GET"),
                KeyValue::new("url.path", format!("/index.php/{}", i % 16)),
                KeyValue::new("url.scheme", "http"),
                KeyValue::new("http.route", "/index.php"),
                KeyValue::new("server.address", "localhost"),
                KeyValue::new("server.port", 8080),
                KeyValue::new("client.address", "127.0.0.1"),
                KeyValue::new("network.protocol.version", "1.1"),
                KeyValue::new("user_agent.original", "wrk"),
                KeyValue::new("ferrophp.mode", "classic"),
            ])
            .start_with_context(tracer, &parent);
        span.set_attribute(KeyValue::new("http.response.status_code", 200));
        span.set_attribute(KeyValue::new("http.response.body.size", 12));
        span.end();
    };

    let rows: [(&str, Sampler, &http::HeaderMap); 4] = [
        ("not sampled, no traceparent (ParentBased(AlwaysOff))", Sampler::ParentBased(Box::new(Sampler::AlwaysOff)), &without),
        ("not sampled, traceparent flags 00 (ParentBased(AlwaysOn))", Sampler::ParentBased(Box::new(Sampler::AlwaysOn)), &with_unsampled),
        ("sampled, server span exported (ParentBased(AlwaysOn), no traceparent)", Sampler::ParentBased(Box::new(Sampler::AlwaysOn)), &without),
        ("sampled, server span exported (traceparent flags 01)", Sampler::ParentBased(Box::new(Sampler::AlwaysOn)), &with_sampled),
    ];
    for (label, sampler, h) in rows {
        let provider = provider(&endpoint, sampler);
        let tracer = provider.tracer("ferrophp");
        let (cpu, wall) = measure(
            &collector_cpu,
            |i| server_span(&tracer, h, i),
            || {
                let _ = provider.force_flush();
            },
        );
        println!(
            "{label}: {:.0} ns CPU, {:.0} ns wall per request over the baseline",
            cpu - base_cpu,
            wall - base_wall
        );
        let _ = provider.shutdown();
    }

    // One child span under a sampled server span, as Trace::span('db.query', [...])->end().
    let provider = provider(&endpoint, Sampler::ParentBased(Box::new(Sampler::AlwaysOn)));
    let tracer = provider.tracer("ferrophp");
    let parent = propagator.extract(&opentelemetry_http::HeaderExtractor(&with_sampled));
    let server = tracer
        .span_builder("GET /index.php")
        .with_kind(SpanKind::Server)
        .start_with_context(&tracer, &parent);
    let cx = Context::new().with_span(server);
    let (cpu, wall) = measure(
        &collector_cpu,
        |_| {
            let mut span = tracer
                .span_builder("db.query")
                .with_attributes([KeyValue::new("db.system", "mysql")])
                .start_with_context(&tracer, &cx);
            span.end();
        },
        || {
            let _ = provider.force_flush();
        },
    );
    println!(
        "child span with 1 attribute, exported: {:.0} ns CPU, {:.0} ns wall per span over the baseline",
        cpu - base_cpu,
        wall - base_wall
    );
    let _ = provider.shutdown();
}
