//! The hub's HTTP endpoints as plain data in, plain data out: [`Hub::handle`] takes a
//! [`Request`] (method, path, query, headers) and the body, and returns a [`Response`]
//! (status, headers, and either a complete body or a [`Subscription`] to stream). The
//! server's mount translates hyper's types to these and back, nothing more.
//!
//! Routes, as the reference hub serves them: `GET`/`HEAD /.well-known/mercure`
//! subscribe, `POST` publishes, `OPTIONS` answers CORS preflights (when CORS origins are
//! configured), `GET /.well-known/mercure/subscriptions[/{topic}[/{subscriber}]]` is the
//! subscriptions API (when enabled). Every answer carries the same security headers.

use bytes::Bytes;

use crate::auth::authenticate;
use crate::config::HUB_PATH;
use crate::cors::{Cors, CorsHeaders};
use crate::hub::{Hub, SubscribeOptions};
use crate::request::{
    is_form_content_type, last_event_id, parse_publish_form, parse_subscribe_query, HttpError,
    Request,
};
use crate::selector::any_topic_matches;
use crate::subscriber::Subscription;
use crate::subscriptions::{parse_api_path, ApiPath, JSONLD_CONTEXT};
use crate::update::UpdateError;

/// A response to write.
#[derive(Debug)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// Headers (lowercase names).
    pub headers: Vec<(&'static str, String)>,
    /// The body.
    pub body: Body,
}

/// A response body.
#[derive(Debug)]
pub enum Body {
    /// Nothing.
    Empty,
    /// These bytes.
    Full(Bytes),
    /// An event stream: write each chunk as it comes and flush; end when it ends.
    Events(Subscription),
}

