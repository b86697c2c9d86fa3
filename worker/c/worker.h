/*
 * The worker crate's C (worker/c/), for its callers in Rust (worker/build.rs runs bindgen
 * over this file, naming php-sys's types) and for the files themselves. The C here is what
 * must be C in the worker's own policy: sequences of engine calls with the engine's
 * macros, zend_try blocks and TSRM globals inside them, the SAPI's tables and hooks. The
 * thin wrappers every crate may use are php-sys's (shim.h, included below). By file:
 *   module.c          ferrophp's module entry and the SAPI's PHP functions (their arginfo
 *                     generated from worker/stubs/sapi.stub.php).
 *   server_vars.c     the $_SERVER template every request's $_SERVER starts from.
 *   input.c           the $_COOKIE/$_GET fast path (sapi_module.treat_data).
 *   request_scope.c   one request's life in both modes: install, the engine sequence
 *                     around the script or the worker's handler, uninstall; the worker's
 *                     ferrophp_handle_request.
 *   worker_request.c  a worker request's startup/shutdown/finish sequences.
 *   thread.c          what a long-lived PHP thread keeps or releases (execution timer,
 *                     uploads' realpath cache entries, persistent resources).
 *   locale.c          setlocale() per PHP thread.
 *   deadline.c        per-request deadlines through blocking calls: the per-thread state,
 *                     two signals, the engine's timeout and interrupt hooks;
 *   deadline_waits.c  the libc wait functions replaced for PHP threads;
 *   slow_capture.c    the slow log's stack capture (all three share deadline_state.h).
 *   metrics.c, trace.c  the classes Ferrophp\Metrics and Ferrophp\Trace/Span (metrics.h,
 *                     trace.h; arginfo generated from worker/stubs/).
 *   jobs.c            Ferrophp\Jobs, Job, Background (jobs.h): the Job object, payload
 *                     serialize/unserialize.
 * Files compiled with ZEND_ENABLE_STATIC_TSRMLS_CACHE read the thread's TSRM cache that
 * php-sys's shim.c defines (libphp.a's own when libphp is linked in statically).
 */
#ifndef FERROPHP_WORKER_H
#define FERROPHP_WORKER_H

#include "shim.h"

/* ferrophp's own PHP extension (classes such as UserCache\Cache, ini entries). Its
 * MINIT/MSHUTDOWN/RINIT/RSHUTDOWN/MINFO bodies are Rust (worker/src/module.rs). */
zend_module_entry *ferrophp_module_entry(void);
/* The module's function table: mercure_publish() (mercure.c). */
const zend_function_entry *ferrophp_mercure_functions(void);
zend_result ferrophp_module_minit(int type, int module_number);
zend_result ferrophp_module_mshutdown(int type, int module_number);
zend_result ferrophp_module_rinit(int type, int module_number);
zend_result ferrophp_module_rshutdown(int type, int module_number);
void ferrophp_module_minfo(zend_module_entry *module);

/* The PHP functions the SAPI adds (sapi_module.additional_functions): the table generated
 * from worker/stubs/sapi.stub.php. Bodies are Rust (zif_<name>), but for
 * ferrophp_handle_request (request_scope.c). */
const zend_function_entry *ferrophp_sapi_functions(void);
/* Registers the constants sapi.stub.php declares (FRANKENPHP_LOG_LEVEL_*) for the module
 * `module_number` (ferrophp's, at its MINIT). */
void ferrophp_sapi_register_constants(int module_number);

/* server_vars.c: a $_SERVER start shared by every request with the same environment: a persistent
 * array of permanent interned strings, sized for `capacity` entries (the request's own
 * variables are added to each copy), sealed immutable once filled; then each request's
 * $_SERVER begins as one block copy of it. */
HashTable *ferrophp_server_template_new(uint32_t capacity);
void ferrophp_server_template_add(HashTable *ht, zend_string *key, zend_string *value);
void ferrophp_server_template_seal(HashTable *ht);
/* Replaces the (empty) array in track_vars with a request copy of the template. */
void ferrophp_server_start_from(zval *track_vars, HashTable *template);

