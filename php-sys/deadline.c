/* deadline.c: a request's deadline reaches a PHP thread wherever it waits, and the slow
 * log captures a slow request's PHP stack on its own thread.
 *
 * PHP's max_execution_time timer (ZTS, --enable-zend-max-execution-timers) signals the
 * thread without SA_RESTART and sets EG(timed_out) + EG(vm_interrupt); that ends a
 * request running PHP code, and returns a blocked syscall with EINTR. But the waits PHP
 * and its libraries block in retry on EINTR: php_sock_stream_wait_for_data polls again
 * with the whole stream timeout, libpq and libcurl poll again, proc_close's waitpid and
 * the session file handler's flock loop on EINTR. So this file replaces, for PHP threads
 * only, the libc wait functions libphp, libcurl and libpq call: poll, select, nanosleep,
 * usleep, sleep, waitpid and flock. The definitions live in the ferrophp executable,
 * which the dynamic linker searches before libc for every library (ld exports them
 * because libphp.so references them; `nm -D` on the binary lists them).
 *
 * On a thread that never attached (tokio's, the main thread) each replacement is one
 * thread-local load and a jump to libc's own function: no behaviour differs. On a PHP
 * thread, while its request's deadline has not passed, each behaves as libc's, except
 * that a wait that has a timeout also wakes at the request's deadlines (server deadline,
 * slow-log moment) to act on them, and that EINTR caused by our own signals is retried
 * with the remaining time (a slow-log signal never shortens a sleep). Once the deadline
 * has passed:
 *   - poll/select shut down (shutdown(2), SHUT_RDWR) the stream sockets they wait on and
 *     report what the kernel then reports, at once: every client library sees its peer
 *     hang up (a query or transfer in progress fails, the connection is closed), which
 *     is the one answer all of their retry loops accept;
 *   - sleeps return early, as an interrupted sleep does;
 *   - waitpid (no WNOHANG) fails with ECHILD; the child is reaped later, without blocking
 *     (ferrophp_deadline_reap), so it never stays a zombie;
 *   - a blocking flock fails with EWOULDBLOCK (unlocking always works). A session whose
 *     session_start lost its lock that way is not written back (it was read unlocked).
 * and EG(vm_interrupt) is set, so the VM ends the request with a fatal error at its next
 * check, right after the internal function that waited returns (ZEND_VM_SET_OPCODE checks
 * after every internal call). Request shutdown then runs as after any fatal error:
 * session written and unlocked, flocks and files closed, temp files deleted, connections
 * closed.
 *
 * Two signals reach PHP threads, sent by the watchdog (worker/src/deadline.rs) with
 * pthread_kill, never to another thread:
 *   - the kick (SIGRTMIN+3, no SA_RESTART): wakes a thread blocked in a call without a
 *     timeout (flock, waitpid, a read on a pipe) once its deadline passed, and closes the
 *     race between a wait's check of the deadline and the syscall (the watchdog repeats
 *     it while the request runs on past its deadline);
 *   - the slow-log signal (SIGRTMIN+4, SA_RESTART), only to a thread blocked in flock or
 *     waitpid, which the kernel restarts after the handler captured the stack. A thread
 *     running PHP code is asked for its stack without a signal: the watchdog sets its
 *     EG(vm_interrupt) (an atomic, as PHP's timer sets it) and the next VM safe point
 *     captures; a thread in a timed wait captures when the wait wakes for it. So no wait
 *     of a slow request returns EINTR because of the slow log (and a stray signal of ours
 *     that reaches a replaced wait is retried with the time left).
 * Both handlers only read the thread's own state, write atomics and EG(vm_interrupt) as
 * PHP's own timer handler does, and read the clock (async-signal-safe calls only, errno
 * kept).
 *
 * The slow log's capture (ferrophp_slow_snapshot) always runs on the request's own
 * thread, reading its own engine state, never another thread's memory: at a VM safe
 * point (zend_interrupt_function), or in a timed wait that woke at the slow-log moment
 * (the thread is inside an internal function's C call, so every frame of the VM is
 * complete: ZEND_DO_ICALL saved the opline first), or, for a thread blocked in
 * flock/waitpid, in the slow-log signal's handler, which interrupts that thread in the
 * same complete state. The capture walks EG(current_execute_data) read-only and copies
 * bounded pieces (names, file, line, argument summaries) into the thread's own
 * preallocated buffer: no allocation, no lock, no call outside this file except reading
 * memory the thread itself owns and is not changing (it is stopped in that handler).
 * The watchdog reads the buffer only after the thread published it (release/acquire)
 * and hands it back the same way.
 */
#define _GNU_SOURCE
#define ZEND_ENABLE_STATIC_TSRMLS_CACHE 1 /* the thread's cache is shim.c's */
#include "shim.h"
#include "ext/session/php_session.h"
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/file.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* What in_wait says. */
#define WAIT_NONE 0
#define WAIT_TIMED 1   /* poll, select, the sleeps: they wake for our deadlines */
#define WAIT_BLOCKED 2 /* flock, waitpid: only a signal reaches them */

