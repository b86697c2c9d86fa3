//! The plain HTTP listener of automatic HTTPS (`--http-listen`, default port 80): it
//! answers the ACME CA's HTTP-01 requests (`GET /.well-known/acme-challenge/{token}`)
//! from the certificate manager's open challenges and sends every other request to the
//! same host and target over HTTPS with a 308 (`tls::https_redirect`). No PHP, no static
//! files: nothing of the site is ever served in clear text.
//!
//! HTTP/1.1 only (hyper's HTTP/1 connection): the CA and browsers speak nothing else to an
//! `http://` URL. hyper's header read timeout (`--header-timeout-ms`) bounds the first
//! request and each idle keep-alive wait, so a client that connects and sends nothing
//! holds its slot of the connection cap no longer than on the HTTPS port.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http::{header, Method, Response, StatusCode};
use http_body_util::Full;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::Watcher;
use tokio::net::TcpStream;

use super::Listener;
use crate::serve::connection::Connections;
use crate::tls::{self, Challenges};

pub(in crate::serve) struct RedirectListener {
    socket: tokio::net::TcpListener,
    local: SocketAddr,
    /// Where the HTTP-01 answers come from.
    challenges: Arc<Challenges>,
    /// The HTTPS listener's port, named in the redirects unless it is 443.
    https_port: u16,
}

impl RedirectListener {
    pub(super) fn new(
        socket: tokio::net::TcpListener,
        challenges: Arc<Challenges>,
        https_port: u16,
    ) -> std::io::Result<RedirectListener> {
        let local = socket.local_addr()?;
        Ok(RedirectListener {
            socket,
            local,
            challenges,
            https_port,
        })
    }

    pub(super) fn local_addr(&self) -> SocketAddr {
        self.local
    }
}

impl Listener for RedirectListener {
    type Conn = TcpStream;
    type Shared = Connections;

    async fn accept(&self) -> std::io::Result<(TcpStream, SocketAddr)> {
        self.socket.accept().await
    }

    fn serve(
        &self,
        stream: TcpStream,
        _remote: SocketAddr,
        shared: Arc<Connections>,
        watcher: Watcher,
    ) -> impl std::future::Future<Output = ()> + Send + 'static {
        let challenges = self.challenges.clone();
        let https_port = self.https_port;
        async move {
            let _ = stream.set_nodelay(true);
            let service = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                let response = answer(&challenges, https_port, &req);
                async move { Ok::<_, Infallible>(response) }
            });
            let mut http1 = hyper::server::conn::http1::Builder::new();
            http1
                .timer(TokioTimer::new())
                .header_read_timeout(shared.header_timeout)
                .max_buf_size(16 * 1024);
            let conn = http1.serve_connection(TokioIo::new(stream), service);
            // An error ends this connection only.
            let _ = watcher.watch(conn).await;
        }
    }
}

/// The answer to one plain request: the key authorization of an open HTTP-01 challenge,
/// 404 for any other path under the challenge prefix (the CA must see a failure, never a
/// redirect to a page), a 308 to HTTPS for everything else, 400 without a usable host.
pub(super) fn answer<B>(
    challenges: &Challenges,
    https_port: u16,
    req: &hyper::Request<B>,
) -> Response<Full<Bytes>> {
    let path = req.uri().path();
    if path.starts_with(tls::HTTP01_PATH_PREFIX) {
        let found = matches!(*req.method(), Method::GET | Method::HEAD)
            .then(|| challenges.http01_answer_for_path(path))
            .flatten();
        return match found {
            Some(key_authorization) => {
                tracing::info!(path, "answered the ACME CA's HTTP-01 request");
                plain(StatusCode::OK, key_authorization)
            }
            None => plain(StatusCode::NOT_FOUND, String::new()),
        };
    }
    // The Host header, or the authority of an absolute-form target (RFC 9112 §3.2.2).
    let host = req
        .uri()
        .authority()
        .map(|a| a.as_str())
        .or_else(|| req.headers().get(header::HOST)?.to_str().ok());
    let target = req.uri().path_and_query().map_or("/", |pq| pq.as_str());
    match tls::https_redirect(host, target, https_port) {
        Some(location) => Response::builder()
            .status(tls::REDIRECT_STATUS)
            .header(header::LOCATION, location)
            .header(header::CONTENT_LENGTH, "0")
            .body(Full::new(Bytes::new()))
            .unwrap_or_else(|_| plain(StatusCode::BAD_REQUEST, String::new())),
        None => plain(
            StatusCode::BAD_REQUEST,
            "no valid Host to redirect to\n".into(),
        ),
    }
}

fn plain(status: StatusCode, body: String) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/plain"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(target: &str, host: Option<&str>) -> hyper::Request<()> {
        let mut builder = hyper::Request::builder().uri(target);
        if let Some(host) = host {
            builder = builder.header(header::HOST, host);
        }
        builder.body(()).unwrap()
    }

    #[test]
    fn challenges_are_answered_and_everything_else_goes_to_https() {
        let challenges = Arc::new(Challenges::in_memory());
        let guard = challenges.set_http01("tok_1", "tok_1.thumb").unwrap();
        let open = answer(
            &challenges,
            443,
            &get("/.well-known/acme-challenge/tok_1", Some("a.example")),
        );
        assert_eq!(open.status(), 200);
        drop(guard);
        let closed = answer(
            &challenges,
            443,
            &get("/.well-known/acme-challenge/tok_1", Some("a.example")),
        );
        assert_eq!(closed.status(), 404);
        let moved = answer(
            &challenges,
            8443,
            &get("/cart?id=1", Some("a.example:8080")),
        );
        assert_eq!(moved.status(), 308);
        assert_eq!(
            moved.headers()[header::LOCATION],
            "https://a.example:8443/cart?id=1"
        );
        // An unknown token is a plain 404, never a redirect.
        let unknown = answer(
            &challenges,
            443,
            &get("/.well-known/acme-challenge/abcdef", Some("a.example")),
        );
        assert_eq!(unknown.status(), 404);
        // No host, or a host that must not reach a header.
        assert_eq!(answer(&challenges, 443, &get("/", None)).status(), 400);
        assert_eq!(
            answer(&challenges, 443, &get("/", Some("a.example/x"))).status(),
            400
        );
    }
}
