//! Runs a PHP script for an HTTP request, in the steps of [`PhpRunner::run_with_router`]:
//! admit the request to its pool (body size limit, a thread permit within `max_wait`),
//! build the `worker::ScriptRequest` (CGI variables, the body streamed in by
//! `request_body.rs`, the sink PHP's output streams out through, `response.rs`), wait
//! for PHP's reply (in the pool's queue at most until `max_wait`), and turn it into the
//! response (or an error for a body that broke off, or the file of an X-Sendfile).

mod request_body;
mod response;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use http::{HeaderName, HeaderValue, Request, Response, StatusCode};
use tokio::sync::{oneshot, OwnedSemaphorePermit, Semaphore};
use worker::{CgiRequest, Engine, Placement, ScriptRequest, ServerName, Target, STALLED_AFTER};

use crate::body::{self, BodyErrorKind, RequestBody, ResponseBody};
use crate::peer::{strip_port, Connection};
use crate::sendfile::{RequestFacts, Sendfile};
use request_body::BodyState;
pub(crate) use response::OnStall;
use response::{build_response, HttpSink, Reply, ReplyBody};

/// What every PHP request shares: the engine, the thread permits and the limits.
pub(crate) struct PhpRunner {
    pub engine: Engine,
    /// Permits per pool: what may be in a pool at once. A request waits for one here, and
    /// then possibly in the pool's queue, up to `max_wait` in all before a 503.
    pub permits: PoolPermits,
    pub max_wait: Duration,
    pub max_body_size: u64,
    /// Longest wait for the next piece of a request body (slowloris on the body).
    pub body_timeout: Duration,
    /// Longest a PHP thread waits for the client to take streamed output.
    pub send_timeout: Duration,
    pub env: Arc<[(std::ffi::CString, std::ffi::CString)]>,
    pub server_name: Option<Arc<str>>,
    /// `--sendfile-dir`: PHP may answer with a file from there (X-Sendfile).
    pub sendfile: Option<Sendfile>,
}

/// What may be in each pool at once ([`Engine::max_in_flight`]: about three requests per
/// thread its ceiling allows; requests past the threads running now wait in the engine's
/// queue, which is what makes an autoscaling pool grow), for the classic pool and each
/// worker.
pub(crate) struct PoolPermits {
    classic: Arc<Semaphore>,
    workers: Vec<Arc<Semaphore>>,
}

impl PoolPermits {
    /// Sized from the running engine's pools.
    pub(crate) fn for_engine(engine: &Engine, workers: usize) -> PoolPermits {
        let permits = |target| Arc::new(Semaphore::new(engine.max_in_flight(target)));
        PoolPermits {
            classic: permits(Target::Classic),
            workers: (0..workers).map(|i| permits(Target::Worker(i))).collect(),
        }
    }

    /// The permits of `target`'s pool.
    pub(crate) fn of(&self, target: Target) -> &Arc<Semaphore> {
        match target {
            Target::Classic => &self.classic,
            Target::Worker(i) => &self.workers[i],
        }
    }
}

/// The script and the URL parts routing decided (shared with its cached decision).
pub(crate) struct Script {
    /// The document root it was routed in (the release it runs from).
    pub document_root: Arc<str>,
    pub filename: Arc<Path>,
    pub script_name: Arc<str>,
    pub path_info: Arc<str>,
    pub document_uri: Arc<str>,
}

/// A request let into its pool ([`PhpRunner::admit`]).
struct Admitted {
    /// The pool permit, held by the response sink until the script ends.
    permit: OwnedSemaphorePermit,
    /// When the request started waiting for a thread, if it had to: `max_wait` counts
    /// from there, here and in the pool's queue.
    wait_started: Option<Instant>,
    /// The request's Content-Length, if it declared one.
    declared_length: Option<u64>,
}

