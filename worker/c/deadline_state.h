/* deadline_state.h: one PHP thread's deadline state, shared by the three files of request
 * deadlines (not part of the crate's C API, which is in worker.h): deadline.c owns its
 * life and the signals and hooks that act on it, deadline_waits.c the replaced libc waits
 * that check it, slow_capture.c the slow log's stack capture that fills its snapshot. The
 * checks all three make are here, inline, so each wait checks its deadline without a
 * call. Its symbols are hidden: the binary exports only the replaced libc functions. */
#ifndef FERROPHP_DEADLINE_STATE_H
#define FERROPHP_DEADLINE_STATE_H

#include "worker.h"
#include <stdatomic.h>

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

/* The calling thread's state; NULL on every thread that is not a PHP thread. Defined in
 * deadline_state.c, set by deadline.c (ferrophp_deadline_thread_attach/detach). */
extern __thread ferrophp_deadline *ferrophp_deadline_self
    __attribute__((tls_model("initial-exec"), visibility("hidden")));

/* Fills the thread's slow-log snapshot (slow_capture.c); `how`: 0 at a VM safe point, 1
 * in a timed wait that woke for it, 2 in the slow-log signal's handler. */
__attribute__((visibility("hidden"))) void ferrophp_slow_capture(ferrophp_deadline *d, int64_t now, uint32_t how);

/* ---- the request's deadline state ----------------------------------------------------- */

static inline void set_vm_interrupt(ferrophp_deadline *d) {
    zend_atomic_bool_store_ex(&d->eg->vm_interrupt, true);
}

/* Records that the deadline passed (first reason wins) and asks the VM to stop. */
static inline void mark_expired(ferrophp_deadline *d, uint32_t why, int64_t now) {
    uint32_t none = FERROPHP_EXPIRED_NONE;
    if (atomic_compare_exchange_strong(&d->expired, &none, why)) {
        atomic_store(&d->expired_ns, now);
    }
    set_vm_interrupt(d);
}

/* Whether the calling thread's request is past a deadline; notices the server deadline
 * itself when no kick has yet. */
static inline bool passed(ferrophp_deadline *d) {
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
static inline bool slow_due(ferrophp_deadline *d, int64_t now) {
    int64_t slow = atomic_load_explicit(&d->slow_ns, memory_order_relaxed);
    return slow && now >= slow && atomic_load_explicit(&d->active, memory_order_relaxed)
        && atomic_load(&d->slow_done_seq) != atomic_load_explicit(&d->seq, memory_order_relaxed)
        && !atomic_load_explicit(&d->slow_ready, memory_order_acquire);
}

/* When the current wait must wake for us at the latest (INT64_MAX: never). */
static inline int64_t wake_by(ferrophp_deadline *d, int64_t now) {
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

#endif
