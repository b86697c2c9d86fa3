//! One request's way to its answer, whatever protocol carried it: the checks every
//! request passes (Host and `:authority`, CONNECT and odd transfer codings), the server's
//! own routes ([`server_routes`]: `OPTIONS *`, which asks about the server, not a
//! resource), routing to a static file, a PHP script (classic or worker) or an error, the
//! development server's routing (`php -S`), and the metrics, trace span and access log
//! of each response.

use std::time::Instant;

use http::{Method, Request, Response, StatusCode};
use worker::Target;

use super::app::App;
use crate::body::{self, RequestBody, ResponseBody};
use crate::mode::Mode;
use crate::peer::Connection;
use crate::php_bridge::Script;
use crate::routes::{self, PathMatch, Routes};
use crate::routing::Route;
use crate::site::Site;
use crate::static_files;

/// Answers one request, and records it (metrics, access log).
pub(super) async fn handle(
    app: &App,
    mut req: Request<RequestBody>,
    conn: &Connection,
) -> Response<ResponseBody> {
    let started = Instant::now();
    let method = req.method().clone();
    let uri = req.uri().clone();
    let http1 = req.version() < http::Version::HTTP_2;
    let mut mode = Mode::Static;
    // A sampled request's server span; it reaches the PHP thread through the extensions.
    let trace = crate::traces::start(&req, conn);
    if let Some(trace) = &trace {
        req.extensions_mut().insert(trace.clone());
    }
    let mut response = dispatch(app, req, conn, &mut mode).await;
    if let Some(link) = &app.mercure_link {
        crate::mercure_mount::add_discovery(&mut response, link, mode);
    }
    if let Some(trace) = trace {
        crate::traces::finish(trace, &response, mode);
    }
    if http1 && crate::admin::is_draining() {
        // The client leaves this connection after this response (`shutdown.rs`).
        response.headers_mut().insert(
            http::header::CONNECTION,
            http::HeaderValue::from_static("close"),
        );
    }
    crate::metrics::record_request(response.status().as_u16(), started.elapsed());
    crate::metrics::count_request(mode, response.status().as_u16());
    if app.access_log {
        crate::logging::access(conn.remote_addr, &method, &uri, &response, mode, started);
    }
    response
}

/// `mode` is set to the PHP mode when PHP answers (for metrics and the access log).
async fn dispatch(
    app: &App,
    mut req: Request<RequestBody>,
    conn: &Connection,
    mode: &mut Mode,
) -> Response<ResponseBody> {
    if let Err(why) = authority_as_host(&mut req).and_then(|()| check_host(&req)) {
        tracing::debug!("bad request: {why}");
        return body::text_response(StatusCode::BAD_REQUEST, "Bad Request");
    }
    if let Some(refusal) = refuse_tunnel_or_odd_framing(&req) {
        return refusal;
    }
    if let Some(route) = app.routes.find(&req) {
        *mode = route.mode();
        return route.answer(app, req).await;
    }
    // The release this request is served from, to its end.
    let site = app.sites.current();
    if app.dev {
        return dev_dispatch(app, &site, req, conn, mode).await;
    }
    match site.router.route(req.uri().path()) {
        route @ Route::Static(_) => non_php_route(route, &req).await,
        Route::Php {
            script_filename,
            script_name,
            path_info,
            document_uri,
        } => {
            let target = site
                .workers
                .by_path(req.uri().path())
                .or_else(|| site.workers.by_script(&script_filename))
                .map_or(Target::Classic, Target::Worker);
            let script = Script {
                document_root: site.document_root.clone(),
                filename: script_filename,
                script_name,
                path_info,
                document_uri,
            };
            *mode = match target {
                Target::Classic => Mode::Classic,
                Target::Worker(_) => Mode::Worker,
            };
            app.php.run(req, conn, script, target).await
        }
        route @ Route::RedirectToSlash => non_php_route(route, &req).await,
        Route::NotFound => match site.workers.by_path(req.uri().path()) {
            // A worker with a `match` pattern serves paths that name no file.
            Some(i) => {
                let script = Script {
                    document_root: site.document_root.clone(),
                    filename: site.workers.script(i).clone(),
                    script_name: no_name(),
                    path_info: no_name(),
                    document_uri: req.uri().path().into(),
                };
                *mode = Mode::Worker;
                app.php.run(req, conn, script, Target::Worker(i)).await
            }
            None => body::text_response(StatusCode::NOT_FOUND, "Not Found"),
        },
        Route::Forbidden => {
            tracing::debug!(path = req.uri().path(), "PHP refused in a no-PHP directory");
            body::text_response(StatusCode::FORBIDDEN, "Forbidden")
        }
        Route::BadRequest(why) => {
            tracing::debug!(path = req.uri().path(), "bad request: {why}");
            body::text_response(StatusCode::BAD_REQUEST, "Bad Request")
        }
    }
}

