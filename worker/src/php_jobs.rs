//! The job queue as PHP sees it: `Ferrophp\Jobs::dispatch()`/`take()`, `Ferrophp\Job`'s
//! `ack()`/`fail()` and `Ferrophp\Background::shouldStop()` (declared in
//! worker/stubs/Jobs.stub.php, registered by c/jobs.c), over the process's one
//! [`jobs::Queue`] (the `ferrophp-jobs` crate: docs/jobs.md).
//!
//! The queue is opened from the configuration the server gave the engine, at start-up
//! when background workers run, else on first use (a server that never touches jobs
//! never opens `<data-dir>/jobs`); a failed open is an exception, tried again by the next
//! call. A `Job` object names its lease by a key into its thread's table (PHP objects
//! never leave their thread): `ack()`/`fail()` take it out; a Job released any other way
//! (freed, or still held when the engine request ends, a fatal error included) is failed
//! with "released without ack", so it is retried and, at its last attempt, dead-lettered.
//! A background thread's take also wakes when its pool is told to stop
//! (`background.rs` installs the thread's [`StopSignal`]).

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::{c_char, CString};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use ferrophp_cache::zv;
use jobs::{DispatchOptions, JobsError, Lease, Queue, QueueConfig, StopSignal};

use crate::ffi as sys;

type Ed = *mut sys::zend_execute_data;
type Rv = *mut sys::zval;

/// The queue's configuration and, once opened, the queue.
struct Jobs {
    config: Option<QueueConfig>,
    queue: Mutex<Option<Arc<Queue>>>,
}

static JOBS: OnceLock<Jobs> = OnceLock::new();

thread_local! {
    /// This thread's leases, by the key their Job object holds.
    static LEASES: RefCell<HashMap<u64, Lease>> = RefCell::new(HashMap::new());
    static NEXT_KEY: std::cell::Cell<u64> = const { std::cell::Cell::new(1) };
    /// Set by a background thread while its script runs: what `shouldStop()` reads and
    /// what wakes its takes.
    static STOP: RefCell<Option<StopSignal>> = const { RefCell::new(None) };
}

/// `Engine::start`: where jobs are kept (None: no job store is known, every call
/// throws).
pub(crate) fn configure(config: Option<QueueConfig>) {
    let _ = JOBS.set(Jobs {
        config,
        queue: Mutex::new(None),
    });
}

/// The queue, opened now if it was not yet.
pub(crate) fn open() -> Result<Arc<Queue>, String> {
    let Some(jobs) = JOBS.get() else {
        return Err("the job queue is not configured".into());
    };
    let mut queue = jobs.queue.lock().unwrap();
    if let Some(q) = queue.as_ref() {
        return Ok(q.clone());
    }
    let Some(config) = jobs.config.clone() else {
        return Err(
            "no job store: give the server a --data-dir (or a home directory) or --jobs-backend"
                .into(),
        );
    };
    let opened =
        Arc::new(Queue::open(config).map_err(|e| format!("cannot open the job queue: {e}"))?);
    *queue = Some(opened.clone());
    Ok(opened)
}

/// Whether an [`open`] error is the local store held by another process (fjall's lock).
pub(crate) fn held_elsewhere(error: &str) -> bool {
    error.contains("in use by another process")
}

/// The queue if it was opened (for `/metrics` and the admin view).
pub(crate) fn opened() -> Option<Arc<Queue>> {
    JOBS.get()?.queue.lock().unwrap().clone()
}

/// The engine stops: every blocked take returns null (acks and fails still work).
pub(crate) fn close() {
    if let Some(q) = opened() {
        q.close();
    }
}

/// A background thread's stop signal, for the script it is about to run (None after).
pub(crate) fn set_thread_stop(stop: Option<StopSignal>) {
    STOP.with(|s| *s.borrow_mut() = stop);
}

/// RINIT: a background worker's run has no time limit (max_execution_time=0, as the
/// CLI): it is meant to run for as long as the server does.
pub(crate) fn request_startup() {
    if STOP.with(|s| s.borrow().is_some()) {
        // SAFETY: RINIT of this thread's engine request, after php_request_startup armed
        // its timer; changes this request's ini only.
        unsafe { sys::ferrophp_background_untimed() };
    }
}

