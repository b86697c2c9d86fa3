//! Request deadlines and the slow log, the policy side (the mechanism on the PHP threads
//! is `c/deadline.c`): the settings, each PHP thread's registration, the watchdog
//! thread, retiring a thread that a deadline cannot bring back, `ferrophp_request_heartbeat`
//! and the counters `/metrics` shows.
//!
//! A request has up to two deadlines: PHP's `max_execution_time` (its own per-thread
//! timer, which the C side hears of through `zend_on_timeout`) and the server's
//! `--request-timeout` (php-fpm's `request_terminate_timeout`: it also ends requests whose
//! script raised or disabled its time limit). A job's request scope starts and ends the
//! C side's deadline (c/request_scope.c; [`enter_job`] gives it the limits and
//! [`leave_job`] counts what passed); a wait inside the request wakes at the
//! server deadline by itself. The watchdog, one thread for the process, looks at every PHP
//! thread about ten times a second (sooner when a deadline or slow-log moment is due):
//! - a request past a deadline gets the kick signal again and again (a thread blocked in
//!   a call without a timeout, or one that raced the deadline into its wait, wakes);
//! - a request still running [`DeadlineConfig::retire_grace`] past its deadline is given
//!   up: its thread is *retired* (state `Retired`, its client answered 504 here, a
//!   replacement thread spawned in its pool, so the pool keeps its width) and exits by
//!   itself if the call it is stuck in ever returns; past
//!   [`DeadlineConfig::max_retired_threads`] threads stuck at once, the process asks to be
//!   replaced ([`EngineConfig::on_replace`](crate::EngineConfig)) since each holds memory
//!   and whatever it was stuck on;
//! - a request running longer than `--slowlog-ms` is asked for its stack: a thread in a
//!   timed wait captures by itself, one blocked in flock/waitpid gets the slow-log signal,
//!   one running PHP code gets `EG(vm_interrupt)` set and captures at its next VM safe
//!   point; the stack, captured on the request's own thread, is turned into a
//!   [`SlowEntry`] here and handed to the slow-log sink.
//!
//! The request path pays a few stores to its own thread's state at the start and end of
//! a job, plus one uncontended lock per output call (the sink lives in the thread's
//! [`Watch`] so the watchdog can answer the client of a retired thread).

use std::cell::{Cell, RefCell};
use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::ffi as sys;

use crate::observe::Slot;
use crate::request::ResponseSink;

/// How long a request may still run past its deadline before its thread is retired,
/// unless configured.
pub const DEFAULT_RETIRE_GRACE: Duration = Duration::from_secs(2);

/// How often the watchdog looks at the threads when nothing is due sooner, and how often
/// a request past its deadline is kicked.
const TICK: Duration = Duration::from_millis(100);
/// How often a request not yet captured for the slow log is signalled again.
const SLOW_RESIGNAL: Duration = Duration::from_millis(500);
/// Largest `ferrophp_request_heartbeat()` argument: PHP's timer takes no more.
const MAX_HEARTBEAT: i64 = 999_999_999;

/// What ends requests and what the slow log records (`EngineConfig::deadlines`).
#[derive(Debug, Clone, Copy)]
pub struct DeadlineConfig {
    /// `--request-timeout`: the longest any request may run, whatever its script's
    /// `max_execution_time` (None: only that one applies).
    pub request_timeout: Option<Duration>,
    /// How long a request may take, past its deadline, to end; then its thread is
    /// retired. Half of it also bounds the shutdown functions and destructors that run
    /// after the deadline's fatal error.
    pub retire_grace: Duration,
    /// Threads retired and still stuck that the process keeps; one more and it asks to
    /// be replaced.
    pub max_retired_threads: usize,
    /// `--slowlog-ms`: requests running longer get one slow-log entry.
    pub slowlog: Option<Duration>,
}

impl Default for DeadlineConfig {
    fn default() -> Self {
        DeadlineConfig {
            request_timeout: None,
            retire_grace: DEFAULT_RETIRE_GRACE,
            max_retired_threads: 8,
            slowlog: None,
        }
    }
}