struct ferrophp_deadline {
    _Atomic bool active;
    _Atomic uint64_t seq;
    _Atomic int64_t started_ns;
    _Atomic int64_t hard_ns;
    _Atomic int64_t slow_ns;
    _Atomic uint32_t expired;
    _Atomic int64_t expired_ns;
    /* The fatal error for a server deadline was raised in this request. */
    _Atomic bool raised;
    _Atomic uint32_t in_wait;
    /* One of our signals arrived since the current wait started. */
    _Atomic bool ours;
    /* The slow-log signal asked the next VM safe point to capture. */
    _Atomic bool slow_pending;
    _Atomic uint64_t slow_done_seq;
    /* The snapshot buffer: false free (this thread may write), true ready (the
     * watchdog reads it and frees it). */
    _Atomic bool slow_ready;
    _Atomic bool capturing;
    /* session_start() lost its lock to the deadline in this request. */
    _Atomic bool session_unlocked;
    zend_executor_globals *eg;
    sapi_globals_struct *sg;
    ferrophp_slow_snapshot snap;
};

/* The calling thread's state; NULL on every thread that is not a PHP thread. */
static __thread ferrophp_deadline *me __attribute__((tls_model("initial-exec")));

static int64_t overrun_after_ns = 2000000000LL;
static int kick_signal, slow_signal;

/* ---- libc's own functions ------------------------------------------------------------- */

typedef int (*poll_fn)(struct pollfd *, nfds_t, int);
typedef int (*select_fn)(int, fd_set *, fd_set *, fd_set *, struct timeval *);
typedef int (*nanosleep_fn)(const struct timespec *, struct timespec *);
typedef pid_t (*waitpid_fn)(pid_t, int *, int);
typedef int (*flock_fn)(int, int);

static _Atomic(void *) real_fns[5];
enum { R_POLL, R_SELECT, R_NANOSLEEP, R_WAITPID, R_FLOCK };
static const char *const real_names[5] = {"poll", "select", "nanosleep", "waitpid", "flock"};

/* The next definition after ours (libc's). Resolved once; a race resolves twice, to the
 * same pointer. */
static void *real(int which) {
    void *fn = atomic_load_explicit(&real_fns[which], memory_order_acquire);
    if (__builtin_expect(fn == NULL, 0)) {
        fn = dlsym(RTLD_NEXT, real_names[which]);
        if (!fn) {
            /* Without libc's function nothing can go on: as a failed syscall would. */
            abort();
        }
        atomic_store_explicit(&real_fns[which], fn, memory_order_release);
    }
    return fn;
}

__attribute__((constructor)) static void resolve_real_functions(void) {
    for (int i = 0; i < 5; i++) {
        real(i);
    }
}

/* ---- time ----------------------------------------------------------------------------- */

int64_t ferrophp_deadline_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t) ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static struct timespec to_timespec(int64_t ns) {
    struct timespec ts = {ns / 1000000000LL, ns % 1000000000LL};
    return ts;
}

/* ---- the request's deadline state ----------------------------------------------------- */

static void set_vm_interrupt(ferrophp_deadline *d) {
    zend_atomic_bool_store_ex(&d->eg->vm_interrupt, true);
}

/* Records that the deadline passed (first reason wins) and asks the VM to stop. */
static void mark_expired(ferrophp_deadline *d, uint32_t why, int64_t now) {
    uint32_t none = FERROPHP_EXPIRED_NONE;
    if (atomic_compare_exchange_strong(&d->expired, &none, why)) {
        atomic_store(&d->expired_ns, now);
    }
    set_vm_interrupt(d);
}

/* Whether the calling thread's request is past a deadline; notices the server deadline
 * itself when no kick has yet. */
static bool passed(ferrophp_deadline *d) {
    if (!atomic_load_explicit(&d->active, memory_order_relaxed)) {
        return false;
    }
    if (atomic_load_explicit(&d->expired, memory_order_relaxed) != FERROPHP_EXPIRED_NONE) {
        return true;
    }
    int64_t hard = atomic_load_explicit(&d->hard_ns, memory_order_relaxed);
    if (hard) {
        int64_t now = ferrophp_deadline_now();
        if (now >= hard) {
            mark_expired(d, FERROPHP_EXPIRED_REQUEST_TIMEOUT, now);
            return true;
        }
    }
    return false;
}

/* The slow-log moment came and this request has no snapshot yet (and the buffer is
 * free for one). */
static bool slow_due(ferrophp_deadline *d, int64_t now) {
    int64_t slow = atomic_load_explicit(&d->slow_ns, memory_order_relaxed);
    return slow && now >= slow && atomic_load_explicit(&d->active, memory_order_relaxed)
        && atomic_load(&d->slow_done_seq) != atomic_load_explicit(&d->seq, memory_order_relaxed)
        && !atomic_load_explicit(&d->slow_ready, memory_order_acquire);
}