/// The development server's routing, as php -S: a path naming no file (and without a dot)
/// falls back to the nearest `index.php`/`index.html` up the path; the router script (if
/// any) runs first for every request; without one, or when it returns false, the PHP
/// script runs (in the same request) or the static file is served.
async fn dev_dispatch(
    app: &App,
    site: &Site,
    req: Request<RequestBody>,
    conn: &Connection,
    mode: &mut Mode,
) -> Response<ResponseBody> {
    let path = req.uri().path().to_owned();
    let mut route = site.router.route(&path);
    // php -S walks up a path without a dot to the nearest directory with an index.php or
    // index.html; the rest of the path is PATH_INFO.
    if matches!(route, Route::NotFound) && !path.contains('.') {
        let mut dir = path.as_str();
        'up: while let Some(i) = dir.rfind('/') {
            dir = &dir[..i];
            for index in ["index.php", "index.html"] {
                match site.router.route(&format!("{dir}/{index}")) {
                    Route::Php {
                        script_filename,
                        script_name,
                        document_uri,
                        ..
                    } => {
                        route = Route::Php {
                            script_filename,
                            script_name,
                            path_info: path[dir.len()..].into(),
                            document_uri,
                        };
                        break 'up;
                    }
                    found @ Route::Static(_) => {
                        route = found;
                        break 'up;
                    }
                    _ => {}
                }
            }
        }
    }
    let router = app.dev_router.clone();
    let script = match route {
        Route::Php {
            script_filename,
            script_name,
            path_info,
            document_uri,
        } => Script {
            document_root: site.document_root.clone(),
            filename: script_filename,
            script_name,
            path_info,
            document_uri,
        },
        // The router may still answer for anything else (a static file, a redirect, a
        // missing file); it is then the request's script.
        other => {
            let Some(router) = router else {
                return non_php_route(other, &req).await;
            };
            let method = req.method().clone();
            let headers = req.headers().clone();
            let uri = req.uri().clone();
            let script = Script {
                document_root: site.document_root.clone(),
                script_name: format!(
                    "/{}",
                    router.file_name().unwrap_or_default().to_string_lossy()
                )
                .into(),
                filename: router.as_path().into(),
                path_info: no_name(),
                document_uri: path.into(),
            };
            *mode = Mode::Classic;
            let served = app
                .php
                .run_with_router(req, conn, script, Target::Classic, Some(router))
                .await;
            return match served {
                Some(response) => response,
                None => {
                    let mut bare = Request::new(());
                    *bare.method_mut() = method;
                    *bare.headers_mut() = headers;
                    *bare.uri_mut() = uri;
                    *mode = Mode::Static;
                    non_php_route(other, &bare).await
                }
            };
        }
    };
    *mode = Mode::Classic;
    app.php
        .run_with_router(req, conn, script, Target::Classic, router)
        .await
        .unwrap_or_else(|| body::text_response(StatusCode::NOT_FOUND, "Not Found"))
}

/// An empty `SCRIPT_NAME` or `PATH_INFO`, shared (an `Arc<str>` of nothing would still be
/// an allocation per request).
fn no_name() -> std::sync::Arc<str> {
    static EMPTY: std::sync::LazyLock<std::sync::Arc<str>> = std::sync::LazyLock::new(|| "".into());
    EMPTY.clone()
}

/// The answer to a route that runs no PHP.
async fn non_php_route<B>(route: Route, req: &Request<B>) -> Response<ResponseBody> {
    match route {
        Route::Static(path) => static_files::serve(&path, req.method(), req.headers()).await,
        Route::RedirectToSlash => {
            let mut location = format!("{}/", req.uri().path());
            if let Some(q) = req.uri().query() {
                location.push('?');
                location.push_str(q);
            }
            let mut resp =
                body::text_response(StatusCode::PERMANENT_REDIRECT, "Permanent Redirect");
            if let Ok(v) = http::HeaderValue::from_str(&location) {
                resp.headers_mut().insert(http::header::LOCATION, v);
            }
            resp
        }
        Route::Forbidden => body::text_response(StatusCode::FORBIDDEN, "Forbidden"),
        Route::BadRequest(_) => body::text_response(StatusCode::BAD_REQUEST, "Bad Request"),
        Route::NotFound | Route::Php { .. } => {
            body::text_response(StatusCode::NOT_FOUND, "Not Found")
        }
    }
}

/// The methods the server routes (to PHP; static files take GET and HEAD and answer 405
/// with their own `Allow` to the others): what `OPTIONS *` and a refused CONNECT list.
const ROUTED_METHODS: &str = "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS";