/// Where slow-log entries go (the server writes them in its log format).
pub type SlowSink = Arc<dyn Fn(&SlowEntry) + Send + Sync>;
/// Called once when more threads are stuck than the process may keep.
pub type ReplaceHook = Arc<dyn Fn(&str) + Send + Sync>;

/// One slow request, as captured on its own thread.
#[derive(Debug, Clone)]
pub struct SlowEntry {
    /// The request's method.
    pub method: String,
    /// The request's target as received.
    pub uri: String,
    /// How long the request had run when its stack was captured.
    pub elapsed: Duration,
    /// The PHP thread's name.
    pub thread: String,
    /// The PHP thread's kernel thread id.
    pub tid: i32,
    /// The pool of the thread: "classic" or the worker's name.
    pub pool: String,
    /// The PHP code running at that moment: its file...
    pub file: String,
    /// ...and line.
    pub line: u32,
    /// Innermost call first; each with where it was called from.
    pub stack: Vec<SlowFrame>,
    /// Frames deeper than the capture keeps.
    pub frames_omitted: u32,
    /// How it was captured: "vm" (a VM safe point), "wait" (a wait that woke for it),
    /// "signal" (a thread blocked in flock/waitpid).
    pub captured_in: &'static str,
}

/// One call on a slow request's stack.
#[derive(Debug, Clone)]
pub struct SlowFrame {
    /// The function called: `Class::method` for a method, `{main}` or `include` for a
    /// file's own code.
    pub function: String,
    /// Where it was called from (empty for the outermost code).
    pub file: String,
    /// The line of `file` it was called from.
    pub line: u32,
    /// Summaries (`int(5)`, `string(3) "abc"`, `array(2)`, `object(Foo)`).
    pub args: Vec<String>,
    /// How many arguments the call had (more than `args` shows when long).
    pub arg_count: u32,
}

/// Counters for `/metrics`.
#[derive(Debug, Clone, Copy, Default)]
pub struct DeadlineStats {
    /// Requests whose `max_execution_time` passed.
    pub timed_out_time_limit: u64,
    /// Requests whose `--request-timeout` passed.
    pub timed_out_request_timeout: u64,
    /// Threads retired since start.
    pub threads_retired: u64,
    /// Retired threads still stuck now.
    pub threads_stuck: u64,
}

static TIMED_OUT_TIME_LIMIT: AtomicU64 = AtomicU64::new(0);
static TIMED_OUT_REQUEST: AtomicU64 = AtomicU64::new(0);
static RETIRED: AtomicU64 = AtomicU64::new(0);
static STUCK: AtomicUsize = AtomicUsize::new(0);

/// The deadline counters so far (process-wide).
pub fn stats() -> DeadlineStats {
    DeadlineStats {
        timed_out_time_limit: TIMED_OUT_TIME_LIMIT.load(Ordering::Relaxed),
        timed_out_request_timeout: TIMED_OUT_REQUEST.load(Ordering::Relaxed),
        threads_retired: RETIRED.load(Ordering::Relaxed),
        threads_stuck: STUCK.load(Ordering::Relaxed) as u64,
    }
}

/// Retired threads that have not returned: PHP cannot be shut down under them.
pub(crate) fn stuck_threads() -> usize {
    STUCK.load(Ordering::Acquire)
}

struct Settings {
    config: DeadlineConfig,
    slow_sink: Option<SlowSink>,
    on_replace: Option<ReplaceHook>,
}

static SETTINGS: OnceLock<Settings> = OnceLock::new();

fn settings() -> Option<&'static Settings> {
    SETTINGS.get()
}

/// Set once by `Engine::start`, before the first PHP thread.
pub(crate) fn configure(
    config: DeadlineConfig,
    slow_sink: Option<SlowSink>,
    on_replace: Option<ReplaceHook>,
) {
    let _ = SETTINGS.set(Settings {
        config,
        slow_sink,
        on_replace,
    });
}