/* When the current wait must wake for us at the latest (INT64_MAX: never). */
static int64_t wake_by(ferrophp_deadline *d, int64_t now) {
    int64_t by = INT64_MAX;
    if (!atomic_load_explicit(&d->active, memory_order_relaxed)) {
        return by;
    }
    int64_t hard = atomic_load_explicit(&d->hard_ns, memory_order_relaxed);
    if (hard) {
        by = hard;
    }
    int64_t slow = atomic_load_explicit(&d->slow_ns, memory_order_relaxed);
    if (slow && slow < by && atomic_load(&d->slow_done_seq) != atomic_load(&d->seq)
        && !atomic_load_explicit(&d->slow_ready, memory_order_acquire)) {
        by = slow < now ? now : slow;
    }
    return by;
}

/* ---- the slow log's capture ----------------------------------------------------------- */

/* Appends to the snapshot's text; what does not fit is cut. Returns the start offset. */
static uint32_t put(ferrophp_slow_snapshot *s, const char *p, size_t n) {
    uint32_t at = s->text_len;
    size_t room = FERROPHP_SLOW_TEXT - s->text_len;
    if (n > room) {
        n = room;
    }
    memcpy(s->text + s->text_len, p, n);
    s->text_len += (uint32_t) n;
    return at;
}

static void put_str(ferrophp_slow_snapshot *s, const char *p) { put(s, p, strlen(p)); }

static void put_u64(ferrophp_slow_snapshot *s, uint64_t v) {
    char buf[24];
    int i = sizeof buf;
    do {
        buf[--i] = (char) ('0' + v % 10);
        v /= 10;
    } while (v);
    put(s, buf + i, sizeof buf - i);
}

static void put_i64(ferrophp_slow_snapshot *s, int64_t v) {
    if (v < 0) {
        put(s, "-", 1);
        put_u64(s, (uint64_t) 0 - (uint64_t) v);
    } else {
        put_u64(s, (uint64_t) v);
    }
}

/* A float with up to 6 decimals, without printf (not async-signal-safe). */
static void put_double(ferrophp_slow_snapshot *s, double v) {
    if (v != v) {
        put_str(s, "NAN");
        return;
    }
    if (v < 0) {
        put(s, "-", 1);
        v = -v;
    }
    if (v > 9e15) {
        put_str(s, v == __builtin_inf() ? "INF" : "1.0E+16+");
        return;
    }
    uint64_t whole = (uint64_t) v;
    uint64_t frac = (uint64_t) ((v - (double) whole) * 1000000.0 + 0.5);
    if (frac >= 1000000) {
        whole++;
        frac -= 1000000;
    }
    put_u64(s, whole);
    if (frac) {
        char digits[7] = "000000";
        for (int i = 5; i >= 0; i--) {
            digits[i] = (char) ('0' + frac % 10);
            frac /= 10;
        }
        int n = 6;
        while (n > 0 && digits[n - 1] == '0') {
            n--;
        }
        put(s, ".", 1);
        put(s, digits, n);
    }
}

static void put_zstr(ferrophp_slow_snapshot *s, const zend_string *z, size_t max) {
    if (z) {
        put(s, ZSTR_VAL(z), ZSTR_LEN(z) < max ? ZSTR_LEN(z) : max);
    }
}

/* One argument, as debug traces summarise them: its type and a short view of it. */
static void put_arg(ferrophp_slow_snapshot *s, zval *zv) {
    if (Z_TYPE_P(zv) == IS_REFERENCE) {
        zv = Z_REFVAL_P(zv);
    }
    switch (Z_TYPE_P(zv)) {
        case IS_UNDEF:
        case IS_NULL: put_str(s, "null"); break;
        case IS_FALSE: put_str(s, "false"); break;
        case IS_TRUE: put_str(s, "true"); break;
        case IS_LONG: put_str(s, "int("); put_i64(s, Z_LVAL_P(zv)); put_str(s, ")"); break;
        case IS_DOUBLE: put_str(s, "float("); put_double(s, Z_DVAL_P(zv)); put_str(s, ")"); break;
        case IS_STRING:
            put_str(s, "string(");
            put_u64(s, Z_STRLEN_P(zv));
            put_str(s, ") \"");
            put_zstr(s, Z_STR_P(zv), 32);
            put_str(s, Z_STRLEN_P(zv) > 32 ? "...\"" : "\"");
            break;
        case IS_ARRAY:
            /* nNumOfElements, read as it is: zend_array_count may write to the array. */
            put_str(s, "array(");
            put_u64(s, Z_ARRVAL_P(zv)->nNumOfElements);
            put_str(s, ")");
            break;
        case IS_OBJECT:
            put_str(s, "object(");
            put_zstr(s, Z_OBJCE_P(zv)->name, 128);
            put_str(s, ")");
            break;
        case IS_RESOURCE: put_str(s, "resource("); put_i64(s, Z_RES_HANDLE_P(zv)); put_str(s, ")"); break;
        default: put_str(s, "?"); break;
    }
}