/// The public listener's own routes, answered before the app's routing.
///
/// `OPTIONS *` (the asterisk form, RFC 9112 §3.2.4): the only method the asterisk target
/// is defined for. Any other method with `*` goes on to routing, which refuses it (400).
pub(super) fn server_routes(mercure: bool) -> Routes<App> {
    let mut table = Routes::<App>::default();
    table.add(PathMatch::Exact("*"), &[Method::OPTIONS], |_, _| {
        routes::ready(server_options())
    });
    if mercure {
        // The hub and its subscriptions API, any method (the hub answers 405 itself).
        table
            .add_as(
                Mode::Mercure,
                PathMatch::Exact(::mercure::HUB_PATH),
                &[],
                |app, req| crate::mercure_mount::answer(app.mercure.as_ref(), req),
            )
            .add_as(
                Mode::Mercure,
                PathMatch::Prefix(crate::mercure_mount::HUB_PREFIX),
                &[],
                |app, req| crate::mercure_mount::answer(app.mercure.as_ref(), req),
            )
            .add(
                PathMatch::Exact(crate::mercure_mount::HOT_RELOAD_JS_PATH),
                &[Method::GET, Method::HEAD],
                |_, _| routes::ready(crate::mercure_mount::hot_reload_js()),
            );
    }
    table
}

/// The answer to `OPTIONS *`. RFC 9110 §9.3.7: it asks about the server in general
/// (a "ping" proxies and monitoring send), not about a resource, so no PHP script or
/// file is involved: 200 with the methods the server routes and an empty body.
fn server_options() -> Response<ResponseBody> {
    Response::builder()
        .status(StatusCode::OK)
        .header(http::header::ALLOW, ROUTED_METHODS)
        .header(http::header::CONTENT_LENGTH, 0)
        .body(body::empty())
        .expect("valid static response")
}

/// HTTP/2 and HTTP/3 carry the target's host in `:authority`; RFC 9113 §8.3.1 says a
/// recipient must not use a Host header to find the target when `:authority` is present,
/// and should treat a request whose Host names another entity as malformed. Like nginx
/// (nginx/nginx#803, 2025), a Host that differs from `:authority` gets a 400, and a request with
/// `:authority` alone gets a Host header made from it, so `HTTP_HOST` and `SERVER_NAME`
/// always come from `:authority`.
///
/// HTTP/1 requests in absolute form (`GET http://a.test/x.php`, what proxies send) follow
/// RFC 9112 §3.2.2: the target's authority wins and any Host header is replaced by it,
/// so `HTTP_HOST` and `SERVER_NAME` cannot say one host while the target names another.
fn authority_as_host<B>(req: &mut Request<B>) -> Result<(), &'static str> {
    let Some(authority) = req.uri().authority() else {
        return Ok(());
    };
    let authority = authority.as_str();
    if req.version() < http::Version::HTTP_2 {
        if req.method() == http::Method::CONNECT {
            return Ok(());
        }
        // Two Host headers or a malformed one are refused all the same (§3.2): a front end
        // may have routed by either.
        check_host(req)?;
        let value = http::HeaderValue::from_str(authority).map_err(|_| "invalid authority")?;
        req.headers_mut().remove(http::header::HOST);
        req.headers_mut().insert(http::header::HOST, value);
        return Ok(());
    }
    let hosts = req.headers().get_all(http::header::HOST);
    if hosts.iter().next().is_some() {
        if hosts
            .iter()
            .any(|h| !h.as_bytes().eq_ignore_ascii_case(authority.as_bytes()))
        {
            return Err("Host header differs from :authority");
        }
        return Ok(());
    }
    let value = http::HeaderValue::from_str(authority).map_err(|_| "invalid :authority")?;
    req.headers_mut().insert(http::header::HOST, value);
    Ok(())
}

