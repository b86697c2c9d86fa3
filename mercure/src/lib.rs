//! ferrophp's Mercure hub, the protocol as FrankenPHP and the Mercure hub 0.x deploy it
//! (topic selectors in `topic` parameters, the `mercure` JWT claim, `Last-Event-ID` /
//! `lastEventID`, the `mercureAuthorization` cookie). This crate knows neither hyper nor
//! PHP: the server mounts [`Hub::handle`] at `/.well-known/mercure` and the worker calls
//! [`Hub::publish_blocking`] for `mercure_publish()`; each only translates types.
//!
//! Layout:
//! - What travels: [`update`] (updates, validation, ids, the published form), [`sse`] (the
//!   `text/event-stream` encoding).
//! - Who gets what: [`selector`] (`*`, exact topics, URI templates, the compiled-selector
//!   cache), [`jwt`] (token verification), [`auth`] (finding a request's token, publish
//!   origins, the publish and private-update rules), [`cors`].
//! - The hub: [`hub`] (publish, subscribe, stop), `registry` (the subscriber index and
//!   fan-out), [`subscriber`] (a subscriber's bounded buffer and its stream), [`history`]
//!   (replay for reconnection: memory or fjall), `redis_transport` (several instances on
//!   one Redis stream), [`subscriptions`] (subscription events and the API's documents),
//!   [`stats`], `trace` (a span per publish).
//! - The edge: [`request`] (request head, form and query parsing), [`http`] (routing the
//!   hub's endpoints to plain responses), [`config`].
//!
//! Dependencies go one way: `http` -> `hub` -> `registry`/`subscriber`/`history`/
//! `redis_transport` -> `update`/`selector`/`sse`; `auth` -> `jwt`/`selector`.

#![deny(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]
#![deny(unreachable_pub)]

pub mod auth;
pub mod config;
pub mod cors;
pub mod history;
pub mod http;
pub mod hub;
pub mod jwt;
mod redis_transport;
mod registry;
pub mod request;
pub mod selector;
pub mod sse;
pub mod stats;
pub mod subscriber;
pub mod subscriptions;
mod trace;
pub mod update;

pub use auth::Grants;
pub use config::{Config, HistoryConfig, JwtKey, TransportConfig, HUB_PATH};
pub use history::HistoryLimits;
pub use http::{is_hub_path, link_header, Body, Response};
pub use hub::{Hub, PublishError, StartError, SubscribeOptions};
pub use jwt::{AuthError, Claims, Verifier};
pub use request::Request;
pub use stats::Stats;
pub use subscriber::{CloseReason, Subscription};
pub use update::Update;