/* input.c: $_COOKIE and $_GET parsing. Wraps sapi_module.treat_data (PHP's or
 * mbstring's) so that variables with plain names are registered without
 * php_register_variable_ex's detours when the filter extension runs with its default
 * unsafe_raw filter; everything else is passed on. Call once, after php_module_startup.
 * False when the fast path can never apply. */
bool ferrophp_install_treat_data(void);
#ifdef FERROPHP_BENCH_FIXTURES
/* Turns the fast path off (PHP's own treat_data for everything) or back on, for tests
 * and benchmarks that compare the two (the worker crate's bench-fixtures feature only). */
void ferrophp_set_fast_input(bool enabled);
#endif

/* thread.c: keeps the calling thread's max_execution_time timer across
 * php_request_shutdown (which would delete it, for the next request to create it again):
 * keep() before, restore(its result) after. release() deletes it; call it before the
 * thread's ts_free_thread. No-ops without ZEND_MAX_EXECUTION_TIMERS. */
int ferrophp_execution_timer_keep(void);
void ferrophp_execution_timer_restore(int pid);
void ferrophp_execution_timer_release(void);
/* Before a request's session shutdown: forgets a user save handler call a bailout cut
 * short, so the handler's close() runs (see thread.c). */
void ferrophp_session_handler_unwind(void);
/* Closes the thread's persistent resources before ts_free_thread (see thread.c). */
void ferrophp_persistent_list_release(void);
/* The SAPI's deactivate hook (sapi_module.deactivate), run by sapi_deactivate just before
 * the request's uploaded files are unlinked: drops the calling thread's realpath cache
 * entries for those files. */
int ferrophp_sapi_deactivate(void);


/* request_scope.c: one request's life on its PHP thread, for both modes. Rust prepares
 * the request into a scope (its context and every string SG(request_info) will point at,
 * all of which stay where they are until the scope ends); C installs it, runs the
 * engine's sequence and uninstalls it, so the PHP thread crosses between Rust and C only
 * at the edges of a request:
 *   classic: Rust -> ferrophp_request_run (install, php_request_startup, the router or
 *            script, php_request_shutdown, uninstall) -> Rust.
 *   worker:  the worker script calls ferrophp_handle_request (C) -> ferrophp_worker_next
 *            (Rust: the next job, prepared) -> install, worker startup, the handler,
 *            flush, worker shutdown -> ferrophp_worker_respond (Rust: the response goes
 *            out) -> worker finish, uninstall -> ferrophp_worker_done (Rust: the job's
 *            bookkeeping) -> back to the script. */
typedef struct ferrophp_request_scope {
    /* Set by Rust before the request begins. */
    void *server_context; /* SG(server_context): the request's RequestContext */
    char *path_translated; /* the script (SG(request_info).path_translated) */
    const char *request_method;
    char *query_string;
    char *request_uri;
    const char *content_type;
    const char *authorization; /* the Authorization header, for PHP_AUTH_* */
    int64_t content_length;
    int argc;
    char **argv;
    bool keep_working_directory;
    /* The request's context flags (Rust Cell<bool>s): the client went away; the script
     * was let start (set by C). */
    const bool *disconnected;
    bool *script_started;
    /* A client's job: the request's deadlines run from install to uninstall
     * (deadline.c); 0 for no such deadline. */
    bool deadline;
    int64_t request_timeout_ns;
    int64_t slowlog_ns;
    /* Classic mode: a php -S router to run first (NULL: none); whether the script exists
     * (looked up by Rust, which caches it); define the CLI's STDIN/STDOUT/STDERR. */
    const char *router;
    bool script_exists;
    bool define_std_streams;
    /* Set by C. */
    int exit_status; /* EG(exit_status) after the run; 255 when startup failed */
    bool not_found;  /* the script was not there */
    uint32_t expired; /* FERROPHP_EXPIRED_* of the deadline, at uninstall */
    size_t heap_bytes; /* worker: the thread's PHP heap from the OS at respond */
} ferrophp_request_scope;

