//! The Mercure hub mounted on the public listeners: starting the core's [`mercure::Hub`]
//! from the configuration, its routes (`/.well-known/mercure` and everything under it,
//! the subscriptions API included) in the server's route table, the translation of an
//! `http::Request` into the core's plain [`mercure::Request`] and of its
//! [`mercure::Response`] back (an event stream becomes a streaming body, flushed chunk
//! by chunk), and the hub's families on `/metrics`. The protocol itself (auth, CORS,
//! selectors, history, heartbeats, slow subscribers) is the core's; nothing here knows
//! it.

use std::fmt::Write as _;
use std::pin::Pin;
use std::sync::OnceLock;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{HeaderName, HeaderValue, Method, Request, Response, StatusCode};
use http_body::Frame;
use http_body_util::{BodyExt, Limited};

use crate::body::{self, BodyErrorKind, RequestBody, ResponseBody};
use crate::routes::RouteFuture;

/// A publish form is small: a body past this gets 413 (the reference hub reads forms
/// through Go's `ParseForm`, which stops at 10 MB).
const MAX_FORM_BYTES: usize = 10 << 20;

/// The hub this process serves, for `/metrics`.
static HUB: OnceLock<mercure::Hub> = OnceLock::new();

/// Starts the hub (on the server's runtime: its timers and the Redis reader run there)
/// and hands it to the PHP side for `mercure_publish()`.
pub(crate) fn start(config: mercure::Config) -> Result<mercure::Hub, String> {
    let hub = mercure::Hub::start(config).map_err(|e| e.to_string())?;
    let _ = HUB.set(hub.clone());
    worker::set_mercure_hub(Some(hub.clone()));
    tracing::info!(
        path = mercure::HUB_PATH,
        transport = match hub.config().transport {
            mercure::TransportConfig::Local => "local",
            mercure::TransportConfig::Redis { .. } => "redis",
        },
        "Mercure hub mounted"
    );
    Ok(hub)
}

/// Everything under the hub's path (the subscriptions API).
pub(crate) const HUB_PREFIX: &str = "/.well-known/mercure/";

/// The answer of the hub's routes (`/.well-known/mercure` exactly and [`HUB_PREFIX`]),
/// which the listener's table holds when a hub is configured.
pub(crate) fn answer(hub: Option<&mercure::Hub>, req: Request<RequestBody>) -> RouteFuture<'_> {
    match hub {
        Some(hub) => Box::pin(handle(hub, req)),
        None => crate::routes::ready(body::text_response(StatusCode::NOT_FOUND, "Not Found")),
    }
}

/// One request to the hub, whatever protocol carried it.
async fn handle(hub: &mercure::Hub, req: Request<RequestBody>) -> Response<ResponseBody> {
    let (parts, body) = req.into_parts();
    // Only a publish reads its body; a subscriber's GET has none worth waiting for.
    let form = if parts.method == Method::POST {
        match Limited::new(body, MAX_FORM_BYTES).collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(e) => {
                let too_large = e
                    .downcast_ref::<http_body_util::LengthLimitError>()
                    .is_some()
                    || e.downcast_ref::<crate::body::BodyError>()
                        .is_some_and(|b| b.kind() == BodyErrorKind::TooLarge);
                return if too_large {
                    body::text_response(StatusCode::PAYLOAD_TOO_LARGE, "Payload Too Large")
                } else {
                    body::text_response(StatusCode::BAD_REQUEST, "Bad Request")
                };
            }
        }
    } else {
        Bytes::new()
    };
    // Header values that are not text cannot carry a token, an origin or an event id.
    let headers: Vec<(&str, &str)> = parts
        .headers
        .iter()
        .filter_map(|(n, v)| v.to_str().ok().map(|v| (n.as_str(), v)))
        .collect();
    let trace = parts
        .extensions
        .get::<ferrophp_trace::RequestTrace>()
        .map(|t| t.context);
    let request = mercure::Request {
        method: parts.method.as_str(),
        path: parts.uri.path(),
        query: parts.uri.query(),
        headers: &headers,
        trace,
    };
    let answer = hub.handle(request, &form).await;
    into_response(answer)
}