/// Refuses, and closes the connection after, two kinds of HTTP/1 request whose following
/// bytes a front end may read differently than hyper does:
///
/// - CONNECT: we are no proxy. What a client sends after it is tunnel data, never a
///   request for us (405; hyper would otherwise parse it as the next request).
/// - A Transfer-Encoding other than a single `chunked` (`identity, chunked`,
///   `chunked` twice, `gzip, chunked`): hyper frames by the final `chunked` and ignores
///   the rest, while a front end may refuse the header and frame by Content-Length, the
///   classic smuggling split. RFC 9112 §6.1: a coding the server does not understand gets
///   501.
fn refuse_tunnel_or_odd_framing<B>(req: &Request<B>) -> Option<Response<ResponseBody>> {
    if req.version() >= http::Version::HTTP_2 {
        return None;
    }
    let mut response = if req.method() == http::Method::CONNECT {
        let mut r = body::text_response(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed");
        r.headers_mut().insert(
            http::header::ALLOW,
            http::HeaderValue::from_static(ROUTED_METHODS),
        );
        r
    } else {
        let mut codings = req
            .headers()
            .get_all(http::header::TRANSFER_ENCODING)
            .iter()
            .flat_map(|v| v.as_bytes().split(|&b| b == b','))
            .map(|c| c.trim_ascii());
        match (codings.next(), codings.next()) {
            (None, _) => return None,
            (Some(c), None) if c.eq_ignore_ascii_case(b"chunked") => return None,
            _ => body::text_response(StatusCode::NOT_IMPLEMENTED, "Not Implemented"),
        }
    };
    tracing::debug!(method = %req.method(), "refused: CONNECT or a transfer coding other than chunked");
    response.headers_mut().insert(
        http::header::CONNECTION,
        http::HeaderValue::from_static("close"),
    );
    Some(response)
}

/// RFC 9112 §3.2: an HTTP/1.1 request needs exactly one Host header (unless the target is
/// in absolute form), and a request with several, or with an invalid value, gets 400. Its
/// value becomes SERVER_NAME, which applications use in paths and URLs, so like nginx we
/// also refuse dot segments in it.
fn check_host<B>(req: &Request<B>) -> Result<(), &'static str> {
    let mut hosts = req.headers().get_all(http::header::HOST).iter();
    let host = hosts.next();
    if hosts.next().is_some() {
        return Err("several Host headers");
    }
    let Some(host) = host else {
        if req.version() == http::Version::HTTP_11 && req.uri().host().is_none() {
            return Err("HTTP/1.1 request without Host");
        }
        return Ok(());
    };
    let host = host.as_bytes();
    if !is_host_and_port(host) || host.windows(2).any(|w| w == b"..") || host.first() == Some(&b'.')
    {
        return Err("invalid Host header");
    }
    Ok(())
}

/// `Host = uri-host [ ":" port ]` (RFC 9110 §7.2 with RFC 3986 §3.2.2): an IP literal in
/// brackets (IPv6, or IPvFuture), or a name or IPv4 address made of unreserved
/// characters, sub-delims and `%XX`; a port of digits only. The empty value is valid (a
/// target URI without authority).
fn is_host_and_port(value: &[u8]) -> bool {
    let unreserved_or_sub_delim =
        |b: u8| b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=".contains(&b);
    let (host_ok, rest) = if value.first() == Some(&b'[') {
        let Some(end) = value.iter().position(|&b| b == b']') else {
            return false;
        };
        let literal = &value[1..end];
        let ok = match literal {
            [b'v' | b'V', future @ ..] => {
                future.iter().position(|&b| b == b'.').is_some_and(|dot| {
                    dot > 0
                        && future[..dot].iter().all(u8::is_ascii_hexdigit)
                        && future.len() > dot + 1
                        && future[dot + 1..]
                            .iter()
                            .all(|&b| unreserved_or_sub_delim(b) || b == b':')
                })
            }
            _ => {
                literal.contains(&b':')
                    && literal
                        .iter()
                        .all(|&b| b.is_ascii_hexdigit() || b == b':' || b == b'.')
            }
        };
        (ok, &value[end + 1..])
    } else {
        let end = value.iter().position(|&b| b == b':').unwrap_or(value.len());
        let name = &value[..end];
        let mut ok = true;
        let mut i = 0;
        while ok && i < name.len() {
            if name[i] == b'%' {
                ok = name.len() > i + 2
                    && name[i + 1].is_ascii_hexdigit()
                    && name[i + 2].is_ascii_hexdigit();
                i += 3;
            } else {
                ok = unreserved_or_sub_delim(name[i]);
                i += 1;
            }
        }
        (ok, &value[end..])
    };
    host_ok
        && match rest {
            [] => true,
            [b':', port @ ..] => port.iter().all(u8::is_ascii_digit),
            _ => false,
        }
}

#[cfg(test)]
mod tests {
    use super::is_host_and_port;

    #[test]
    fn host_values_follow_the_grammar() {
        for ok in [
            "",
            "localhost",
            "example.test:8080",
            "a.test:",
            "127.0.0.1",
            "127.0.0.1:80",
            "xn--bcher-kva.example",
            "under_score.test",
            "caf%C3%A9.test",
            "[::1]",
            "[::1]:8080",
            "[2001:db8::192.0.2.1]:443",
            "[v1.fe80::a+en1]",
        ] {
            assert!(is_host_and_port(ok.as_bytes()), "{ok:?} refused");
        }
        for bad in [
            "a.test:80:90",
            "a.test:http",
            "a.test:-1",
            "::1",
            "[::1",
            "[::1]x",
            "[::1]:80:90",
            "[]",
            "[localhost]",
            "[v1]",
            "[v.x]",
            "a b",
            "a/b",
            "a\\b",
            "a@b",
            "a%zz",
            "a%2",
            "a\tb",
            "a]",
            "a[b",
        ] {
            assert!(!is_host_and_port(bad.as_bytes()), "{bad:?} accepted");
        }
    }
}
