//! The admin listener: a separate address (never the public one) for operators. Its
//! endpoints are its table of routes (`routes.rs`, [`admin_routes`]); any other request
//! gets 404.
//!
//! - `POST /workers/restart`: a reload (what SIGHUP does): the document root and worker
//!   scripts are resolved again (a deploy switched `current`) and every worker rolls
//!   over to its script, one thread at a time (`site.rs`).
//! - `GET /health`, `GET /healthz`: 200 while the process serves (liveness), with worker
//!   request counts as JSON.
//! - `GET /readyz`: 200 once the listener is up (every worker has booted before it
//!   opens), 503 from the moment a graceful drain begins (readiness: take the instance
//!   out of the balancer).
//! - `GET /metrics`: Prometheus text: every metric PHP recorded (`Ferrophp\Metrics`), the
//!   server's request latency merged across threads (see docs/metrics.md), and the
//!   server's and runtime's counters, with FrankenPHP's names where it has an equivalent
//!   (see docs/operating.md).
//! - `GET /threads`: JSON, one object per PHP thread: pool, state, busy, the request it
//!   runs, requests served, PHP memory. `GET /frankenphp/threads`: the same in the shape
//!   of FrankenPHP's admin endpoint, for its tooling.
//! - `GET /status` (`?json`, `?full`, `?pool=NAME`): php-fpm's status page (`status.rs`).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use http::{Method, Request, Response, StatusCode};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use worker::EngineControl;

use crate::body::{self, BodyError, BodyErrorKind, RequestBody, ResponseBody};
use crate::routes::{self, PathMatch, RouteFuture, Routes};
use crate::site::Sites;

/// Set when the server starts its graceful drain: `/readyz` answers 503 from then on.
static DRAINING: AtomicBool = AtomicBool::new(false);

pub(crate) fn set_draining() {
    DRAINING.store(true, Ordering::Relaxed);
}

/// Whether the graceful drain has begun (responses then close their HTTP/1 connection).
pub(crate) fn is_draining() -> bool {
    DRAINING.load(Ordering::Relaxed)
}

pub(crate) async fn serve(
    addr: SocketAddr,
    engine: EngineControl,
    sites: Arc<Sites>,
    status: crate::status::StatusSetup,
) -> Result<SocketAddr, String> {
    let state = Arc::new(Admin {
        engine,
        sites,
        status,
        routes: admin_routes(),
    });
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|e| format!("cannot listen on {addr} (admin): {e}"))?;
    let local = listener.local_addr().map_err(|e| e.to_string())?;
    tracing::info!("admin endpoint on http://{local}");
    // Tests and scripts read this line to learn the port when listening on :0.
    println!("ferrophp admin on http://{local}");
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let state = state.clone();
            let service = service_fn(move |req: Request<hyper::body::Incoming>| {
                let state = state.clone();
                let req =
                    req.map(|b| RequestBody::new(b, |e| BodyError::new(BodyErrorKind::Reset, e)));
                async move { Ok::<_, Infallible>(handle(&state, req).await) }
            });
            tokio::spawn(async move {
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    Ok(local)
}

/// What the admin endpoints work with.
struct Admin {
    engine: EngineControl,
    sites: Arc<Sites>,
    status: crate::status::StatusSetup,
    routes: Routes<Admin>,
}

async fn handle(admin: &Admin, req: Request<RequestBody>) -> Response<ResponseBody> {
    match admin.routes.find(&req) {
        Some(route) => route.answer(admin, req).await,
        None => body::text_response(StatusCode::NOT_FOUND, "Not Found"),
    }
}

/// The admin listener's endpoints (see the module docs).
fn admin_routes() -> Routes<Admin> {
    let mut table = Routes::<Admin>::default();
    table
        .add(PathMatch::Exact("/status"), &[Method::GET], |admin, req| {
            routes::ready(
                match crate::status::render(req.uri().query().unwrap_or(""), &admin.status) {
                    Ok((content_type, body)) => ok_response(content_type, body),
                    Err(why) => body::text_response(StatusCode::NOT_FOUND, &why),
                },
            )
        })
        .add(
            PathMatch::Exact("/workers/restart"),
            &[Method::POST],
            restart_workers,
        )
        .add(PathMatch::Exact("/readyz"), &[Method::GET], |_, _| {
            routes::ready(if DRAINING.load(Ordering::Relaxed) {
                body::text_response(StatusCode::SERVICE_UNAVAILABLE, "draining")
            } else {
                body::text_response(StatusCode::OK, "ready")
            })
        })
        .add(PathMatch::Exact("/health"), &[Method::GET], health)
        .add(PathMatch::Exact("/healthz"), &[Method::GET], health)
        .add(PathMatch::Exact("/threads"), &[Method::GET], |_, _| {
            routes::ready(json_response(threads_json()))
        })
        .add(
            PathMatch::Exact("/frankenphp/threads"),
            &[Method::GET],
            |_, _| routes::ready(json_response(frankenphp_threads_json())),
        )
        .add(PathMatch::Exact("/metrics"), &[Method::GET], |_, _| {
            routes::ready(ok_response(
                "text/plain; version=0.0.4; charset=utf-8",
                crate::metrics::render(),
            ))
        });
    table
}

/// `POST /workers/restart`: a reload, off the runtime (it resolves paths on disk).
fn restart_workers(admin: &Admin, _: Request<RequestBody>) -> RouteFuture<'_> {
    Box::pin(async move {
        tracing::info!("admin: restarting workers, resolving the document root again");
        let sites = admin.sites.clone();
        let reloaded = tokio::task::spawn_blocking(move || sites.reload())
            .await
            .unwrap_or_else(|e| Err(e.to_string()));
        let answer = match &reloaded {
            Ok(r) => body::text_response(
                StatusCode::OK,
                &format!("restarting workers; document root {}", r.root.display()),
            ),
            Err(e) => body::text_response(
                StatusCode::CONFLICT,
                &format!("reload refused, still serving the previous release: {e}"),
            ),
        };
        crate::site::log_reload("admin", reloaded);
        answer
    })
}