/* Classic mode: the whole request, begin to end, inside the caller's scope. */
void ferrophp_request_run(ferrophp_request_scope *scope);
/* Clears what the scope installed (SG(server_context), SG(request_info)'s pointers) and
 * ends its deadline; for a worker request kept installed through its script's shutdown. */
void ferrophp_request_uninstall(ferrophp_request_scope *scope);

/* Implemented in Rust (worker/src/worker_mode/handle_request.rs), called by
 * ferrophp_handle_request on the worker's PHP thread. */
#define FERROPHP_WORKER_NOT_WORKER 0 /* no worker script runs on this thread */
#define FERROPHP_WORKER_BUSY 1       /* called from inside a request handler */
#define FERROPHP_WORKER_END 2        /* the script should end its loop */
#define FERROPHP_WORKER_SKIPPED 3    /* a job was answered without PHP (bad request) */
#define FERROPHP_WORKER_REQUEST 4    /* *scope is the next request, prepared */
int ferrophp_worker_next(ferrophp_request_scope **scope);
/* The request's engine shutdown is done: its response goes to the client. */
void ferrophp_worker_respond(void);
/* The request is uninstalled: its job ends. True when the script must end too. */
bool ferrophp_worker_done(void);
/* The handler ended the script (exit(), a fatal error) with `exit_status`: the request
 * stays installed for the script's shutdown and ends after it. */
void ferrophp_worker_ending(int exit_status);
/* A php -S router returned false for itself: the server answers instead. */
void ferrophp_request_router_declined(void);

/* worker_request.c: a worker request inside the long-lived worker script: what
 * php_request_startup and php_request_shutdown do per HTTP request, minus the
 * engine-level parts that would destroy the worker script's state. Each returns true
 * when a step bailed out. */
/* Ends the worker script's own output layer while its boot context is still installed,
 * so output it buffered at boot or between requests reaches the worker's log, never the
 * next client; then drops the header list its boot request left behind. */
bool ferrophp_worker_output_release(void);
bool ferrophp_worker_request_startup(void);
bool ferrophp_worker_request_shutdown(void);
bool ferrophp_worker_request_finish(void);
/* The request has produced output: its headers went out, or one of its output buffers
 * holds bytes. */
bool ferrophp_worker_output_started(void);
/* A worker request leaves its max_execution_time timer running for the next one
 * (worker_request.c explains when that is safe). Stop disarms it before the worker script
 * runs on outside a request; forget drops what this thread knew of it (a new boot). */
void ferrophp_worker_timer_stop(void);
void ferrophp_worker_timer_forget(void);
/* ferrophp_request_heartbeat(): the max_execution_time timer gets at least `seconds`
 * more from now (worker_request.c). */
void ferrophp_execution_timer_extend(zend_long seconds);

/* locale.c: setlocale() per PHP thread. */
/* Points PHP's setlocale() at the per-thread one (module start-up). */
void ferrophp_locale_install(void);
/* Gives this thread PHP's start-up locale again if a setlocale() changed it (and its own
 * locale object on the first call). */
void ferrophp_locale_thread_reset(void);
/* Frees this thread's locale object (the thread's last PHP call). */
void ferrophp_locale_thread_release(void);

/* deadline.c: the PHP-thread side of request deadlines and of the slow log. Policy (when
 * to signal, when to give a thread up) is the caller's; see deadline.c and
 * deadline_waits.c for the mechanism and why it is safe for every other thread. */
typedef struct ferrophp_deadline ferrophp_deadline; /* one per PHP thread, opaque */

/* Why a request's deadline passed. */
#define FERROPHP_EXPIRED_NONE 0
/* PHP's max_execution_time timer fired (zend_on_timeout). */
#define FERROPHP_EXPIRED_TIME_LIMIT 1
/* The server's own limit (--request-timeout, extended by heartbeats). */
#define FERROPHP_EXPIRED_REQUEST_TIMEOUT 2

