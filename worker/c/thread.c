/* thread.c: what a PHP thread that serves many requests must keep or clean up, where PHP
 * assumes each thread serves one request and then goes away: the execution timer kept
 * across requests, a session save handler cut short by a bailout, the realpath cache
 * entries of uploaded files (the SAPI's deactivate hook), and the thread's persistent
 * resources closed before ts_free_thread.
 *
 * Why C: each step reads or writes engine globals through PHP's macros (EG, SG), iterates
 * PHP hash tables with ZEND_HASH_* macros, or depends on ZEND_MAX_EXECUTION_TIMERS, a
 * build-time define of the PHP build; bindgen can express none of these.
 */
#define ZEND_ENABLE_STATIC_TSRMLS_CACHE 1 /* the thread's cache is php-sys's shim.c's */
#include "worker.h"
#include "ext/session/php_session.h"
#ifdef ZEND_MAX_EXECUTION_TIMERS
#include <time.h>
#endif

/* The execution timer, kept for the thread's life. PHP 8.2 creates a POSIX timer in every
 * init_executor and deletes it in every shutdown_executor (timer_create, timer_delete,
 * getpid twice, gettid, sigaction: six syscalls per request), although the timer is the
 * same thread's each time. shutdown only deletes it when EG(pid) is this process's pid and
 * init only creates one when it is not, so hiding the pid across php_request_shutdown
 * keeps the timer (disarmed by zend_unset_timeout as usual) for the next request. */

int ferrophp_execution_timer_keep(void) {
#ifdef ZEND_MAX_EXECUTION_TIMERS
    pid_t pid = EG(pid);
    if (pid > 0) {
        /* Still non-zero, so zend_unset_timeout keeps disarming it; never getpid(). */
        EG(pid) = -pid;
    }
    return pid;
#else
    return 0;
#endif
}

void ferrophp_execution_timer_restore(int pid) {
#ifdef ZEND_MAX_EXECUTION_TIMERS
    if (pid > 0 && EG(pid) == -pid) {
        EG(pid) = pid;
    }
#endif
}

void ferrophp_execution_timer_release(void) {
#ifdef ZEND_MAX_EXECUTION_TIMERS
    if (EG(pid) == getpid()) {
        timer_delete(EG(max_execution_timer_timer));
        EG(pid) = 0;
    }
#endif
}

static int ferrophp_remove_entry(zval *entry) {
    (void) entry;
    return ZEND_HASH_APPLY_REMOVE;
}

/* Closes this thread's persistent resources (pg_pconnect links, mysqli p: links,
 * persistent PDO and stream handles) while every module's globals are still alive.
 * ts_free_thread frees each module's globals right after its destructor, in reverse
 * order, and only then destroys EG(persistent_list) (executor globals come first): a
 * destructor that touches its module's globals, as pgsql's _close_pgsql_plink does
 * (PGG(num_persistent)--), would write into freed memory. The table itself stays for
 * executor_globals_dtor, empty. */
void ferrophp_persistent_list_release(void) {
    zend_hash_reverse_apply(&EG(persistent_list), ferrophp_remove_entry);
}

/* An uploaded file's temporary name is never seen again once its request ends, but any
 * plain-file call on it (filesize, is_uploaded_file, fopen: under ZTS each goes through
 * the virtual cwd) left an entry in this thread's realpath cache. PHP drops an expired
 * entry only when a later lookup walks the same bucket, so a long-lived PHP thread keeps
 * about one malloc'd entry per upload, up to realpath_cache_size per thread: the slow
 * resident-memory growth of the soak (issue 12). The key is the temporary name itself,
 * which PHP builds from the real path of upload_tmp_dir, so it is the path the cache
 * holds for a script that uses $_FILES[..]['tmp_name']. */
int ferrophp_sapi_deactivate(void) {
    if (SG(rfc1867_uploaded_files)) {
        zend_string *name;
        ZEND_HASH_MAP_FOREACH_STR_KEY(SG(rfc1867_uploaded_files), name) {
            if (name) {
                realpath_cache_del(ZSTR_VAL(name), ZSTR_LEN(name));
            }
        } ZEND_HASH_FOREACH_END();
    }
    return SUCCESS;
}

/* A bailout (the time limit, a fatal error) inside a user session save handler leaves
 * PS(in_save_handler) set, and the session's request shutdown then refuses the first
 * handler call as recursive: when that call is close() (the bailout came before the
 * session data existed, e.g. in validateId() under session.use_strict_mode, so there is
 * no write() to take the refusal), the handler never closes, and a files handler behind
 * it keeps its descriptor and its flock() on the session file for the thread's life:
 * every later request for that session hangs (FrankenPHP issue #2368). php-fpm never
 * sees this because it kills a timed-out worker process. No handler runs at request
 * shutdown's start, so the flag is only ever stale there.
 *
 * The handler was cut short in the middle of its work (a read that may not hold the
 * lock yet, a write half done): what $_SESSION holds must not be written back. So the
 * handler is closed here, releasing what it holds, and the session is left inactive for
 * request shutdown, which then neither writes nor closes it again. */
void ferrophp_session_handler_unwind(void) {
    if (!PS(in_save_handler)) {
        return;
    }
    PS(in_save_handler) = 0;
    if (PS(session_status) == php_session_active && PS(mod)
        && (PS(mod_data) || PS(mod_user_implemented))) {
        zend_try {
            PS(mod)->s_close(&PS(mod_data));
        } zend_end_try();
    }
    PS(session_status) = php_session_none;
}