/// RSHUTDOWN (every engine request's end): leases still held by Job objects are failed,
/// so a script that ended (a fatal error, exit) without acknowledging has its job retried.
pub(crate) fn request_shutdown() {
    let left: Vec<Lease> = LEASES.with(|l| l.borrow_mut().drain().map(|(_, v)| v).collect());
    for lease in left {
        release(&lease);
    }
}

fn release(lease: &Lease) {
    let Some(queue) = opened() else { return };
    match queue.fail(lease, Some("released without ack")) {
        Ok(_) => tracing::warn!(
            target: "php",
            job = %lease.id,
            queue = %lease.queue,
            "a job was released without ack() or fail(): counted as a failed attempt"
        ),
        // Acknowledged elsewhere or expired meanwhile: nothing to undo.
        Err(JobsError::LeaseLost { .. }) => {}
        Err(e) => tracing::error!(job = %lease.id, "cannot release a job: {e}"),
    }
}

/// c/jobs.c: a Job object holding a lease is freed.
#[no_mangle]
pub(crate) extern "C" fn ferrophp_job_released(key: u64) {
    if let Some(lease) = LEASES.with(|l| l.borrow_mut().remove(&key)) {
        release(&lease);
    }
}

/// MINIT: registers the classes.
pub(crate) fn module_startup() {
    // SAFETY: MINIT of our module, on the engine's main thread.
    unsafe { sys::ferrophp_jobs_register_classes() };
}

/// Throws `Ferrophp\JobsException` with `msg`.
fn throw(msg: &str) {
    let msg = CString::new(msg.replace('\0', "\\0")).unwrap_or_default();
    // SAFETY: on a PHP thread inside a call; the class was registered at MINIT; PHP
    // copies the message.
    unsafe { sys::zend_throw_exception(sys::ferrophp_jobs_exception_ce, msg.as_ptr(), 0) };
}

fn return_str(rv: Rv, bytes: &[u8]) {
    // SAFETY: rv is this call's return slot; PHP copies the bytes.
    unsafe { sys::ferrophp_zval_stringl(rv, bytes.as_ptr().cast::<c_char>(), bytes.len()) };
}

fn return_bool(rv: Rv, b: bool) {
    // SAFETY: rv is this call's return slot.
    unsafe { sys::ferrophp_zval_bool(rv, b) };
}

/// Seconds as a PHP float into a duration; `what` names the argument in the error.
fn seconds(what: &str, s: f64) -> Result<Duration, String> {
    if !s.is_finite() || !(0.0..=1e9).contains(&s) {
        return Err(format!(
            "{what} must be a number of seconds from 0 to 1e9, {s} given"
        ));
    }
    Ok(Duration::from_secs_f64(s))
}

/// `Jobs::dispatch(string $queue, mixed $payload, float $delay = 0, int $priority = 0,
/// ?string $uniqueKey = null, int $maxAttempts = 3): string`
#[no_mangle]
#[allow(non_snake_case)] // the symbol the generated arginfo header names
pub(crate) unsafe extern "C" fn zim_Ferrophp_Jobs_dispatch(ed: Ed, rv: Rv) {
    let mut queue: *mut sys::zend_string = std::ptr::null_mut();
    let mut payload: *mut sys::zval = std::ptr::null_mut();
    let mut delay: f64 = 0.0;
    let mut priority: sys::zend_long = 0;
    let mut unique: *mut sys::zend_string = std::ptr::null_mut();
    let mut max_attempts: sys::zend_long = 3;
    // SAFETY: "Sz|dlS!l" fills exactly these pointers, in order.
    if unsafe {
        sys::zend_parse_parameters(
            zv::num_args(ed),
            c"Sz|dlS!l".as_ptr(),
            &mut queue,
            &mut payload,
            &mut delay,
            &mut priority,
            &mut unique,
            &mut max_attempts,
        )
    } != sys::ZEND_RESULT_CODE_SUCCESS
    {
        return;
    }
    // SAFETY: the arguments live for the whole call.
    let queue_name = String::from_utf8_lossy(unsafe { zv::str_bytes(queue) }).into_owned();
    let unique_key = (!unique.is_null())
        // SAFETY: as above.
        .then(|| String::from_utf8_lossy(unsafe { zv::str_bytes(unique) }).into_owned());
    let options = (|| -> Result<DispatchOptions, String> {
        Ok(DispatchOptions {
            delay: seconds("the delay", delay)?,
            priority: i16::try_from(priority)
                .map_err(|_| format!("priority {priority} is outside -1000..=1000"))?,
            max_attempts: u32::try_from(max_attempts)
                .ok()
                .filter(|&n| n >= 1)
                .ok_or_else(|| format!("maxAttempts must be at least 1, {max_attempts} given"))?,
            unique_key,
            ..DispatchOptions::default()
        })
    })();
    let options = match options {
        Ok(o) => o,
        Err(e) => return throw(&e),
    };
    let q = match open() {
        Ok(q) => q,
        Err(e) => return throw(&e),
    };
    // SAFETY: on a PHP thread inside this call; `payload` is its argument.
    let serialized = unsafe { sys::ferrophp_jobs_serialize(payload) };
    if serialized.is_null() {
        // c/jobs.c threw (a resource or a closure inside, or serialize() refused).
        return;
    }
    // SAFETY: a live string until released below.
    let bytes = unsafe { zv::str_bytes(serialized) };
    let result = q.dispatch(&queue_name, bytes, &options);
    // SAFETY: the string from ferrophp_jobs_serialize, released once.
    unsafe { sys::ferrophp_jobs_string_release(serialized) };
    match result {
        Ok(out) => return_str(rv, out.id.as_bytes()),
        Err(e) => throw(&e.to_string()),
    }
}