/* A snapshot of one thread's deadline state, for the watchdog (plain copies). */
typedef struct {
    bool active;
    uint64_t seq;
    int64_t started_ns;
    int64_t hard_ns;
    int64_t slow_ns;
    uint32_t expired;
    int64_t expired_ns;
    /* Blocked inside a replaced wait: 1 one with a timeout (it wakes for the deadline
     * and the slow log by itself), 2 one without (flock, waitpid). */
    uint32_t in_wait;
    bool slow_done;
    bool slow_ready;
} ferrophp_deadline_view;

/* The slow log's capture of one request: offsets/lengths into text[]. Written on the
 * PHP thread itself, read by the watchdog once `ready` (see slow_capture.c). */
#define FERROPHP_SLOW_FRAMES 48
#define FERROPHP_SLOW_TEXT 12288
typedef struct {
    uint32_t function, function_len; /* "Class::method", "sleep", "{main}" */
    uint32_t file, file_len;         /* where it was called from (empty: nowhere) */
    uint32_t line;
    uint32_t args, args_len;         /* summaries separated by 0x1f */
    uint32_t arg_count;              /* how many the call had */
} ferrophp_slow_frame;
typedef struct {
    uint64_t seq;
    int64_t started_ns;
    int64_t captured_ns;
    uint32_t method, method_len;
    uint32_t uri, uri_len;
    uint32_t file, file_len;         /* the innermost PHP code running */
    uint32_t line;
    uint32_t frame_count;
    uint32_t frames_omitted;
    /* 0 at a VM safe point (zend_interrupt_function), 1 in a wait that timed itself,
     * 2 in the signal handler of a thread blocked in flock/waitpid. */
    uint32_t how;
    ferrophp_slow_frame frames[FERROPHP_SLOW_FRAMES];
    uint32_t text_len;
    char text[FERROPHP_SLOW_TEXT];
} ferrophp_slow_snapshot;

/* Once, after php_module_startup: the signal handlers and the engine hooks.
 * `overrun_ns`: how long past its deadline PHP code may still run (shutdown functions,
 * destructors) before it is stopped again. */
void ferrophp_deadline_install(int64_t overrun_ns);
/* The signals the watchdog sends: 0 the deadline kick (no SA_RESTART), 1 the slow log's
 * (SA_RESTART). */
int ferrophp_deadline_signal(int which);
/* On a new PHP thread / before it ends. attach returns the thread's state for the
 * watchdog, valid until detach (which the thread calls itself). */
ferrophp_deadline *ferrophp_deadline_thread_attach(void);
void ferrophp_deadline_thread_detach(void);
/* CLOCK_MONOTONIC in ns, the clock of every deadline. */
int64_t ferrophp_deadline_now(void);
/* The calling thread starts (at `now_ns`) / ends a request (job). 0: no such limit. */
void ferrophp_deadline_begin(int64_t now_ns, int64_t hard_ns, int64_t slow_ns);
void ferrophp_deadline_end(void);
/* The calling thread's request: has its deadline passed (why, FERROPHP_EXPIRED_*)? */
uint32_t ferrophp_deadline_expired(void);
/* ferrophp_request_heartbeat(): moves the calling thread's server deadline to `hard_ns`
 * if that is later (0: none set). False when the deadline already passed. */
bool ferrophp_deadline_extend(int64_t hard_ns);
/* Before the session module's request shutdown: a session whose session_start() lost its
 * lock to the deadline is closed without being written back. */
void ferrophp_deadline_session_check(void);
/* For the watchdog (any thread): `d` is registered and its thread alive. */
void ferrophp_deadline_peek(const ferrophp_deadline *d, ferrophp_deadline_view *out);
/* For the watchdog: the thread of `d` captures its stack at its next VM safe point. */
void ferrophp_deadline_slow_at_safe_point(ferrophp_deadline *d);
/* The captured slow-log snapshot of `d`, or NULL; release hands the buffer back. */
const ferrophp_slow_snapshot *ferrophp_deadline_slow_snapshot(const ferrophp_deadline *d);
void ferrophp_deadline_slow_release(ferrophp_deadline *d);
/* Children whose wait a deadline cut short (proc_close): reaped without blocking. */
void ferrophp_deadline_reap(void);

#endif
