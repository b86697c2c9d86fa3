/* deadline_waits.c: the libc wait functions a PHP thread blocks in, replaced so that a
 * request's deadline reaches it there (the deadline state and its signals are deadline.c's).
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
 * The Rust side calls ferrophp_deadline_reap, defined here, so the linker always takes
 * this object out of the crate's archive, and the replacements with it.
 */
#define _GNU_SOURCE
#define ZEND_ENABLE_STATIC_TSRMLS_CACHE 1 /* the thread's cache is php-sys's shim.c's */
#include "deadline_state.h"
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

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

static struct timespec to_timespec(int64_t ns) {
    struct timespec ts = {ns / 1000000000LL, ns % 1000000000LL};
    return ts;
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
        ferrophp_slow_capture(d, now, 1);
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
    ferrophp_deadline *d = ferrophp_deadline_self;
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
    ferrophp_deadline *d = ferrophp_deadline_self;
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
    ferrophp_deadline *d = ferrophp_deadline_self;
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
    ferrophp_deadline *d = ferrophp_deadline_self;
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
    ferrophp_deadline *d = ferrophp_deadline_self;
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