fn into_response(answer: mercure::Response) -> Response<ResponseBody> {
    let status = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = Response::new(match answer.body {
        mercure::Body::Empty => body::empty(),
        mercure::Body::Full(bytes) => body::full(bytes),
        mercure::Body::Events(subscription) => events(subscription),
    });
    *response.status_mut() = status;
    let headers = response.headers_mut();
    for (name, value) in answer.headers {
        // The core's names are static lowercase tokens; a value that is not a valid header
        // (an event id with odd bytes) is left out rather than failing the answer.
        if let Ok(value) = HeaderValue::from_str(&value) {
            if let Ok(name) = HeaderName::from_bytes(name.as_bytes()) {
                headers.append(name, value);
            }
        }
    }
    response
}

/// A subscription as a streaming body: each chunk is one frame, which hyper writes and
/// flushes at once (no buffering in between); the stream ends when the core ends it (a
/// slow subscriber closed, the write timeout, the hub stopped), and dropping the body (the
/// client gone) unsubscribes.
fn events(subscription: mercure::Subscription) -> ResponseBody {
    let stream = futures_util::stream::unfold(subscription, |mut s| async move {
        let chunk = s.next_chunk().await?;
        Some((Ok::<_, std::io::Error>(Frame::data(chunk)), s))
    });
    EventBody(std::sync::Mutex::new(Box::pin(stream))).boxed()
}

type EventStream =
    Pin<Box<dyn futures_core::Stream<Item = Result<Frame<Bytes>, std::io::Error>> + Send>>;

/// The event stream as an `http_body::Body`. A response body must be `Sync`; the stream
/// (a future borrowing the subscription) need not be, so it sits in a `Mutex`, which is
/// never locked: `poll_frame` has it exclusively (`Mutex::get_mut`).
struct EventBody(std::sync::Mutex<EventStream>);

impl http_body::Body for EventBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        let stream = self
            .get_mut()
            .0
            .get_mut()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        stream.as_mut().poll_next(cx)
    }
}

/// `--mercure-discovery`: a PHP response gets the hub's `Link` header, unless the script
/// already sent one with `rel="mercure"` (an app that names its own public hub URL).
pub(crate) fn add_discovery(
    response: &mut Response<ResponseBody>,
    link: &HeaderValue,
    mode: crate::mode::Mode,
) {
    use crate::mode::Mode;
    if !matches!(mode, Mode::Classic | Mode::Worker) {
        return;
    }
    let headers = response.headers_mut();
    let has_own = headers.get_all(http::header::LINK).iter().any(|v| {
        v.to_str()
            .is_ok_and(|v| v.to_ascii_lowercase().contains("rel=\"mercure\""))
    });
    if !has_own {
        headers.append(http::header::LINK, link.clone());
    }
}

/// `--hot-reload`: each burst of changed files becomes one update on
/// [`crate::config::HOT_RELOAD_TOPIC`], its data `{"changed": [paths]}`, for the pages'
/// client ([`HOT_RELOAD_JS`]).
pub(crate) fn hot_reload(hub: mercure::Hub) -> crate::workers::OnChange {
    Box::new(move |changed| {
        let paths: Vec<String> = changed.iter().map(|p| p.display().to_string()).collect();
        let update = mercure::Update::new(
            crate::config::HOT_RELOAD_TOPIC,
            serde_json::json!({ "changed": paths }).to_string(),
        );
        // The watch thread is not the runtime's: publishing may block it.
        match hub.publish_blocking(update, None) {
            Ok(_) => tracing::info!(files = paths.len(), "hot reload: change published"),
            Err(e) => tracing::warn!("hot reload: could not publish the change: {e}"),
        }
    })
}

/// Where the hot-reload client is served.
pub(crate) const HOT_RELOAD_JS_PATH: &str = "/.well-known/ferrophp/hot-reload.js";