/* The nearest frame below `ex` that runs PHP code: where `ex` was called from. */
static zend_execute_data *caller_of(zend_execute_data *ex) {
    for (ex = ex->prev_execute_data; ex; ex = ex->prev_execute_data) {
        if (ex->func && ZEND_USER_CODE(ex->func->common.type)) {
            return ex;
        }
    }
    return NULL;
}

static void put_c_string(ferrophp_slow_snapshot *s, const char *c, uint32_t *at, uint32_t *len) {
    uint32_t before = s->text_len;
    if (c) {
        put(s, c, strnlen(c, 512));
    }
    *at = before;
    *len = s->text_len - before;
}

/* Fills the thread's snapshot from its own engine state and publishes it. Only on the
 * request's thread, at a point where its VM frames are complete (see the file comment). */
static void capture(ferrophp_deadline *d, int64_t now, uint32_t how) {
    if (atomic_exchange(&d->capturing, true)) {
        return;
    }
    if (!slow_due(d, now)) {
        atomic_store(&d->capturing, false);
        return;
    }
    ferrophp_slow_snapshot *s = &d->snap;
    s->seq = atomic_load(&d->seq);
    s->started_ns = atomic_load(&d->started_ns);
    s->captured_ns = now;
    s->how = how;
    s->text_len = 0;
    s->frame_count = 0;
    s->frames_omitted = 0;
    s->line = 0;
    put_c_string(s, d->sg->request_info.request_method, &s->method, &s->method_len);
    put_c_string(s, d->sg->request_info.request_uri, &s->uri, &s->uri_len);
    s->file = s->text_len;
    s->file_len = 0;
    bool innermost = true;
    for (zend_execute_data *ex = d->eg->current_execute_data; ex; ex = ex->prev_execute_data) {
        zend_function *f = ex->func;
        if (!f) {
            continue;
        }
        bool user = ZEND_USER_CODE(f->common.type);
        if (user && innermost && ex->opline) {
            s->file = put(s, "", 0);
            put_zstr(s, f->op_array.filename, 1024);
            s->file_len = s->text_len - s->file;
            s->line = ex->opline->lineno;
            innermost = false;
        }
        if (s->frame_count == FERROPHP_SLOW_FRAMES) {
            s->frames_omitted++;
            continue;
        }
        ferrophp_slow_frame *fr = &s->frames[s->frame_count++];
        fr->function = s->text_len;
        if (f->common.function_name) {
            if (f->common.scope) {
                put_zstr(s, f->common.scope->name, 256);
                put_str(s, "::");
            }
            put_zstr(s, f->common.function_name, 256);
        } else {
            put_str(s, caller_of(ex) ? "include" : "{main}");
        }
        fr->function_len = s->text_len - fr->function;
        zend_execute_data *caller = caller_of(ex);
        fr->file = s->text_len;
        fr->line = 0;
        if (caller && caller->opline) {
            put_zstr(s, caller->func->op_array.filename, 1024);
            fr->line = caller->opline->lineno;
        } else if (!f->common.function_name && user) {
            put_zstr(s, f->op_array.filename, 1024);
            fr->line = ex->opline ? ex->opline->lineno : 0;
        }
        fr->file_len = s->text_len - fr->file;
        fr->args = s->text_len;
        fr->arg_count = 0;
        if (f->common.function_name) {
            uint32_t n = ZEND_CALL_NUM_ARGS(ex);
            fr->arg_count = n;
            /* A user function keeps arguments past its declared ones elsewhere; the
             * declared ones are enough for a summary. */
            uint32_t shown = user && n > f->op_array.num_args ? f->op_array.num_args : n;
            if (shown > 6) {
                shown = 6;
            }
            for (uint32_t i = 0; i < shown; i++) {
                if (i) {
                    put(s, "\x1f", 1);
                }
                put_arg(s, ZEND_CALL_ARG(ex, i + 1));
            }
        }
        fr->args_len = s->text_len - fr->args;
    }
    atomic_store(&d->slow_done_seq, s->seq);
    atomic_store_explicit(&d->slow_ready, true, memory_order_release);
    atomic_store(&d->capturing, false);
}

/* ---- signals and engine hooks --------------------------------------------------------- */

static void on_signal(int sig, siginfo_t *info, void *uc) {
    (void) info;
    (void) uc;
    int saved = errno;
    ferrophp_deadline *d = me;
    if (d) {
        if (atomic_load(&d->active)) {
            int64_t now = ferrophp_deadline_now();
            if (sig == kick_signal) {
                if (passed(d)) {
                    set_vm_interrupt(d);
                }
            } else if (sig == slow_signal && slow_due(d, now)) {
                if (atomic_load(&d->in_wait) == WAIT_BLOCKED) {
                    capture(d, now, 2);
                } else {
                    atomic_store(&d->slow_pending, true);
                    set_vm_interrupt(d);
                }
            }
        }
        atomic_store(&d->ours, true);
    }
    errno = saved;
}