/// The engine-wide hooks, on the engine's main thread after module start-up.
pub(crate) fn install() {
    let overrun = settings().map_or(DEFAULT_RETIRE_GRACE, |s| s.config.retire_grace) / 2;
    // SAFETY: once, after php_module_startup, before any request: sets signal handlers and
    // two engine hook pointers that no thread reads concurrently yet.
    unsafe { sys::ferrophp_deadline_install(overrun.as_nanos() as i64) };
}

// ---------------------------------------------------------------------------------------
// Each PHP thread.
// ---------------------------------------------------------------------------------------

/// A PHP thread as the watchdog sees it. Registered by the thread when it starts and
/// unregistered by it before it ends.
pub(crate) struct Watch {
    /// The thread's state in the C side: valid while registered (the thread frees it after
    /// unregistering).
    ctl: *mut sys::ferrophp_deadline,
    pthread: libc::pthread_t,
    tid: i32,
    slot: Arc<Slot>,
    /// The running job's response sink: the watchdog answers its client when it retires
    /// the thread. The thread takes it out before it ends the job.
    pub(crate) sink: Mutex<Option<Box<dyn ResponseSink>>>,
    /// Spawns a thread in this one's place.
    replace: Box<dyn Fn() + Send + Sync>,
    retired: AtomicBool,
    /// The watchdog's own notes about this thread.
    seen: Mutex<Seen>,
}

#[derive(Default)]
struct Seen {
    seq: u64,
    last_kick_ns: i64,
    last_slow_ns: i64,
}

// SAFETY: `ctl` points at the thread's shim state, which stays allocated while the Watch
// is registered (the thread unregisters, under REGISTRY's lock, before freeing it); it is
// only read through the C side's atomic accessors. `pthread` is only used for pthread_kill
// under the same lock, while the thread is alive.
unsafe impl Send for Watch {}
// SAFETY: `ctl` and `pthread` are only used as for Send above (the C side's atomic
// accessors; pthread_kill under REGISTRY's lock while the thread lives), from any thread
// alike; every other field is Sync.
unsafe impl Sync for Watch {}

static REGISTRY: Mutex<Vec<Arc<Watch>>> = Mutex::new(Vec::new());

thread_local! {
    /// The calling PHP thread's registration.
    static ME: RefCell<Option<Arc<Watch>>> = const { RefCell::new(None) };
    /// Inside a job (between begin_job and end_job).
    static IN_JOB: Cell<bool> = const { Cell::new(false) };
}

/// Registers the calling (new, attached) PHP thread; `replace` spawns its replacement if
/// it is ever retired. Undone by [`unregister`].
pub(crate) fn register(slot: Arc<Slot>, replace: Box<dyn Fn() + Send + Sync>) {
    // SAFETY: on a PHP thread after attach_thread: the C side allocates this thread's state.
    let ctl = unsafe { sys::ferrophp_deadline_thread_attach() };
    if ctl.is_null() {
        tracing::warn!("no memory for a PHP thread's deadline state: its requests have none");
        return;
    }
    let watch = Arc::new(Watch {
        ctl,
        // SAFETY: pthread_self has no preconditions.
        pthread: unsafe { libc::pthread_self() },
        // SAFETY: gettid has no preconditions and cannot fail.
        tid: unsafe { libc::gettid() },
        slot,
        sink: Mutex::new(None),
        replace,
        retired: AtomicBool::new(false),
        seen: Mutex::new(Seen::default()),
    });
    REGISTRY.lock().unwrap().push(watch.clone());
    ME.with(|me| *me.borrow_mut() = Some(watch));
}

