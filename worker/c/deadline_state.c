/* deadline_state.c: the storage and the clock deadline_state.h declares for deadline.c,
 * deadline_waits.c and slow_capture.c: each thread's pointer to its deadline state (set
 * when a PHP thread attaches, NULL on every other thread) and the monotonic clock all
 * deadlines are measured on (also read by worker/src/deadline.rs). Kept apart so that
 * the three files depend on the header, and the header on nothing of theirs. */
#define _GNU_SOURCE
#define ZEND_ENABLE_STATIC_TSRMLS_CACHE 1 /* the thread's cache is php-sys's shim.c's */
#include "deadline_state.h"
#include <time.h>

__thread ferrophp_deadline *ferrophp_deadline_self;

int64_t ferrophp_deadline_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t) ts.tv_sec * 1000000000LL + ts.tv_nsec;
}
