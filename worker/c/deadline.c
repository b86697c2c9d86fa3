/* deadline.c: a request's deadline reaches a PHP thread wherever it waits, and the slow
 * log captures a slow request's PHP stack on its own thread. This file owns each PHP
 * thread's deadline state (attached once per thread, begun and ended per request, read
 * by the watchdog), the two signals the watchdog sends and the engine hooks that end a
 * request past its deadline. The replaced libc waits are in deadline_waits.c (whose
 * comment says what each does once the deadline passed), the slow log's stack capture
 * in slow_capture.c; the state they share is in deadline_state.h (its storage and clock in
 * deadline_state.c).
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
 */
#define _GNU_SOURCE
#define ZEND_ENABLE_STATIC_TSRMLS_CACHE 1 /* the thread's cache is php-sys's shim.c's */
#include "deadline_state.h"
#include "ext/session/php_session.h"
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>

static int64_t overrun_after_ns = 2000000000LL;
static int kick_signal, slow_signal;

/* ---- signals and engine hooks --------------------------------------------------------- */

static void on_signal(int sig, siginfo_t *info, void *uc) {
    (void) info;
    (void) uc;
    int saved = errno;
    ferrophp_deadline *d = ferrophp_deadline_self;
    if (d) {
        if (atomic_load(&d->active)) {
            int64_t now = ferrophp_deadline_now();
            if (sig == kick_signal) {
                if (passed(d)) {
                    set_vm_interrupt(d);
                }
            } else if (sig == slow_signal && slow_due(d, now)) {
                if (atomic_load(&d->in_wait) == WAIT_BLOCKED) {
                    ferrophp_slow_capture(d, now, 2);
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
    ferrophp_deadline *d = ferrophp_deadline_self;
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
    ferrophp_deadline *d = ferrophp_deadline_self;
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
    ferrophp_deadline *d = ferrophp_deadline_self;
    if (d && atomic_load(&d->active)) {
        int64_t now = ferrophp_deadline_now();
        if (atomic_exchange(&d->slow_pending, false)) {
            ferrophp_slow_capture(d, now, 0);
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
    ferrophp_deadline_self = d;
    return d;
}

void ferrophp_deadline_thread_detach(void) {
    /* No handler of ours may run on this thread once its state is gone. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, kick_signal);
    sigaddset(&set, slow_signal);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    ferrophp_deadline *d = ferrophp_deadline_self;
    ferrophp_deadline_self = NULL;
    free(d);
}

void ferrophp_deadline_begin(int64_t now_ns, int64_t hard_ns, int64_t slow_ns) {
    ferrophp_deadline *d = ferrophp_deadline_self;
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
    ferrophp_deadline *d = ferrophp_deadline_self;
    if (d) {
        atomic_store_explicit(&d->active, false, memory_order_release);
        atomic_store_explicit(&d->slow_pending, false, memory_order_relaxed);
    }
}

uint32_t ferrophp_deadline_expired(void) {
    ferrophp_deadline *d = ferrophp_deadline_self;
    return d && passed(d) ? atomic_load(&d->expired) : FERROPHP_EXPIRED_NONE;
}

bool ferrophp_deadline_extend(int64_t hard_ns) {
    ferrophp_deadline *d = ferrophp_deadline_self;
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
