//! PHP threads: long-lived OS threads that each own one TSRM context and execute jobs
//! from a shared queue until the queue closes.
//!
//! Jobs are never run on tokio's blocking pool: PHP state is per thread and must stay on
//! the thread that created it.

use std::thread::JoinHandle;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::observe::{self, PoolStats, ThreadState};
use crate::queue::JobQueue;
use crate::request::{ScriptOutcome, ScriptRequest};
use crate::sapi;

/// PHP 8.2 has no stack-overflow guard: recursion that nests C frames (a callback of
/// `array_map`, `usort`, `__toString`...) must reach memory_limit before the end of the
/// stack, where a guard page kills the whole process. Default size: see
/// docs/operating.md ("Deep recursion"). The stack is reserved address space; only the
/// pages a recursion touches take memory.
pub const DEFAULT_PHP_STACK_SIZE: usize = 512 * 1024 * 1024;

static PHP_STACK_SIZE: AtomicUsize = AtomicUsize::new(DEFAULT_PHP_STACK_SIZE);

/// The stack size PHP threads are spawned with (`EngineConfig::php_stack_size`).
pub(crate) fn php_stack_size() -> usize {
    PHP_STACK_SIZE.load(Ordering::Relaxed)
}

/// Set once by `Engine::start`, before any PHP thread exists.
pub(crate) fn set_php_stack_size(bytes: usize) {
    PHP_STACK_SIZE.store(bytes, Ordering::Relaxed);
}

/// A unit of work for a PHP thread.
pub(crate) struct Job {
    pub request: ScriptRequest,
    pub done: tokio::sync::oneshot::Sender<ScriptOutcome>,
}

pub(crate) struct ThreadPool {
    jobs: Arc<JobQueue>,
    threads: Vec<JoinHandle<()>>,
}

impl ThreadPool {
    /// Spawns `count` PHP threads. The engine must be started.
    pub fn spawn(count: usize) -> std::io::Result<ThreadPool> {
        // Unbounded here: the HTTP side bounds what is in flight with one permit per thread.
        let queue = Arc::new(JobQueue::new());
        let stats = observe::PoolStats::register("classic".into(), false);
        let mut threads = Vec::with_capacity(count);
        for i in 0..count {
            let queue = queue.clone();
            let stats = stats.clone();
            let handle = std::thread::Builder::new()
                .name(format!("php-{i}"))
                .stack_size(php_stack_size())
                .spawn(move || thread_main(&queue, &stats))?;
            threads.push(handle);
        }
        Ok(ThreadPool {
            jobs: queue,
            threads,
        })
    }

    pub fn queue(&self) -> Arc<JobQueue> {
        self.jobs.clone()
    }

    /// Closes the queue and waits for every thread to finish its current job and release
    /// its PHP context.
    pub fn join(mut self) {
        self.jobs.close();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

fn thread_main(jobs: &JobQueue, stats: &Arc<PoolStats>) {
    sapi::attach_thread();
    let slot = observe::register(stats);
    slot.set_state(ThreadState::Idle);
    // Per-request strings ($_SERVER and request_info): reset, not freed, between requests,
    // so a steady stream of similar requests allocates nothing here.
    let mut arena = bumpalo::Bump::with_capacity(16 * 1024);
    while let Some(job) = jobs.pop() {
        match job.request.cgi.as_ref() {
            Some(cgi) => slot.begin(cgi.method.as_str(), &cgi.request_uri),
            None => slot.begin("RUN", &job.request.script_filename.to_string_lossy()),
        }
        let outcome = sapi::run_script(job.request, &arena);
        slot.end();
        arena.reset();
        let _ = job.done.send(outcome);
        crate::stack::release_deep_pages();
    }
    drop(slot);
    sapi::detach_thread();
}