/// The calling thread is about to end: the watchdog forgets it, then the C side frees its
/// state. True when the thread had been retired: it calls [`retired_thread_ended`] once
/// its PHP context is released.
pub(crate) fn unregister() -> bool {
    let Some(watch) = ME.with(|me| me.borrow_mut().take()) else {
        return false;
    };
    REGISTRY.lock().unwrap().retain(|w| !Arc::ptr_eq(w, &watch));
    // SAFETY: this thread attached in register and is no longer registered: nothing reads
    // its state any more.
    unsafe { sys::ferrophp_deadline_thread_detach() };
    let retired = watch.retired.load(Ordering::Acquire);
    if retired {
        tracing::warn!(
            thread = watch.slot.name(),
            "a retired PHP thread came back from what it was stuck in, and ends"
        );
    }
    retired
}

/// A retired thread came back and released its PHP context: PHP may be shut down without
/// it.
pub(crate) fn retired_thread_ended() {
    STUCK.fetch_sub(1, Ordering::AcqRel);
}

/// The calling thread's registration, for a job's response sink.
pub(crate) fn current() -> Option<Arc<Watch>> {
    ME.with(|me| me.borrow().clone())
}

/// The calling PHP thread starts a job. Its deadlines start when its request scope is
/// installed (`ferrophp_request_scope`, in C): the request timeout and the slow-log
/// threshold, in nanoseconds from then (0: none), for the scope.
pub(crate) fn enter_job() -> (i64, i64) {
    let config = settings().map(|s| s.config).unwrap_or_default();
    // Far enough from i64::MAX that adding the clock's now cannot overflow.
    let ns = |d: Option<Duration>| d.map_or(0, |d| d.as_nanos().min(i64::MAX as u128 / 4) as i64);
    IN_JOB.with(|j| j.set(true));
    (ns(config.request_timeout), ns(config.slowlog))
}

/// The calling PHP thread ended its job; `expired` is what its scope's uninstall read
/// (`FERROPHP_EXPIRED_*`): counts a deadline that passed.
pub(crate) fn leave_job(expired: u32) {
    IN_JOB.with(|j| j.set(false));
    match expired {
        sys::FERROPHP_EXPIRED_TIME_LIMIT => TIMED_OUT_TIME_LIMIT.fetch_add(1, Ordering::Relaxed),
        sys::FERROPHP_EXPIRED_REQUEST_TIMEOUT => TIMED_OUT_REQUEST.fetch_add(1, Ordering::Relaxed),
        _ => 0,
    };
}

/// Whether the calling thread serves a job now.
pub(crate) fn in_job() -> bool {
    IN_JOB.with(|j| j.get())
}

// ---------------------------------------------------------------------------------------
// The watchdog.
// ---------------------------------------------------------------------------------------

static WATCHDOG: Mutex<Option<(Arc<AtomicBool>, JoinHandle<()>)>> = Mutex::new(None);

/// Starts the watchdog thread (once per engine).
pub(crate) fn start_watchdog() -> std::io::Result<()> {
    let stop = Arc::new(AtomicBool::new(false));
    let handle = std::thread::Builder::new()
        .name("deadline-watch".into())
        .spawn({
            let stop = stop.clone();
            move || watchdog(&stop)
        })?;
    *WATCHDOG.lock().unwrap() = Some((stop, handle));
    Ok(())
}

/// Stops and joins the watchdog.
pub(crate) fn stop_watchdog() {
    if let Some((stop, handle)) = WATCHDOG.lock().unwrap().take() {
        stop.store(true, Ordering::Release);
        handle.thread().unpark();
        let _ = handle.join();
    }
}

/// What the watchdog decided for one thread, done once the registry is unlocked.
enum Action {
    Retire(Arc<Watch>, u64),
    Log(SlowEntry),
}

