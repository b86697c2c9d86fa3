//! The SAPI: how PHP sees ferrophp, and the life of a request in the engine.
//!
//! - `settings`: what the engine is started with ([`SapiName`], [`LogTarget`]).
//! - `engine`: engine start-up and shut-down, and attaching each PHP thread (its TSRM
//!   context, umask, working directory and locale) for its whole life.
//! - `callbacks`: the `sapi_module_struct` PHP calls back into (output, headers, the
//!   request body and cookies, `$_SERVER` and `$_ENV`, `getenv()`, the log).
//! - `headers`: PHP's response header list read into a [`ResponseHead`](crate::ResponseHead).
//! - `prepared_request`: a request made ready for PHP and installed on its thread
//!   (`SG(server_context)`, `SG(request_info)`, the request's trace) for the engine request.
//! - `run`: one script as one PHP request (`php_request_startup` → execute →
//!   `php_request_shutdown`), as classic threads and a worker's boot request run it.
//!
//! PHP reaches the request in progress through `SG(server_context)`, which points at a
//! `RequestContext` (`crate::request_context`) living on the executing thread's stack for
//! the whole request (including `php_request_shutdown`, since `$_SERVER` may be built
//! lazily). Dependencies go one way: engine → callbacks → headers, both → settings;
//! run → prepared_request; this file only declares the parts and re-exports.

mod callbacks;
mod engine;
mod headers;
mod prepared_request;
mod run;
mod settings;

pub(crate) use engine::{attach_thread, detach_thread, engine_shutdown, engine_startup};
pub(crate) use headers::{header_lines, response_head};
pub(crate) use prepared_request::PreparedRequest;
pub(crate) use run::{forget_resolved_paths, run_script};
pub(crate) use settings::ModuleSettings;
pub use settings::{LogTarget, SapiName};