/* PHP's timer handler calls this (zend_on_timeout) on the thread whose timer fired. */
static void (*prev_on_timeout)(int seconds);
static void on_timeout(int seconds) {
    if (prev_on_timeout) {
        prev_on_timeout(seconds);
    }
    ferrophp_deadline *d = me;
    if (d && atomic_load(&d->active)) {
        mark_expired(d, FERROPHP_EXPIRED_TIME_LIMIT, ferrophp_deadline_now());
    }
}

/* A session_start() that lost its lock read the session unlocked: never write it back.
 * (Not a write either when its data was unchanged: with session.lazy_write=0 PHP would
 * write it anyway, over what the lock's holder may have written meanwhile.) */
static void forget_unlocked_session(ferrophp_deadline *d) {
    if (atomic_load(&d->session_unlocked) && PS(session_status) == php_session_active) {
        PS(session_status) = php_session_none;
    }
}

void ferrophp_deadline_session_check(void) {
    ferrophp_deadline *d = me;
    if (d && atomic_load(&d->active)) {
        forget_unlocked_session(d);
    }
}

static ZEND_NORETURN void raise_request_timeout(ferrophp_deadline *d, int64_t now) {
    atomic_store(&d->raised, true);
    forget_unlocked_session(d);
    if (!SG(headers_sent)) {
        SG(sapi_headers).http_response_code = 504;
    }
    int64_t ms = (now - atomic_load(&d->started_ns)) / 1000000;
    zend_error_noreturn(E_ERROR, "Request timeout: still running after " ZEND_LONG_FMT
                        " ms (ferrophp --request-timeout)", (zend_long) ms);
}

static ZEND_NORETURN void raise_overrun(ferrophp_deadline *d, int64_t now) {
    int64_t ms = (now - atomic_load(&d->expired_ns)) / 1000000;
    zend_error_noreturn(E_ERROR, "Still running " ZEND_LONG_FMT
                        " ms after the request's deadline: stopped", (zend_long) ms);
}

static void (*prev_interrupt)(zend_execute_data *ex);
static void on_interrupt(zend_execute_data *ex) {
    ferrophp_deadline *d = me;
    if (d && atomic_load(&d->active)) {
        int64_t now = ferrophp_deadline_now();
        if (atomic_exchange(&d->slow_pending, false)) {
            capture(d, now, 0);
        }
        if (passed(d)) {
            uint32_t why = atomic_load(&d->expired);
            if (why == FERROPHP_EXPIRED_REQUEST_TIMEOUT && !atomic_load(&d->raised)) {
                raise_request_timeout(d, now);
            }
            /* max_execution_time: PHP's own helper raised it (EG(timed_out)); shutdown
             * functions then run without a limit in PHP, here until the overrun. */
            forget_unlocked_session(d);
            if (now - atomic_load(&d->expired_ns) >= overrun_after_ns) {
                raise_overrun(d, now);
            }
        }
    }
    if (prev_interrupt) {
        prev_interrupt(ex);
    }
}

void ferrophp_deadline_install(int64_t overrun_ns) {
    overrun_after_ns = overrun_ns;
    kick_signal = SIGRTMIN + 3;
    slow_signal = SIGRTMIN + 4;
    struct sigaction act;
    memset(&act, 0, sizeof act);
    act.sa_sigaction = on_signal;
    sigemptyset(&act.sa_mask);
    /* The kick must interrupt flock, waitpid and reads: no SA_RESTART. */
    act.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigaction(kick_signal, &act, NULL);
    /* The slow log must change nothing: restartable syscalls restart. */
    act.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
    sigaction(slow_signal, &act, NULL);
    prev_on_timeout = zend_on_timeout;
    zend_on_timeout = on_timeout;
    prev_interrupt = zend_interrupt_function;
    zend_interrupt_function = on_interrupt;
}

int ferrophp_deadline_signal(int which) { return which == 0 ? kick_signal : slow_signal; }