fn watchdog(stop: &AtomicBool) {
    let tick = settings()
        .and_then(|s| s.config.slowlog)
        .map_or(TICK, |slow| {
            (slow / 2).clamp(Duration::from_millis(10), TICK)
        });
    let grace = settings().map_or(DEFAULT_RETIRE_GRACE, |s| s.config.retire_grace);
    let grace_ns = grace.as_nanos() as i64;
    let mut actions = Vec::new();
    while !stop.load(Ordering::Acquire) {
        // SAFETY: plain clock read.
        let now = unsafe { sys::ferrophp_deadline_now() };
        let mut next = now + tick.as_nanos() as i64;
        {
            let registry = REGISTRY.lock().unwrap();
            for watch in registry.iter() {
                next = next.min(look_at(watch, now, grace_ns, &mut actions));
            }
        }
        for action in actions.drain(..) {
            match action {
                Action::Retire(watch, seq) => retire(&watch, seq, grace),
                Action::Log(entry) => log_slow(&entry),
            }
        }
        // SAFETY: reaps only children the C side recorded, without blocking.
        unsafe { sys::ferrophp_deadline_reap() };
        // SAFETY: plain clock read.
        let now = unsafe { sys::ferrophp_deadline_now() };
        if next > now {
            std::thread::park_timeout(Duration::from_nanos((next - now) as u64));
        }
    }
}

/// Checks one thread (under the registry's lock, so its state is alive): signals it,
/// queues what to do outside the lock. Returns when it next needs a look.
fn look_at(watch: &Arc<Watch>, now: i64, grace_ns: i64, actions: &mut Vec<Action>) -> i64 {
    let mut view = sys::ferrophp_deadline_view::default();
    // SAFETY: `ctl` is alive while registered (see Watch); the C side only loads atomics.
    unsafe { sys::ferrophp_deadline_peek(watch.ctl, &mut view) };
    let mut next = i64::MAX;
    if view.slow_ready {
        // SAFETY: `ctl` is alive while registered (see Watch); the C side published the
        // snapshot (release) and will not touch it until it is released.
        if let Some(snapshot) = unsafe { sys::ferrophp_deadline_slow_snapshot(watch.ctl).as_ref() }
        {
            actions.push(Action::Log(slow_entry(watch, snapshot)));
        }
        // SAFETY: `ctl` is alive while registered (see Watch); hands the buffer back to
        // the thread, which alone touches it from now on.
        unsafe { sys::ferrophp_deadline_slow_release(watch.ctl) };
    }
    if !view.active || watch.retired.load(Ordering::Acquire) {
        return next;
    }
    let mut seen = watch.seen.lock().unwrap();
    if seen.seq != view.seq {
        *seen = Seen {
            seq: view.seq,
            ..Seen::default()
        };
    }
    let past = if view.expired != sys::FERROPHP_EXPIRED_NONE {
        Some(view.expired_ns)
    } else if view.hard_ns != 0 && now >= view.hard_ns {
        Some(view.hard_ns)
    } else {
        if view.hard_ns != 0 {
            next = next.min(view.hard_ns);
        }
        None
    };
    if let Some(since) = past {
        if now >= since + grace_ns {
            actions.push(Action::Retire(watch.clone(), view.seq));
            return next;
        }
        if now - seen.last_kick_ns >= TICK.as_nanos() as i64 {
            seen.last_kick_ns = now;
            kick(watch, 0);
        }
        next = next.min(now + TICK.as_nanos() as i64).min(since + grace_ns);
    }
    if view.slow_ns != 0 && !view.slow_done {
        if now < view.slow_ns {
            next = next.min(view.slow_ns);
        } else {
            // A timed wait wakes for its slow-log moment by itself; a thread blocked in
            // flock/waitpid (which the kernel restarts) captures in the signal's handler;
            // one running PHP code at its next VM safe point, asked without a signal (a
            // signal could cut short a wait we do not replace).
            if now - seen.last_slow_ns >= SLOW_RESIGNAL.as_nanos() as i64 {
                seen.last_slow_ns = now;
                match view.in_wait {
                    1 => {}
                    2 => kick(watch, 1),
                    // SAFETY: registered, so its state is alive (the caller holds the
                    // registry's lock); two atomic stores.
                    _ => unsafe { sys::ferrophp_deadline_slow_at_safe_point(watch.ctl) },
                }
            }
            next = next.min(now + SLOW_RESIGNAL.as_nanos() as i64);
        }
    }
    next
}