/// The hot-reload client: subscribes to the URL in the page's
/// `<meta name="frankenphp-hot-reload:url">` (FrankenPHP's, which
/// `$_SERVER['FRANKENPHP_HOT_RELOAD']` fills), else ferrophp's topic, and reloads the
/// page on each change event.
pub(crate) const HOT_RELOAD_JS: &str = r#"// ferrophp hot reload (--hot-reload): reload when a watched file changes.
(() => {
  const meta = document.querySelector('meta[name="frankenphp-hot-reload:url"]');
  const url = (meta && meta.content) || '/.well-known/mercure?topic=urn%3Aferrophp%3Ahot-reload';
  const source = new EventSource(url);
  source.onmessage = (e) => {
    document.dispatchEvent(new CustomEvent('ferrophp:hot-reload', { detail: JSON.parse(e.data) }));
    source.close();
    location.reload();
  };
})();
"#;

/// The answer to [`HOT_RELOAD_JS_PATH`].
pub(crate) fn hot_reload_js() -> Response<ResponseBody> {
    let mut response = Response::new(body::full(HOT_RELOAD_JS));
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("text/javascript; charset=utf-8"),
    );
    response.headers_mut().insert(
        http::header::CACHE_CONTROL,
        HeaderValue::from_static("no-cache"),
    );
    response
}

/// The hub's families on `/metrics`, when one is mounted.
pub(crate) fn render_metrics(out: &mut String) {
    let Some(hub) = HUB.get() else { return };
    let s = hub.stats();
    let families: [(&str, &str, &str, u64); 10] = [
        (
            "ferrophp_mercure_subscribers",
            "gauge",
            "Mercure subscribers connected now.",
            s.subscribers,
        ),
        (
            "ferrophp_mercure_subscriptions_total",
            "counter",
            "Mercure subscribers ever connected.",
            s.subscriptions_total,
        ),
        (
            "ferrophp_mercure_updates_published_total",
            "counter",
            "Updates published through the hub (HTTP, mercure_publish(), subscription events).",
            s.published,
        ),
        (
            "ferrophp_mercure_updates_delivered_total",
            "counter",
            "Update deliveries to subscribers (one per subscriber reached).",
            s.delivered,
        ),
        (
            "ferrophp_mercure_updates_dropped_total",
            "counter",
            "Updates discarded with subscribers closed as too slow.",
            s.updates_dropped,
        ),
        (
            "ferrophp_mercure_slow_subscribers_closed_total",
            "counter",
            "Subscribers closed because their buffer was full.",
            s.slow_subscribers_closed,
        ),
        (
            "ferrophp_mercure_publish_errors_total",
            "counter",
            "Publishes that failed (transport down, hub stopped).",
            s.publish_errors,
        ),
        (
            "ferrophp_mercure_history_errors_total",
            "counter",
            "History writes that failed (the update was still delivered).",
            s.history_errors,
        ),
        (
            "ferrophp_mercure_transport_errors_total",
            "counter",
            "Transport errors (a Redis connection lost, a reply that failed).",
            s.transport_errors,
        ),
        (
            "ferrophp_mercure_history_updates",
            "gauge",
            "Updates held in the history.",
            s.history_len,
        ),
    ];
    for (name, kind, help, value) in families {
        let _ = writeln!(
            out,
            "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}"
        );
    }
    let _ = writeln!(
        out,
        "# HELP ferrophp_mercure_transport_connected Whether the hub's transport is connected (1) or not (0).\n\
         # TYPE ferrophp_mercure_transport_connected gauge\n\
         ferrophp_mercure_transport_connected {}",
        u8::from(s.transport_connected)
    );
    let name = "ferrophp_mercure_fanout_seconds";
    let _ = writeln!(
        out,
        "# HELP {name} Fan-out latency: from the publish to the update in every matching subscriber's buffer.\n# TYPE {name} summary"
    );
    for q in [0.5, 0.9, 0.99] {
        if let Some(v) = s.fanout_quantile(q) {
            let _ = writeln!(out, "{name}{{quantile=\"{q}\"}} {v}");
        }
    }
    let _ = writeln!(
        out,
        "{name}_sum {}\n{name}_count {}",
        s.fanout_seconds.sum(),
        s.fanout_seconds.count()
    );
}
