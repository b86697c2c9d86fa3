//! A unit of work for a PHP thread: the request and where its outcome goes. Shared by the
//! queue and both thread roles; it imports neither.

use crate::request::{ScriptOutcome, ScriptRequest};

pub(crate) struct Job {
    pub request: ScriptRequest,
    pub done: tokio::sync::oneshot::Sender<ScriptOutcome>,
}
