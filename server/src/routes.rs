//! The server's own routes: answers that are not the app's, registered in one table per
//! listener and looked up before anything else routes the request. The public listener's
//! table (`serve/dispatch.rs`) holds `OPTIONS *` and is where the Mercure hub
//! (`/.well-known/mercure`) and the ACME HTTP-01 challenge
//! (`/.well-known/acme-challenge/`) go; the admin listener's (`admin.rs`) holds its
//! endpoints. A route names a path, exactly or by prefix, and the methods it answers;
//! a request no route takes goes on to the app's routing (or the listener's 404).
//!
//! A handler gets the listener's shared state `S` and the request, whatever protocol
//! carried it, and returns the response's future. Looking up a request costs a walk over
//! the few routes, comparing paths; nothing is allocated unless a route answers.

use std::future::Future;
use std::pin::Pin;

use http::{Method, Request, Response};

use crate::body::{RequestBody, ResponseBody};
use crate::mode::Mode;

/// The future of a route's response; it may borrow the state it was given.
pub(crate) type RouteFuture<'a> = Pin<Box<dyn Future<Output = Response<ResponseBody>> + Send + 'a>>;

/// What answers a route.
type Handler<S> = Box<dyn for<'a> Fn(&'a S, Request<RequestBody>) -> RouteFuture<'a> + Send + Sync>;

/// Which paths a route takes, compared with the request's path as received.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PathMatch {
    /// This path only.
    Exact(&'static str),
    /// Every path that starts with this one (`/.well-known/acme-challenge/`,
    /// `/.well-known/mercure/`).
    Prefix(&'static str),
}

impl PathMatch {
    fn matches(self, path: &str) -> bool {
        match self {
            PathMatch::Exact(p) => path == p,
            PathMatch::Prefix(p) => path.starts_with(p),
        }
    }
}

/// One of the server's own routes.
pub(crate) struct ServerRoute<S> {
    path: PathMatch,
    /// Empty: any method.
    methods: Vec<Method>,
    /// The label its requests carry in the access log, `/metrics` and their span.
    mode: Mode,
    handler: Handler<S>,
}

impl<S> ServerRoute<S> {
    /// The label of the requests this route answers.
    pub(crate) fn mode(&self) -> Mode {
        self.mode
    }

    /// The route's answer to `req`, from the listener's `state`.
    pub(crate) fn answer<'a>(&self, state: &'a S, req: Request<RequestBody>) -> RouteFuture<'a> {
        (self.handler)(state, req)
    }
}

/// One listener's table of the server's own routes, first match wins.
pub(crate) struct Routes<S> {
    routes: Vec<ServerRoute<S>>,
}

impl<S> Default for Routes<S> {
    fn default() -> Self {
        Routes { routes: Vec::new() }
    }
}

impl<S> Routes<S> {
    /// Adds a route for `methods` (none: any method) on `path`; its requests are
    /// labelled `static`.
    pub(crate) fn add(
        &mut self,
        path: PathMatch,
        methods: &[Method],
        handler: impl for<'a> Fn(&'a S, Request<RequestBody>) -> RouteFuture<'a> + Send + Sync + 'static,
    ) -> &mut Self {
        self.add_as(Mode::Static, path, methods, handler)
    }

    /// [`Routes::add`] with its requests labelled `mode`.
    pub(crate) fn add_as(
        &mut self,
        mode: Mode,
        path: PathMatch,
        methods: &[Method],
        handler: impl for<'a> Fn(&'a S, Request<RequestBody>) -> RouteFuture<'a> + Send + Sync + 'static,
    ) -> &mut Self {
        self.routes.push(ServerRoute {
            path,
            methods: methods.to_vec(),
            mode,
            handler: Box::new(handler),
        });
        self
    }

    /// The route that takes `req`, if any.
    pub(crate) fn find<B>(&self, req: &Request<B>) -> Option<&ServerRoute<S>> {
        let path = req.uri().path();
        self.routes.iter().find(|route| {
            route.path.matches(path)
                && (route.methods.is_empty() || route.methods.contains(req.method()))
        })
    }
}

/// A route's answer that is ready at once, as a [`RouteFuture`].
pub(crate) fn ready<'a>(response: Response<ResponseBody>) -> RouteFuture<'a> {
    Box::pin(std::future::ready(response))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body;

    fn request(method: Method, path: &str) -> Request<RequestBody> {
        let mut req = Request::new(RequestBody::empty());
        *req.method_mut() = method;
        *req.uri_mut() = path.parse().unwrap();
        req
    }

    /// The status a route answers `method path` with, if one takes it.
    fn answered(routes: &Routes<u16>, state: &u16, method: Method, path: &str) -> Option<u16> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let req = request(method, path);
        let answer = routes.find(&req)?.answer(state, req);
        Some(runtime.block_on(answer).status().as_u16())
    }

    #[test]
    fn routes_match_by_path_and_method_first_match_wins() {
        let mut routes = Routes::<u16>::default();
        routes
            .add(PathMatch::Exact("/readyz"), &[Method::GET], |_, _| {
                ready(body::text_response(http::StatusCode::OK, "ready"))
            })
            .add(
                PathMatch::Prefix("/.well-known/acme-challenge/"),
                &[],
                |state, _| {
                    ready(body::text_response(
                        http::StatusCode::from_u16(*state).unwrap(),
                        "token",
                    ))
                },
            )
            .add(
                PathMatch::Prefix("/.well-known/"),
                &[Method::GET],
                |_, _| ready(body::text_response(http::StatusCode::GONE, "gone")),
            );
        let state = 202;
        assert_eq!(answered(&routes, &state, Method::GET, "/readyz"), Some(200));
        // Exact means exact; the method must be one of the route's.
        assert_eq!(answered(&routes, &state, Method::GET, "/readyz/"), None);
        assert_eq!(answered(&routes, &state, Method::POST, "/readyz"), None);
        // A prefix route with no methods takes any method, and the handler sees the
        // listener's state.
        for method in [Method::GET, Method::POST, Method::PUT] {
            assert_eq!(
                answered(&routes, &state, method, "/.well-known/acme-challenge/abc"),
                Some(202)
            );
        }
        // The first route that matches answers; later ones only get the rest.
        assert_eq!(
            answered(&routes, &state, Method::GET, "/.well-known/mercure"),
            Some(410)
        );
        assert_eq!(
            answered(&routes, &state, Method::POST, "/.well-known/mercure"),
            None
        );
        // A request no route takes goes on to the app's routing.
        assert!(routes
            .find(&request(Method::GET, "/index.php?x=1"))
            .is_none());
    }
}