/// Whether `path` is the hub's (the server routes it to [`Hub::handle`]).
pub fn is_hub_path(path: &str) -> bool {
    path == HUB_PATH
        || path
            .strip_prefix(HUB_PATH)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// The discovery header's value for `hub_url` (`Link: <hub_url>; rel="mercure"`).
pub fn link_header(hub_url: &str) -> String {
    format!("<{hub_url}>; rel=\"mercure\"")
}

const SECURITY_HEADERS: [(&str, &str); 4] = [
    ("x-frame-options", "DENY"),
    ("x-content-type-options", "nosniff"),
    ("x-xss-protection", "1; mode=block"),
    ("content-security-policy", "default-src 'self'"),
];

fn text(status: u16, message: &str) -> Response {
    Response {
        status,
        headers: vec![("content-type", "text/plain; charset=utf-8".to_owned())],
        body: Body::Full(Bytes::from(format!("{message}\n"))),
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        503 => "Service Unavailable",
        _ => "Error",
    }
}

impl From<HttpError> for Response {
    fn from(e: HttpError) -> Response {
        text(e.status, &e.message)
    }
}

fn unauthorized(why: impl std::fmt::Display) -> Response {
    tracing::debug!(reason = %why, "mercure: unauthorized");
    text(401, reason(401))
}

fn method_not_allowed(allow: &str) -> Response {
    let mut r = text(405, reason(405));
    r.headers.push(("allow", allow.to_owned()));
    r
}

impl Hub {
    /// Answers a request to the hub's paths ([`is_hub_path`]). `body` is the request
    /// body, read by the caller (bounded by it: a publish form is small).
    pub async fn handle(&self, request: Request<'_>, body: &[u8]) -> Response {
        let cors = &self.inner.cors;
        let mut cors_headers: CorsHeaders = Vec::new();
        let mut response = if cors.enabled()
            && Cors::is_preflight(
                request.method,
                request.header("access-control-request-method"),
            ) {
            cors_headers = cors.preflight(
                request.header("origin"),
                request.header("access-control-request-method"),
                request.header("access-control-request-headers"),
            );
            Response {
                status: 204,
                headers: Vec::new(),
                body: Body::Empty,
            }
        } else {
            if cors.enabled() {
                cors_headers = cors.actual(request.method, request.header("origin"));
            }
            self.route(&request, body).await
        };
        response.headers.extend(cors_headers);
        for (name, value) in SECURITY_HEADERS {
            if !response.headers.iter().any(|(n, _)| *n == name) {
                response.headers.push((name, value.to_owned()));
            }
        }
        response
    }

    async fn route(&self, request: &Request<'_>, body: &[u8]) -> Response {
        if request.path == HUB_PATH {
            return match request.method {
                "GET" | "HEAD" => self.handle_subscribe(request).await,
                "POST" if self.inner.publisher.is_some() => {
                    self.handle_publish(request, body).await
                }
                _ if self.inner.publisher.is_some() => method_not_allowed("GET, HEAD, POST"),
                _ => method_not_allowed("GET, HEAD"),
            };
        }
        if self.inner.config.subscriptions {
            if let Some(api) = parse_api_path(request.path) {
                return match request.method {
                    "GET" | "HEAD" => self.handle_api(request, api),
                    _ => method_not_allowed("GET, HEAD"),
                };
            }
        }
        text(404, "404 page not found")
    }

    async fn handle_subscribe(&self, request: &Request<'_>) -> Response {
        let inner = &self.inner;
        let query = parse_subscribe_query(request.query);
        let grants = match &inner.subscriber {
            Some(verifier) => match authenticate(
                request,
                &query.authorization,
                &inner.config.cookie_name,
                verifier,
                None,
                false,
            ) {
                Err(e) => return unauthorized(e),
                Ok(None) if !inner.config.anonymous => return unauthorized("no token"),
                Ok(claims) => claims.map(|c| self.grants(c)),
            },
            None => None,
        };
        if let Err(e) = query.check(inner.config.max_topics) {
            return e.into();
        }
        let resume = last_event_id(
            request.header("last-event-id"),
            query.last_event_id.as_deref(),
        );
        let subscription = match self
            .subscribe(SubscribeOptions {
                topics: query.topics,
                last_event_id: resume,
                grants,
            })
            .await
        {
            Ok(s) => s,
            Err(e) => return text(e.status(), &e.to_string()),
        };
        let mut headers = vec![
            ("content-type", "text/event-stream".to_owned()),
            (
                "cache-control",
                "private, no-cache, no-store, must-revalidate, max-age=0".to_owned(),
            ),
            ("pragma", "no-cache".to_owned()),
            ("expire", "0".to_owned()),
            ("x-accel-buffering", "no".to_owned()),
        ];
        if let Some(id) = subscription.last_event_id() {
            headers.push(("last-event-id", id.to_owned()));
        }
        Response {
            status: 200,
            headers,
            body: Body::Events(subscription),
        }
    }

    async fn handle_publish(&self, request: &Request<'_>, body: &[u8]) -> Response {
        let inner = &self.inner;
        let Some(verifier) = &inner.publisher else {
            return method_not_allowed("GET, HEAD");
        };
        let query = parse_subscribe_query(request.query);
        let claims = match authenticate(
            request,
            &query.authorization,
            &inner.config.cookie_name,
            verifier,
            Some(&inner.publish_origins),
            true,
        ) {
            Ok(Some(c)) if c.publish.is_some() => c,
            Ok(_) => return unauthorized("no token or no mercure.publish claim"),
            Err(e) => return unauthorized(e),
        };
        // Only form bodies are read (as Go's ParseForm): anything else has no topic.
        let form: &[u8] = if is_form_content_type(request.header("content-type")) {
            body
        } else {
            b""
        };
        let update = match parse_publish_form(form) {
            Ok(u) => u,
            Err(e) => return e.into(),
        };
        // Before matching: a huge topic list must not cost topics x selectors first.
        if update.topics.len() > inner.config.max_topics {
            return text(400, &UpdateError::TooManyTopics.to_string());
        }
        if !self.grants(claims).may_publish(&update.topics) {
            return unauthorized("topics not allowed by mercure.publish");
        }
        match self.publish_traced(update, request.trace.as_ref()).await {
            Ok(id) => Response {
                status: 200,
                headers: vec![("content-type", "text/plain; charset=utf-8".to_owned())],
                body: Body::Full(Bytes::from(id)),
            },
            Err(e) => text(e.status(), &e.to_string()),
        }
    }

    fn handle_api(&self, request: &Request<'_>, api: ApiPath) -> Response {
        let inner = &self.inner;
        let uri = request.request_uri();
        if let Some(verifier) = &inner.subscriber {
            let query = parse_subscribe_query(request.query);
            let allowed = match authenticate(
                request,
                &query.authorization,
                &inner.config.cookie_name,
                verifier,
                None,
                false,
            ) {
                Ok(Some(claims)) => {
                    let grants = self.grants(claims);
                    grants
                        .subscribe
                        .as_deref()
                        .is_some_and(|sel| any_topic_matches(&[uri.as_str()], sel))
                }
                Ok(None) => false,
                Err(e) => return unauthorized(e),
            };
            if !allowed {
                return unauthorized("the subscriptions API needs a matching mercure.subscribe");
            }
        }
        let last = self.last_event_id();
        if request.header("if-none-match") == Some(last.as_str()) {
            return Response {
                status: 304,
                headers: Vec::new(),
                body: Body::Empty,
            };
        }
        let json = match api {
            ApiPath::All => self.subscriptions_doc(&uri, None).to_json(),
            ApiPath::Topic(t) => self.subscriptions_doc(&uri, Some(&t)).to_json(),
            ApiPath::One { topic, subscriber } => {
                let found = self
                    .subscriptions(Some(&topic))
                    .into_iter()
                    .find(|d| d.subscriber == subscriber);
                match found {
                    Some(mut doc) => {
                        doc.context = Some(JSONLD_CONTEXT);
                        doc.last_event_id = Some(last.clone());
                        doc.to_json()
                    }
                    None => return text(404, "404 page not found"),
                }
            }
        };
        Response {
            status: 200,
            headers: vec![
                ("content-type", "application/ld+json".to_owned()),
                ("etag", last),
            ],
            body: Body::Full(Bytes::from(json)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_and_links() {
        assert!(is_hub_path("/.well-known/mercure"));
        assert!(is_hub_path("/.well-known/mercure/subscriptions"));
        assert!(!is_hub_path("/.well-known/mercurex"));
        assert!(!is_hub_path("/index.php"));
        assert_eq!(
            link_header("https://example.com/.well-known/mercure"),
            "<https://example.com/.well-known/mercure>; rel=\"mercure\""
        );
    }
}