ferrophp_deadline *ferrophp_deadline_thread_attach(void) {
    ferrophp_deadline *d = calloc(1, sizeof *d);
    if (!d) {
        return NULL;
    }
    d->eg = ferrophp_executor_globals();
    d->sg = ferrophp_sapi_globals();
    /* The thread may have inherited a mask that blocks them. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, kick_signal);
    sigaddset(&set, slow_signal);
    pthread_sigmask(SIG_UNBLOCK, &set, NULL);
    me = d;
    return d;
}

void ferrophp_deadline_thread_detach(void) {
    /* No handler of ours may run on this thread once its state is gone. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, kick_signal);
    sigaddset(&set, slow_signal);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    ferrophp_deadline *d = me;
    me = NULL;
    free(d);
}

void ferrophp_deadline_begin(int64_t now_ns, int64_t hard_ns, int64_t slow_ns) {
    ferrophp_deadline *d = me;
    if (!d) {
        return;
    }
    /* Relaxed: the release store of `active` publishes them, to the watchdog and to this
     * thread's own signal handlers alike (nothing is moved past a release store). */
    atomic_store_explicit(&d->active, false, memory_order_relaxed);
    atomic_store_explicit(&d->seq, atomic_load_explicit(&d->seq, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    atomic_store_explicit(&d->started_ns, now_ns, memory_order_relaxed);
    atomic_store_explicit(&d->hard_ns, hard_ns, memory_order_relaxed);
    atomic_store_explicit(&d->slow_ns, slow_ns, memory_order_relaxed);
    atomic_store_explicit(&d->expired, FERROPHP_EXPIRED_NONE, memory_order_relaxed);
    atomic_store_explicit(&d->expired_ns, 0, memory_order_relaxed);
    atomic_store_explicit(&d->raised, false, memory_order_relaxed);
    atomic_store_explicit(&d->slow_pending, false, memory_order_relaxed);
    atomic_store_explicit(&d->session_unlocked, false, memory_order_relaxed);
    atomic_store_explicit(&d->active, true, memory_order_release);
}

void ferrophp_deadline_end(void) {
    ferrophp_deadline *d = me;
    if (d) {
        atomic_store_explicit(&d->active, false, memory_order_release);
        atomic_store_explicit(&d->slow_pending, false, memory_order_relaxed);
    }
}

uint32_t ferrophp_deadline_expired(void) {
    ferrophp_deadline *d = me;
    return d && passed(d) ? atomic_load(&d->expired) : FERROPHP_EXPIRED_NONE;
}

bool ferrophp_deadline_extend(int64_t hard_ns) {
    ferrophp_deadline *d = me;
    if (!d || passed(d)) {
        return false;
    }
    int64_t current = atomic_load(&d->hard_ns);
    if (current && hard_ns > current) {
        atomic_store(&d->hard_ns, hard_ns);
    }
    return true;
}

void ferrophp_deadline_peek(const ferrophp_deadline *d, ferrophp_deadline_view *out) {
    ferrophp_deadline *m = (ferrophp_deadline *) d;
    out->active = atomic_load_explicit(&m->active, memory_order_acquire);
    out->seq = atomic_load(&m->seq);
    out->started_ns = atomic_load(&m->started_ns);
    out->hard_ns = atomic_load(&m->hard_ns);
    out->slow_ns = atomic_load(&m->slow_ns);
    out->expired = atomic_load(&m->expired);
    out->expired_ns = atomic_load(&m->expired_ns);
    out->in_wait = atomic_load(&m->in_wait);
    out->slow_done = atomic_load(&m->slow_done_seq) == out->seq;
    out->slow_ready = atomic_load_explicit(&m->slow_ready, memory_order_acquire);
}

const ferrophp_slow_snapshot *ferrophp_deadline_slow_snapshot(const ferrophp_deadline *d) {
    ferrophp_deadline *m = (ferrophp_deadline *) d;
    return atomic_load_explicit(&m->slow_ready, memory_order_acquire) ? &m->snap : NULL;
}

void ferrophp_deadline_slow_at_safe_point(ferrophp_deadline *d) {
    /* Both are atomics meant to be set from outside the VM (PHP's own timer does the same
     * from a signal handler, and from a timer thread on Windows). A request that ended
     * meanwhile is not harmed: the next safe point finds nothing due and goes on. */
    atomic_store(&d->slow_pending, true);
    set_vm_interrupt(d);
}

void ferrophp_deadline_slow_release(ferrophp_deadline *d) {
    atomic_store_explicit(&d->slow_ready, false, memory_order_release);
}

/* ---- children whose wait was cut ------------------------------------------------------ */

#define ABANDONED_MAX 256
static _Atomic pid_t abandoned[ABANDONED_MAX];

static void abandon(pid_t pid) {
    if (pid <= 0) {
        return;
    }
    for (int i = 0; i < ABANDONED_MAX; i++) {
        pid_t none = 0;
        if (atomic_compare_exchange_strong(&abandoned[i], &none, pid)) {
            return;
        }
    }
    /* Full: that child stays a zombie until the process ends. */
}

void ferrophp_deadline_reap(void) {
    waitpid_fn wait = (waitpid_fn) real(R_WAITPID);
    for (int i = 0; i < ABANDONED_MAX; i++) {
        pid_t pid = atomic_load(&abandoned[i]);
        if (pid > 0) {
            int status;
            pid_t r = wait(pid, &status, WNOHANG);
            if (r == pid || (r < 0 && errno == ECHILD)) {
                atomic_compare_exchange_strong(&abandoned[i], &pid, 0);
            }
        }
    }
}

/* ---- the replacements ----------------------------------------------------------------- */

/* Shuts down `fd` when it is a connected stream socket: its peer and our reads see the
 * connection end. Listening sockets and anything else are left alone. */
static void cut(int fd) {
    int type, listening;
    socklen_t len = sizeof type;
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_STREAM) {
        return;
    }
    len = sizeof listening;
    if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) == 0 && listening) {
        return;
    }
    shutdown(fd, SHUT_RDWR);
}