/// `GET /health`, `GET /healthz`: liveness, with each worker's requests served.
fn health(admin: &Admin, _: Request<RequestBody>) -> RouteFuture<'_> {
    let served: Vec<String> = admin
        .engine
        .worker_requests_served()
        .iter()
        .map(u64::to_string)
        .collect();
    let json = format!(
        r#"{{"status":"ok","worker_requests":[{}]}}"#,
        served.join(",")
    );
    routes::ready(json_response(json))
}

fn json_response(json: String) -> Response<ResponseBody> {
    ok_response("application/json", json)
}

/// A 200 with `content` of `content_type` (its length is the body's own).
fn ok_response(content_type: &'static str, content: String) -> Response<ResponseBody> {
    let mut resp = body::text_response(StatusCode::OK, "");
    *resp.body_mut() = body::full(content);
    resp.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static(content_type),
    );
    resp.headers_mut().remove(http::header::CONTENT_LENGTH);
    resp
}

/// `GET /threads`: `{"threads":[{"name":..,"pool":..,"state":..,"busy":..,"uri":..,
/// "requests":..,"memory_bytes":..},..]}`. `state` is the thread's state machine's
/// (`booting`, `idle`, `busy`, `draining`, `restarting`, `done`; see
/// docs/architecture.md).
fn threads_json() -> String {
    let threads: Vec<serde_json::Value> = worker::observe::threads()
        .into_iter()
        .map(|t| {
            serde_json::json!({
                "name": t.name,
                "pool": t.pool,
                "kind": t.kind.as_str(),
                "state": t.state.as_str(),
                "busy": t.state == worker::observe::ThreadState::Busy,
                "uri": t.current,
                "requests": t.requests,
                "memory_bytes": t.memory_bytes,
            })
        })
        .collect();
    serde_json::json!({ "threads": threads }).to_string()
}

/// `GET /frankenphp/threads`, shaped as FrankenPHP's (docs/metrics.md in its repository):
/// `{"ThreadDebugStates":[{"Index","Name","State","IsWaiting","IsBusy",
/// "WaitingSinceMilliseconds","CurrentURI","CurrentMethod","RequestStartedAt",
/// "RequestCount","MemoryUsage"}],"ReservedThreadCount":0}`.
fn frankenphp_threads_json() -> String {
    use worker::observe::ThreadState;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let threads: Vec<serde_json::Value> = worker::observe::threads()
        .into_iter()
        .enumerate()
        .map(|(i, t)| {
            let busy = t.state == ThreadState::Busy;
            let waiting = t.state == ThreadState::Idle;
            let (method, uri) = t
                .current
                .as_deref()
                .and_then(|c| c.split_once(' '))
                .unwrap_or(("", ""));
            serde_json::json!({
                "Index": i,
                "Name": match t.kind {
                    worker::PoolKind::Classic => "regular".into(),
                    worker::PoolKind::Worker => format!("worker-{}", t.pool),
                    worker::PoolKind::Background => format!("background-{}", t.pool),
                },
                // FrankenPHP's state names for ours.
                "State": match t.state {
                    ThreadState::Idle | ThreadState::Busy => "ready",
                    ThreadState::Booting => "booting",
                    ThreadState::Restarting => "restarting",
                    ThreadState::Draining => "shutting down",
                    ThreadState::Done => "done",
                    // Stuck past its deadline and replaced: FrankenPHP has no such state.
                    ThreadState::Retired => "retired",
                },
                "IsWaiting": waiting,
                "IsBusy": busy,
                "WaitingSinceMilliseconds": if waiting { now.saturating_sub(t.since_unix_ms) } else { 0 },
                "CurrentURI": uri,
                "CurrentMethod": method,
                "RequestStartedAt": if busy { t.since_unix_ms } else { 0 },
                "RequestCount": t.requests,
                "MemoryUsage": t.memory_bytes,
            })
        })
        .collect();
    serde_json::json!({ "ThreadDebugStates": threads, "ReservedThreadCount": 0 }).to_string()
}