/// The queue names of `take`'s first argument: a string, or an array of strings.
///
/// # Safety
/// `arg` is the call's live argument.
unsafe fn queue_names(arg: *const sys::zval) -> Result<Vec<String>, String> {
    // SAFETY: guaranteed by the caller.
    unsafe {
        let arg = zv::deref(arg);
        match zv::ztype(arg) {
            zv::IS_STRING => Ok(vec![String::from_utf8_lossy(zv::str_bytes(
                (*arg).value.str_,
            ))
            .into_owned()]),
            zv::IS_ARRAY => {
                let mut names = Vec::new();
                zv::for_each((*arg).value.arr, |_, v| {
                    let v = zv::deref(v);
                    if zv::ztype(v) != zv::IS_STRING {
                        return Err("take(): every queue name must be a string".to_string());
                    }
                    names
                        .push(String::from_utf8_lossy(zv::str_bytes((*v).value.str_)).into_owned());
                    Ok(())
                })?;
                if names.is_empty() {
                    return Err("take(): give at least one queue".into());
                }
                Ok(names)
            }
            _ => Err("take(): the queue must be a string or an array of strings".into()),
        }
    }
}

/// `Jobs::take(string|array $queue, float $timeout = 0): ?Job`
#[no_mangle]
#[allow(non_snake_case)] // the symbol the generated arginfo header names
pub(crate) unsafe extern "C" fn zim_Ferrophp_Jobs_take(ed: Ed, rv: Rv) {
    let mut queue: *mut sys::zval = std::ptr::null_mut();
    let mut timeout: f64 = 0.0;
    // SAFETY: "z|d" fills a zval pointer and a double.
    if unsafe {
        sys::zend_parse_parameters(zv::num_args(ed), c"z|d".as_ptr(), &mut queue, &mut timeout)
    } != sys::ZEND_RESULT_CODE_SUCCESS
    {
        return;
    }
    // SAFETY: the argument lives for the whole call.
    let names = match unsafe { queue_names(queue) } {
        Ok(n) => n,
        Err(e) => return throw(&e),
    };
    let timeout = match seconds("the timeout", timeout) {
        Ok(t) => t,
        Err(e) => return throw(&e),
    };
    let q = match open() {
        Ok(q) => q,
        Err(e) => return throw(&e),
    };
    let stop = STOP.with(|s| s.borrow().clone());
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let taken = match stop {
        Some(stop) => q.take_or_stop(&refs, timeout, &stop),
        None => take_within_deadline(&q, &refs, timeout),
    };
    let lease = match taken {
        Ok(Some(lease)) => lease,
        Ok(None) => {
            // SAFETY: rv is this call's return slot.
            unsafe { zv::copy_plain(rv, &zv::null()) };
            return;
        }
        Err(e) => return throw(&e.to_string()),
    };
    let key = NEXT_KEY.with(|k| {
        let key = k.get();
        k.set(key + 1);
        key
    });
    // SAFETY: rv is this call's return slot; the strings are copied by PHP.
    unsafe {
        sys::ferrophp_job_create(
            rv,
            key,
            lease.id.as_ptr().cast(),
            lease.id.len(),
            lease.queue.as_ptr().cast(),
            lease.queue.len(),
            lease.payload.as_ptr().cast(),
            lease.payload.len(),
            sys::zend_long::from(lease.attempt),
        )
    };
    LEASES.with(|l| l.borrow_mut().insert(key, lease));
}