/// What turning PHP's reply into the response needs of a request handed to PHP.
struct Pending<'a> {
    /// Where the sink hands over the response head and the body (or its stream).
    reply: oneshot::Receiver<Reply>,
    /// How the request body ended, set by the task feeding it to PHP.
    body_state: BodyState,
    /// `--sendfile-dir` and what it keeps of the request to answer with a file.
    sendfile: Option<(&'a Sendfile, RequestFacts)>,
}

impl PhpRunner {
    /// Runs `script` for `req` on `target`'s pool; PHP's response, streamed.
    pub(crate) async fn run(
        &self,
        req: Request<RequestBody>,
        conn: &Connection,
        script: Script,
        target: Target,
    ) -> Response<ResponseBody> {
        self.run_with_router(req, conn, script, target, None)
            .await
            .unwrap_or_else(|| {
                body::text_response(StatusCode::INTERNAL_SERVER_ERROR, "Internal Server Error")
            })
    }

    /// [`PhpRunner::run`] with a `php -S` router script running first (see
    /// `ScriptRequest::router`). None: the router declined a request whose script is the
    /// router itself (a static file or nothing), which the caller then answers.
    pub(crate) async fn run_with_router(
        &self,
        req: Request<RequestBody>,
        conn: &Connection,
        script: Script,
        target: Target,
        router: Option<PathBuf>,
    ) -> Option<Response<ResponseBody>> {
        let admitted = match self.admit(req.headers(), target).await {
            Ok(admitted) => admitted,
            Err(refused) => return Some(refused),
        };
        let wait_started = admitted.wait_started;
        let (request, pending) = self.build_script_request(req, conn, script, router, admitted);
        let reply = match self
            .await_reply(target, request, pending.reply, wait_started)
            .await
        {
            Ok(reply) => reply,
            Err(failed) => return Some(failed),
        };
        into_response(reply, pending.body_state, pending.sendfile).await
    }