static int ms_until(int64_t at, int64_t now) {
    if (at <= now) {
        return 0;
    }
    int64_t ms = (at - now + 999999) / 1000000;
    return ms > INT32_MAX ? INT32_MAX : (int) ms;
}

/* A timed wait woke: acts on the slow-log moment if that is why. */
static void woke_early(ferrophp_deadline *d) {
    int64_t now = ferrophp_deadline_now();
    if (slow_due(d, now)) {
        capture(d, now, 1);
    }
}

/* After a timed wait inside an interposed call returned `r` (errno `e`): true to wait
 * again (our own signal, or an early wake for the slow-log moment); false when the call
 * returns `r` with errno `e` (a result, an error, the caller's time is up, or an EINTR
 * that was not ours). `time_up`: the caller's own timeout has passed. */
static bool wait_again(ferrophp_deadline *d, int r, int e, bool time_up) {
    if (r > 0 || (r < 0 && e != EINTR)) {
        return false;
    }
    if (r == 0) {
        if (time_up) {
            return false;
        }
        woke_early(d);
        return true;
    }
    return passed(d) || atomic_exchange(&d->ours, false);
}

int poll(struct pollfd *fds, nfds_t nfds, int timeout) {
    ferrophp_deadline *d = me;
    poll_fn call = (poll_fn) real(R_POLL);
    if (__builtin_expect(d == NULL, 1)) {
        return call(fds, nfds, timeout);
    }
    atomic_store(&d->ours, false);
    int64_t end = timeout < 0 ? INT64_MAX : ferrophp_deadline_now() + (int64_t) timeout * 1000000;
    for (;;) {
        if (passed(d)) {
            for (nfds_t i = 0; i < nfds; i++) {
                if (fds[i].fd >= 0) {
                    cut(fds[i].fd);
                }
            }
            return call(fds, nfds, 0);
        }
        int64_t now = ferrophp_deadline_now();
        int64_t by = wake_by(d, now);
        int wait = timeout;
        if (timeout != 0 && by < end) {
            wait = ms_until(by, now);
        } else if (timeout > 0) {
            wait = ms_until(end, now);
        }
        atomic_store(&d->in_wait, WAIT_TIMED);
        int r = call(fds, nfds, wait);
        int e = errno;
        atomic_store(&d->in_wait, WAIT_NONE);
        if (!wait_again(d, r, e, timeout == 0 || ferrophp_deadline_now() >= end)) {
            errno = e;
            return r;
        }
    }
}

int select(int nfds, fd_set *rd, fd_set *wr, fd_set *ex, struct timeval *timeout) {
    ferrophp_deadline *d = me;
    select_fn call = (select_fn) real(R_SELECT);
    /* Sets past FD_SETSIZE (allocated bigger by their caller) cannot be copied here. */
    if (__builtin_expect(d == NULL, 1) || nfds > FD_SETSIZE) {
        return call(nfds, rd, wr, ex, timeout);
    }
    atomic_store(&d->ours, false);
    /* The kernel rewrites the sets on every return: keep what the caller asked for. */
    fd_set want_rd, want_wr, want_ex;
    if (rd) want_rd = *rd;
    if (wr) want_wr = *wr;
    if (ex) want_ex = *ex;
    int64_t end = !timeout ? INT64_MAX
        : ferrophp_deadline_now() + (int64_t) timeout->tv_sec * 1000000000LL + (int64_t) timeout->tv_usec * 1000;
    for (;;) {
        if (rd) *rd = want_rd;
        if (wr) *wr = want_wr;
        if (ex) *ex = want_ex;
        int64_t now = ferrophp_deadline_now();
        if (passed(d)) {
            for (int fd = 0; fd < nfds; fd++) {
                if ((rd && FD_ISSET(fd, rd)) || (wr && FD_ISSET(fd, wr)) || (ex && FD_ISSET(fd, ex))) {
                    cut(fd);
                }
            }
            struct timeval zero = {0, 0};
            int r = call(nfds, rd, wr, ex, &zero);
            if (timeout) {
                *timeout = zero;
            }
            return r;
        }
        int64_t by = wake_by(d, now);
        int64_t until = by < end ? by : end;
        struct timeval tv, *tvp = NULL;
        if (until != INT64_MAX) {
            int64_t left = until > now ? until - now : 0;
            tv.tv_sec = left / 1000000000LL;
            tv.tv_usec = (left % 1000000000LL + 999) / 1000;
            if (tv.tv_usec >= 1000000) {
                tv.tv_sec++;
                tv.tv_usec -= 1000000;
            }
            tvp = &tv;
        }
        atomic_store(&d->in_wait, WAIT_TIMED);
        int r = call(nfds, rd, wr, ex, tvp);
        int e = errno;
        atomic_store(&d->in_wait, WAIT_NONE);
        now = ferrophp_deadline_now();
        if (timeout) {
            int64_t left = end > now ? end - now : 0;
            timeout->tv_sec = left / 1000000000LL;
            timeout->tv_usec = left % 1000000000LL / 1000;
        }
        if (!wait_again(d, r, e, now >= end)) {
            errno = e;
            return r;
        }
    }
}