/// A take on a request's thread: waits in slices of [`DEADLINE_SLICE`] and gives up
/// (null) once the request's deadline passed (`max_execution_time`,
/// `--request-timeout`), whose error PHP then raises; a wait on a thread never wakes for
/// the deadline's signal by itself.
fn take_within_deadline(
    q: &Queue,
    queues: &[&str],
    timeout: Duration,
) -> jobs::Result<Option<Lease>> {
    let started = std::time::Instant::now();
    let never = StopSignal::new();
    loop {
        let left = timeout.saturating_sub(started.elapsed());
        let lease = q.take_or_stop(queues, left.min(DEADLINE_SLICE), &never)?;
        // SAFETY: reads the calling PHP thread's own deadline state.
        let expired = unsafe { sys::ferrophp_deadline_expired() } != 0;
        if lease.is_some() || left <= DEADLINE_SLICE || expired {
            return Ok(lease);
        }
    }
}

/// How often a request's blocked take looks at its deadline.
const DEADLINE_SLICE: Duration = Duration::from_millis(100);

/// The lease of the running Job method's `$this`, taken out of the thread's table (the
/// object no longer holds it); None (and an exception) when it was finished already.
fn take_lease(ed: Ed) -> Option<Lease> {
    // SAFETY: ed is the running Job method's frame.
    let key = unsafe { sys::ferrophp_job_this(ed) };
    // SAFETY: a pointer into $this, live for the call.
    let lease = unsafe { key.as_mut() }.and_then(|key| {
        let lease = LEASES.with(|l| l.borrow_mut().remove(key));
        *key = 0;
        lease
    });
    if lease.is_none() {
        throw("this job was already acknowledged or failed");
    }
    lease
}

/// `Job::ack(): void`
#[no_mangle]
#[allow(non_snake_case)] // the symbol the generated arginfo header names
pub(crate) unsafe extern "C" fn zim_Ferrophp_Job_ack(ed: Ed, _rv: Rv) {
    // SAFETY: ed is the running call's frame.
    if unsafe { zv::num_args(ed) } != 0 {
        // SAFETY: inside an internal function call on a PHP thread.
        unsafe { sys::zend_wrong_parameters_none_error() };
        return;
    }
    let Some(lease) = take_lease(ed) else { return };
    let result = open().and_then(|q| q.ack(&lease).map_err(|e| e.to_string()));
    if let Err(e) = result {
        throw(&e);
    }
}

/// `Job::fail(?string $reason = null): bool`
#[no_mangle]
#[allow(non_snake_case)] // the symbol the generated arginfo header names
pub(crate) unsafe extern "C" fn zim_Ferrophp_Job_fail(ed: Ed, rv: Rv) {
    let mut reason: *mut sys::zend_string = std::ptr::null_mut();
    // SAFETY: "|S!" fills a zend_string pointer (null when null or absent).
    if unsafe { sys::zend_parse_parameters(zv::num_args(ed), c"|S!".as_ptr(), &mut reason) }
        != sys::ZEND_RESULT_CODE_SUCCESS
    {
        return;
    }
    let reason = (!reason.is_null())
        // SAFETY: the argument lives for the whole call.
        .then(|| String::from_utf8_lossy(unsafe { zv::str_bytes(reason) }).into_owned());
    let Some(lease) = take_lease(ed) else { return };
    let result = open().and_then(|q| q.fail(&lease, reason.as_deref()).map_err(|e| e.to_string()));
    match result {
        Ok(outcome) => return_bool(rv, matches!(outcome, jobs::FailOutcome::Retry { .. })),
        Err(e) => throw(&e),
    }
}

/// `Background::shouldStop(): bool`
#[no_mangle]
#[allow(non_snake_case)] // the symbol the generated arginfo header names
pub(crate) unsafe extern "C" fn zim_Ferrophp_Background_shouldStop(ed: Ed, rv: Rv) {
    // SAFETY: ed is the running call's frame.
    if unsafe { zv::num_args(ed) } != 0 {
        // SAFETY: inside an internal function call on a PHP thread.
        unsafe { sys::zend_wrong_parameters_none_error() };
        return;
    }
    let stop = STOP.with(|s| s.borrow().as_ref().is_some_and(StopSignal::is_stopped));
    return_bool(rv, stop);
}