    /// Lets the request into `target`'s pool: a 413 when it declares a body over the
    /// limit, a 503 when no permit frees up within `max_wait`.
    async fn admit(
        &self,
        headers: &http::HeaderMap,
        target: Target,
    ) -> Result<Admitted, Response<ResponseBody>> {
        let declared_length = headers
            .get(http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if declared_length.is_some_and(|n| n > self.max_body_size) {
            return Err(body::text_response(
                StatusCode::PAYLOAD_TOO_LARGE,
                "Payload Too Large",
            ));
        }
        // A free permit is the common case: take it without arming a timer.
        let semaphore = self.permits.of(target);
        if let Ok(permit) = semaphore.clone().try_acquire_owned() {
            crate::metrics::thread_acquired(Duration::ZERO);
            return Ok(Admitted {
                permit,
                wait_started: None,
                declared_length,
            });
        }
        let _queued = self
            .engine
            .pool_id(target)
            .map(crate::metrics::Queued::enter);
        let waiting = Instant::now();
        match tokio::time::timeout(self.max_wait, semaphore.clone().acquire_owned()).await {
            Ok(Ok(permit)) => {
                crate::metrics::thread_acquired(waiting.elapsed());
                Ok(Admitted {
                    permit,
                    wait_started: Some(waiting),
                    declared_length,
                })
            }
            _ => {
                crate::metrics::thread_wait_timed_out();
                Err(all_threads_busy())
            }
        }
    }

    /// The `ScriptRequest` for an admitted request: the body streamed in from the
    /// connection, the sink PHP's output goes out through (holding the permit), the
    /// router, the trace; and what the reply needs later.
    fn build_script_request(
        &self,
        req: Request<RequestBody>,
        conn: &Connection,
        script: Script,
        router: Option<PathBuf>,
        admitted: Admitted,
    ) -> (ScriptRequest, Pending<'_>) {
        let (mut parts, incoming) = req.into_parts();
        let interim = parts.extensions.remove::<crate::interim::Hints>();
        let on_stall = parts.extensions.remove::<OnStall>();
        let trace = parts.extensions.remove::<ferrophp_trace::RequestTrace>();
        if let Some(trace) = &trace {
            crate::traces::php_route(trace, &parts.method, &script.script_name);
        }
        // Set when the body breaks off (malformed chunk, reset stream, client gone) or a
        // body without Content-Length turns out to exceed the limit: PHP then saw a
        // truncated body, so the response must not look like a normal one.
        let mut body_state = BodyState::default();
        let body = request_body::body_reader(
            incoming,
            &parts.headers,
            admitted.declared_length,
            self.max_body_size,
            self.body_timeout,
            &mut body_state,
        );
        drop_ambiguous_headers(&mut parts.headers);
        let sendfile = self
            .sendfile
            .as_ref()
            .map(|s| (s, s.prepare_request(&parts.method, &mut parts.headers)));
        let (reply_tx, reply) = oneshot::channel();
        let sink = HttpSink::new(
            reply_tx,
            interim,
            on_stall,
            self.send_timeout,
            admitted.permit,
        );
        let mut request = self.request_for_script(parts, conn, script, sink);
        request.body = body;
        request.router = router;
        request.trace = trace;
        let pending = Pending {
            reply,
            body_state,
            sendfile,
        };
        (request, pending)
    }

    /// The request that runs `script`, its CGI variables from the request's head, the
    /// connection and the routing.
    fn request_for_script(
        &self,
        parts: http::request::Parts,
        conn: &Connection,
        script: Script,
        sink: HttpSink,
    ) -> ScriptRequest {
        let server_name = server_name(
            &parts.headers,
            &parts.uri,
            self.server_name.as_ref(),
            conn.local_addr,
        );
        let cgi = CgiRequest {
            method: parts.method,
            // Moved, not copied: REQUEST_URI and QUERY_STRING are read from it in place.
            target: parts.uri.into(),
            version: parts.version,
            headers: parts.headers,
            remote_addr: conn.remote_addr,
            local_addr: conn.local_addr,
            https: conn.https,
            server_name,
            document_root: script.document_root,
            script_name: script.script_name,
            path_info: script.path_info,
            document_uri: script.document_uri,
            env: self.env.clone(),
        };
        let mut request = ScriptRequest::shared(script.filename, Box::new(sink));
        request.cgi = Some(cgi);
        request
    }

    /// Hands the request to `target`'s pool and waits for PHP's reply: a 503 when the
    /// pool refuses it or it is still queued `max_wait` after it started waiting, a 500
    /// when PHP ended without one.
    async fn await_reply(
        &self,
        target: Target,
        request: ScriptRequest,
        mut reply: oneshot::Receiver<Reply>,
        wait_started: Option<Instant>,
    ) -> Result<Reply, Response<ResponseBody>> {
        let placement = match self.engine.dispatch(target, request) {
            Ok(placement) => placement,
            Err(_) => {
                return Err(body::text_response(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "Service Unavailable",
                ))
            }
        };
        let reply = match placement {
            Placement::Running => reply.await,
            // Queued behind busy threads: the timers are armed only now. If it is still
            // queued after STALLED_AFTER, the pool looks again whether its running threads
            // stalled (and an idle one should take it); at the deadline the request leaves
            // the queue unless a thread has taken it meanwhile.
            Placement::Queued(ticket) => {
                let deadline = wait_started.unwrap_or_else(Instant::now) + self.max_wait;
                let nudge_at = (Instant::now() + STALLED_AFTER).min(deadline);
                match tokio::time::timeout_at(nudge_at.into(), &mut reply).await {
                    Ok(reply) => reply,
                    Err(_) => {
                        self.engine.nudge(target);
                        match tokio::time::timeout_at(deadline.into(), &mut reply).await {
                            Ok(reply) => reply,
                            Err(_) if self.engine.withdraw(target, ticket) => {
                                crate::metrics::thread_wait_timed_out();
                                return Err(all_threads_busy());
                            }
                            Err(_) => reply.await,
                        }
                    }
                }
            }
        };
        reply.map_err(|_| {
            body::text_response(StatusCode::INTERNAL_SERVER_ERROR, "Internal Server Error")
        })
    }
}

/// The response to PHP's reply: none when the router declined (the caller answers); an
/// error when the request body broke off, since the script read a truncated body and
/// answered anyway (it may ignore the abort); else PHP's response, or the file it named
/// (X-Sendfile).
async fn into_response(
    reply: Reply,
    body_state: BodyState,
    sendfile: Option<(&Sendfile, RequestFacts)>,
) -> Option<Response<ResponseBody>> {
    if let ReplyBody::Declined = reply.body {
        return None;
    }
    Some(match body_state.failure() {
        None => {
            let response = build_response(reply, body_state);
            if let Some((sendfile, request)) = sendfile {
                if let Some(file) = sendfile.intercept(&response, &request).await {
                    return Some(file);
                }
            }
            response
        }
        Some(BodyErrorKind::TooLarge) => {
            body::text_response(StatusCode::PAYLOAD_TOO_LARGE, "Payload Too Large")
        }
        Some(BodyErrorKind::Reset | BodyErrorKind::Malformed) => {
            body::text_response(StatusCode::BAD_REQUEST, "Bad Request")
        }
        Some(BodyErrorKind::Stalled) => {
            body::text_response(StatusCode::REQUEST_TIMEOUT, "Request Timeout")
        }
    })
}

/// The 503 of a request that waited `max_wait` for a PHP thread.
fn all_threads_busy() -> Response<ResponseBody> {
    let mut resp = body::text_response(
        StatusCode::SERVICE_UNAVAILABLE,
        "Service Unavailable: all PHP threads are busy",
    );
    resp.headers_mut()
        .insert(http::header::RETRY_AFTER, HeaderValue::from_static("1"));
    resp
}

/// `SERVER_NAME`: the Host header without its port (sharing the header's bytes), else
/// the URI's host (an absolute-form target), the configured name, or the local address.
fn server_name(
    headers: &http::HeaderMap,
    uri: &http::Uri,
    configured: Option<&Arc<str>>,
    local_addr: SocketAddr,
) -> ServerName {
    if let Some(host) = headers.get(http::header::HOST) {
        if let Ok(text) = host.to_str() {
            return ServerName::host_prefix(host.clone(), strip_port(text).len());
        }
    }
    match (uri.host(), configured) {
        (Some(host), _) => ServerName::from(host),
        (None, Some(name)) => ServerName::from(name.clone()),
        (None, None) => ServerName::from(local_addr.ip().to_string()),
    }
}

/// Removes request headers whose names could pass for another header once PHP turns them
/// into `$_SERVER` keys: `X_Forwarded_For` and `X-Forwarded-For` both become
/// `HTTP_X_FORWARDED_FOR`, so a client could spoof what a proxy in front of us set (and
/// `Content_Type` would pose as `HTTP_CONTENT_TYPE`); PHP also turns `.` into `_` in
/// variable names, so `X.Forwarded.For` would collide too. Like nginx's defaults
/// (`ignore_invalid_headers on`, `underscores_in_headers off`), only names made of
/// letters, digits and `-` are kept; hyper has already refused names that are not HTTP
/// tokens. Other names are rare: the common case costs one scan and no allocation.
pub(crate) fn drop_ambiguous_headers(headers: &mut http::HeaderMap) {
    let ambiguous = |name: &HeaderName| {
        !name
            .as_str()
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-')
    };
    if !headers.keys().any(ambiguous) {
        return;
    }
    let names: Vec<HeaderName> = headers.keys().filter(|n| ambiguous(n)).cloned().collect();
    for name in names {
        tracing::debug!(header = %name, "dropping a request header with an ambiguous name");
        headers.remove(&name);
    }
}