/// Sends the deadline kick (0) or the slow-log signal (1) to the watch's thread. Only
/// under the registry's lock: the thread is alive.
fn kick(watch: &Watch, which: c_int) {
    // SAFETY: the thread is registered, so alive (it unregisters before it ends, under the
    // lock the caller holds); the signal's handler is installed for the whole process.
    unsafe { libc::pthread_kill(watch.pthread, sys::ferrophp_deadline_signal(which)) };
}

/// Gives up a thread still running request `seq` past its deadline and grace: answers its
/// client, orders it `Retired` (it ends once back), and spawns its replacement.
fn retire(watch: &Arc<Watch>, seq: u64, grace: Duration) {
    // Holding the sink keeps the thread inside its job: it takes the sink back before it
    // ends one. A thread inside a sink call (a slow client) is looked at again later.
    let Ok(mut sink) = watch.sink.try_lock() else {
        return;
    };
    let still_there = {
        let registry = REGISTRY.lock().unwrap();
        registry.iter().any(|w| Arc::ptr_eq(w, watch)) && {
            let mut view = sys::ferrophp_deadline_view::default();
            // SAFETY: registered, so alive (we hold the registry's lock).
            unsafe { sys::ferrophp_deadline_peek(watch.ctl, &mut view) };
            view.active && view.seq == seq
        }
    };
    if !still_there || !watch.slot.state.order_retire() {
        return;
    }
    // Counted while the thread still cannot leave its job (we hold its sink): its own
    // uncounting, once back, always comes after.
    let stuck = STUCK.fetch_add(1, Ordering::AcqRel) + 1;
    RETIRED.fetch_add(1, Ordering::Relaxed);
    watch.retired.store(true, Ordering::Release);
    let request = watch.slot.current_request();
    let abandoned = sink.take();
    drop(sink);
    if let Some(sink) = abandoned {
        sink.abandon();
    }
    tracing::error!(
        thread = watch.slot.name(),
        tid = watch.tid,
        request = request.as_deref().unwrap_or(""),
        stuck_threads = stuck,
        "PHP thread retired: its request ran {grace:?} past its deadline in code that cannot \
         be interrupted; its client got 504 and a new thread takes its place"
    );
    (watch.replace)();
    if let Some(settings) = settings() {
        if stuck > settings.config.max_retired_threads {
            let why = format!(
                "{stuck} PHP threads are stuck (more than --max-retired-threads {})",
                settings.config.max_retired_threads
            );
            tracing::error!("{why}: asking for this process to be replaced");
            if let Some(hook) = &settings.on_replace {
                hook(&why);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// The slow log.
// ---------------------------------------------------------------------------------------

fn slow_entry(watch: &Watch, s: &sys::ferrophp_slow_snapshot) -> SlowEntry {
    let text = |at: u32, len: u32| -> String {
        let end = (at as usize + len as usize).min(s.text_len as usize);
        let start = (at as usize).min(end);
        // The buffer holds bytes as PHP had them (file names, arguments).
        let bytes: Vec<u8> = s.text[start..end].iter().map(|&c| c as u8).collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    let frames = (s.frame_count as usize).min(s.frames.len());
    let stack = s.frames[..frames]
        .iter()
        .map(|f| {
            let args = text(f.args, f.args_len);
            SlowFrame {
                function: text(f.function, f.function_len),
                file: text(f.file, f.file_len),
                line: f.line,
                args: if args.is_empty() {
                    Vec::new()
                } else {
                    args.split('\u{1f}').map(str::to_owned).collect()
                },
                arg_count: f.arg_count,
            }
        })
        .collect();
    SlowEntry {
        method: text(s.method, s.method_len),
        uri: text(s.uri, s.uri_len),
        elapsed: Duration::from_nanos(s.captured_ns.saturating_sub(s.started_ns).max(0) as u64),
        thread: watch.slot.name().to_owned(),
        tid: watch.tid,
        pool: watch.slot.pool_name().to_owned(),
        file: text(s.file, s.file_len),
        line: s.line,
        stack,
        frames_omitted: s.frames_omitted,
        captured_in: match s.how {
            0 => "vm",
            1 => "wait",
            _ => "signal",
        },
    }
}

/// Writes one entry. The request is counted slow when it ends, in its pool
/// (`observe.rs`), with the requests past `--slow-request-ms`: one count for both.
fn log_slow(entry: &SlowEntry) {
    match settings().and_then(|s| s.slow_sink.as_ref()) {
        Some(sink) => sink(entry),
        None => tracing::warn!(
            target: "slowlog",
            method = %entry.method,
            uri = %entry.uri,
            elapsed_ms = entry.elapsed.as_millis() as u64,
            thread = %entry.thread,
            "slow request:\n{}",
            entry.stack_text()
        ),
    }
}

impl SlowEntry {
    /// The stack as PHP prints traces: `#0 file(line): function(args)`.
    pub fn stack_text(&self) -> String {
        let mut out = String::new();
        for (i, f) in self.stack.iter().enumerate() {
            let mut args = f.args.join(", ");
            if (f.args.len() as u32) < f.arg_count {
                if !args.is_empty() {
                    args.push_str(", ");
                }
                args.push_str("...");
            }
            if f.function == "{main}" {
                out.push_str(&format!("#{i} {{main}}\n"));
                continue;
            }
            let at = if f.file.is_empty() {
                "[internal function]".to_owned()
            } else {
                format!("{}({})", f.file, f.line)
            };
            out.push_str(&format!("#{i} {at}: {}({args})\n", f.function));
        }
        if self.frames_omitted > 0 {
            out.push_str(&format!("... {} more frames\n", self.frames_omitted));
        }
        out
    }
}

// ---------------------------------------------------------------------------------------
// ferrophp_request_heartbeat(int $seconds): bool
// ---------------------------------------------------------------------------------------

/// `ferrophp_request_heartbeat(int $seconds): bool`: the current request may run at least
/// `$seconds` more, under both its `max_execution_time` and `--request-timeout` (a long
/// job that means it calls it as it makes progress). False when a deadline already
/// passed: the request ends anyway.
#[no_mangle]
pub(crate) unsafe extern "C" fn zif_ferrophp_request_heartbeat(
    execute_data: *mut sys::zend_execute_data,
    return_value: *mut sys::zval,
) {
    let mut seconds: sys::zend_long = 0;
    // SAFETY: "l" fills one zend_long.
    let parsed = unsafe {
        sys::zend_parse_parameters(
            sys::ferrophp_num_args(execute_data),
            c"l".as_ptr(),
            &mut seconds as *mut sys::zend_long,
        )
    };
    if parsed != sys::ZEND_RESULT_CODE_SUCCESS {
        return;
    }
    if !(1..=MAX_HEARTBEAT).contains(&seconds) {
        // SAFETY: inside an internal function call; the message is a C literal.
        unsafe { sys::zend_argument_value_error(1, c"must be between 1 and 999999999".as_ptr()) };
        return;
    }
    if !in_job() {
        crate::php::throw_error(
            c"ferrophp_request_heartbeat() can only be called while a request is served",
        );
        return;
    }
    // SAFETY: on a PHP thread inside a job; each call reads or writes this thread's own
    // state (and its own execution timer).
    let extended = unsafe {
        let has_timeout = settings().is_some_and(|s| s.config.request_timeout.is_some());
        let hard = if has_timeout {
            sys::ferrophp_deadline_now().saturating_add(seconds.saturating_mul(1_000_000_000))
        } else {
            0
        };
        let ok = sys::ferrophp_deadline_extend(hard);
        if ok {
            sys::ferrophp_execution_timer_extend(seconds);
        }
        ok
    };
    // SAFETY: return_value is this call's return slot.
    unsafe { sys::ferrophp_zval_bool(return_value, extended) };
}
