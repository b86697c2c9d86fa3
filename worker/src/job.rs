//! A unit of work for a PHP thread: the request and where its outcome goes. Shared by the
//! queue and both thread roles; it imports neither.

use std::time::Instant;

use crate::request::{ScriptOutcome, ScriptRequest};

pub(crate) struct Job {
    pub request: ScriptRequest,
    /// Where the outcome goes, for callers that wait for it ([`crate::Engine::submit_to`]);
    /// None for callers that learn everything through the request's sink
    /// ([`crate::Engine::dispatch`]).
    pub done: Option<tokio::sync::oneshot::Sender<ScriptOutcome>>,
    /// Given by the queue: names the job to [`crate::queue::JobQueue::withdraw`].
    pub ticket: u64,
    /// When the job entered the queue's FIFO (None: handed straight to an idle thread).
    pub queued_at: Option<Instant>,
}

impl Job {
    pub(crate) fn new(
        request: ScriptRequest,
        done: Option<tokio::sync::oneshot::Sender<ScriptOutcome>>,
    ) -> Box<Job> {
        Box::new(Job {
            request,
            done,
            ticket: 0,
            queued_at: None,
        })
    }
}

/// Hands a job's outcome to whoever waits for it (nobody, for dispatched jobs).
pub(crate) fn report(
    done: Option<tokio::sync::oneshot::Sender<ScriptOutcome>>,
    outcome: ScriptOutcome,
) {
    if let Some(done) = done {
        let _ = done.send(outcome);
    }
}