/* Sleeps until CLOCK_MONOTONIC `end`; 0, or EINTR with the time left in *left_ns. */
static int sleep_until(ferrophp_deadline *d, int64_t end, int64_t *left_ns) {
    atomic_store(&d->ours, false);
    for (;;) {
        int64_t now = ferrophp_deadline_now();
        if (passed(d)) {
            *left_ns = end > now ? end - now : 0;
            return EINTR;
        }
        if (now >= end) {
            return 0;
        }
        int64_t by = wake_by(d, now);
        struct timespec at = to_timespec(by < end ? by : end);
        atomic_store(&d->in_wait, WAIT_TIMED);
        int r = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, NULL);
        atomic_store(&d->in_wait, WAIT_NONE);
        if (r == 0) {
            woke_early(d);
            continue;
        }
        if (r == EINTR && (passed(d) || atomic_exchange(&d->ours, false))) {
            continue;
        }
        now = ferrophp_deadline_now();
        *left_ns = end > now ? end - now : 0;
        return r;
    }
}

int nanosleep(const struct timespec *req, struct timespec *rem) {
    ferrophp_deadline *d = me;
    if (__builtin_expect(d == NULL, 1)) {
        return ((nanosleep_fn) real(R_NANOSLEEP))(req, rem);
    }
    if (req->tv_nsec < 0 || req->tv_nsec >= 1000000000L || req->tv_sec < 0) {
        errno = EINVAL;
        return -1;
    }
    int64_t end = ferrophp_deadline_now() + (int64_t) req->tv_sec * 1000000000LL + req->tv_nsec;
    int64_t left = 0;
    int r = sleep_until(d, end, &left);
    if (r == 0) {
        return 0;
    }
    if (rem) {
        *rem = to_timespec(left);
    }
    errno = r;
    return -1;
}

int usleep(useconds_t usec) {
    struct timespec ts = {usec / 1000000, (long) (usec % 1000000) * 1000};
    return nanosleep(&ts, NULL);
}

unsigned int sleep(unsigned int seconds) {
    struct timespec ts = {seconds, 0}, rem = {0, 0};
    int saved = errno;
    if (nanosleep(&ts, &rem) < 0) {
        /* As glibc: the whole seconds not slept. */
        return (unsigned int) rem.tv_sec;
    }
    errno = saved;
    return 0;
}

pid_t waitpid(pid_t pid, int *status, int options) {
    ferrophp_deadline *d = me;
    waitpid_fn call = (waitpid_fn) real(R_WAITPID);
    if (__builtin_expect(d == NULL, 1) || (options & WNOHANG)) {
        return call(pid, status, options);
    }
    atomic_store(&d->ours, false);
    for (;;) {
        if (passed(d)) {
            abandon(pid);
            errno = ECHILD;
            return -1;
        }
        atomic_store(&d->in_wait, WAIT_BLOCKED);
        pid_t r = call(pid, status, options);
        int e = errno;
        atomic_store(&d->in_wait, WAIT_NONE);
        if (r >= 0 || e != EINTR) {
            errno = e;
            return r;
        }
        if (passed(d) || atomic_exchange(&d->ours, false)) {
            continue;
        }
        errno = EINTR;
        return -1;
    }
}

/* Whether the running PHP function is session_start(): its lock is the session's. */
static bool in_session_start(ferrophp_deadline *d) {
    zend_execute_data *ex = d->eg->current_execute_data;
    return ex && ex->func && ex->func->common.function_name
        && zend_string_equals_literal(ex->func->common.function_name, "session_start");
}

int flock(int fd, int operation) {
    ferrophp_deadline *d = me;
    flock_fn call = (flock_fn) real(R_FLOCK);
    if (__builtin_expect(d == NULL, 1) || (operation & (LOCK_UN | LOCK_NB))) {
        return call(fd, operation);
    }
    atomic_store(&d->ours, false);
    for (;;) {
        if (passed(d)) {
            /* Too late to wait: only a lock free right now is taken. */
            if (call(fd, operation | LOCK_NB) == 0) {
                return 0;
            }
            if (in_session_start(d)) {
                atomic_store(&d->session_unlocked, true);
            }
            errno = EWOULDBLOCK;
            return -1;
        }
        atomic_store(&d->in_wait, WAIT_BLOCKED);
        int r = call(fd, operation);
        int e = errno;
        atomic_store(&d->in_wait, WAIT_NONE);
        if (r == 0 || e != EINTR) {
            errno = e;
            return r;
        }
        if (passed(d) || atomic_exchange(&d->ours, false)) {
            continue;
        }
        errno = EINTR;
        return -1;
    }
}
