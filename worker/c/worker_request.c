/* worker_request.c: one worker request inside the long-lived worker script's engine
 * request. What php_request_startup and php_request_shutdown do per HTTP request, minus
 * the engine-level parts that would destroy the worker script's state (globals, classes,
 * statics): the output layer, sapi_activate/deactivate, the superglobals rebuilt, the
 * session, filter, libxml and pgsql request state, the time and memory limits.
 *
 * Why C: each sequence runs inside one zend_try (a bailout longjmps, and setjmp must
 * never return through Rust frames), and the steps use PHP's macros and module internals
 * (PG, SG, PS, the libxml globals reached through its module entry, module request
 * hooks) that bindgen cannot express. request_scope.c calls them in order, so the
 * worker hot path never bounces between Rust and C for a step.
 */
#define ZEND_ENABLE_STATIC_TSRMLS_CACHE 1 /* the thread's cache is php-sys's shim.c's */
#include "worker.h"
#include "php_variables.h"
#include <time.h>
#include "ext/session/php_session.h"
#if defined(HAVE_LIBXML) && defined(__has_include)
#if __has_include(<libxml/tree.h>)
#include "ext/libxml/php_libxml.h"
#include <libxml/globals.h>
#include <libxml/xmlerror.h>
#define FERROPHP_LIBXML_GLOBALS 1
#endif
#endif

/* A loaded module's RINIT (startup) or RSHUTDOWN, inside zend_try; false if absent. */
static bool ferrophp_module_request_hook(const char *name, size_t len, bool startup) {
    zend_module_entry *module = zend_hash_str_find_ptr(&module_registry, name, len);
    if (!module) {
        return false;
    }
    zend_try {
        if (startup && module->request_startup_func) {
            module->request_startup_func(module->type, module->module_number);
        } else if (!startup && module->request_shutdown_func) {
            module->request_shutdown_func(module->type, module->module_number);
        }
    } zend_end_try();
    return true;
}

static void ferrophp_delete_session_global(void) {
    zend_hash_str_del(&EG(symbol_table), "_SESSION", sizeof("_SESSION") - 1);
}

/* A user session save handler kept across worker requests (see
 * ferrophp_worker_request_shutdown). Per thread: each worker thread has its own. */
ZEND_TLS zval kept_session_handler[PS_NUM_APIS];
ZEND_TLS zend_string *kept_session_handler_class;

static void ferrophp_session_handler_keep(void) {
    for (int i = 0; i < PS_NUM_APIS; i++) {
        ZVAL_COPY(&kept_session_handler[i], &PS(mod_user_names).names[i]);
    }
    kept_session_handler_class =
        PS(mod_user_class_name) ? zend_string_copy(PS(mod_user_class_name)) : NULL;
}

static void ferrophp_session_handler_restore(void) {
    for (int i = 0; i < PS_NUM_APIS; i++) {
        if (Z_ISUNDEF(PS(mod_user_names).names[i])) {
            ZVAL_COPY_VALUE(&PS(mod_user_names).names[i], &kept_session_handler[i]);
        } else {
            zval_ptr_dtor(&kept_session_handler[i]);
        }
        ZVAL_UNDEF(&kept_session_handler[i]);
    }
    if (kept_session_handler_class) {
        if (!PS(mod_user_class_name)) {
            PS(mod_user_class_name) = kept_session_handler_class;
        } else {
            zend_string_release(kept_session_handler_class);
        }
        kept_session_handler_class = NULL;
    }
}

/* The max_execution_time timer of a worker thread. Arming and disarming it are one
 * timer_settime() syscall each, which perf put at ~4% of a hello-world worker request;
 * so a worker request leaves its timer running, and the next request that starts soon
 * after (within 1% of the limit: 300 ms of 30 s) runs on it instead of re-arming: it gets
 * at most 1% less than max_execution_time. What keeps that safe:
 *  - A timer that fires between requests only sets EG(timed_out) and EG(vm_interrupt)
 *    (PHP's ZTS handler has no hard timeout); the next request re-arms, which clears them.
 *  - A request that ends with less than a second (or 10%) of its limit left disarms, so
 *    the worker script's own code between requests never meets its client's timeout.
 *  - ferrophp_worker_timer_stop disarms before the worker script runs on outside a
 *    request (its loop ends: restart, stop); ferrophp_worker_timer_forget at each boot.
 *  - Anything else that set the timer (set_time_limit(), ini_set) changed
 *    EG(timeout_seconds) or armed it later than recorded: a different value re-arms; the
 *    same value armed later only gives the request more time. */
ZEND_TLS zend_long timer_seconds = -1; /* what our arming used; -1: not ours */
ZEND_TLS struct timespec timer_armed_at;

static long ferrophp_ns_since(const struct timespec *then, const struct timespec *now) {
    return (long) (now->tv_sec - then->tv_sec) * 1000000000L + (now->tv_nsec - then->tv_nsec);
}

static void ferrophp_request_timer_arm(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
    if (timer_seconds == EG(timeout_seconds) && !zend_atomic_bool_load_ex(&EG(timed_out))) {
        long reuse_ns = (long) timer_seconds * 10000000L; /* 1% of the limit */
        long since = ferrophp_ns_since(&timer_armed_at, &now);
        if (timer_seconds == 0 || (since >= 0 && since < reuse_ns)) {
            return;
        }
    }
    zend_set_timeout(EG(timeout_seconds), 0);
    timer_seconds = EG(timeout_seconds);
    timer_armed_at = now;
}

/* After a request: disarm only when little of the limit is left (see above). */
static void ferrophp_request_timer_settle(void) {
    if (timer_seconds <= 0) {
        return;
    }
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
    long limit_ns = (long) timer_seconds * 1000000000L;
    long margin_ns = limit_ns / 10 < 1000000000L ? limit_ns / 10 : 1000000000L;
    if (ferrophp_ns_since(&timer_armed_at, &now) > limit_ns - margin_ns) {
        ferrophp_worker_timer_stop();
    }
}

void ferrophp_worker_timer_stop(void) {
    zend_unset_timeout(); /* also clears EG(timed_out) */
    PG(connection_status) &= ~PHP_CONNECTION_TIMEOUT;
    timer_seconds = -1;
}

void ferrophp_worker_timer_forget(void) {
    timer_seconds = -1;
}

/* ferrophp_request_heartbeat(): the max_execution_time timer runs `seconds` from now if
 * it had less left (classic and worker requests alike). EG(timeout_seconds), the limit
 * the error names and the next worker request arms, stays; the worker bookkeeping above
 * learns of the new arming, so the next request re-arms and the request's end disarms
 * as for any other. Nothing without a limit (max_execution_time=0). */
void ferrophp_execution_timer_extend(zend_long seconds) {
#ifdef ZEND_MAX_EXECUTION_TIMERS
    if (EG(timeout_seconds) <= 0 || EG(pid) == 0) {
        return;
    }
    struct itimerspec left;
    if (timer_gettime(EG(max_execution_timer_timer), &left) == 0 && left.it_value.tv_sec >= seconds) {
        return;
    }
    zend_long limit = EG(timeout_seconds);
    zend_set_timeout(seconds, 0);
    EG(timeout_seconds) = limit;
    /* zend_set_timeout cleared EG(timed_out): if the timer fired just before, PHP must
     * still end the request. */
    if (ferrophp_deadline_expired() == FERROPHP_EXPIRED_TIME_LIMIT) {
        zend_atomic_bool_store_ex(&EG(timed_out), true);
    }
    timer_seconds = seconds;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &timer_armed_at);
#else
    (void) seconds;
#endif
}

bool ferrophp_worker_output_release(void) {
    volatile bool bailed_out = false;
    zend_try {
        php_output_end_all();
        php_output_deactivate();
    } zend_catch {
        bailed_out = true;
    } zend_end_try();
    /* What the boot request's startup (X-Powered-By) and that deactivation (the default
     * Content-Type) put in the header list: sapi_activate would re-init it over them. */
    zend_llist_destroy(&SG(sapi_headers).headers);
    if (SG(sapi_headers).mimetype) {
        efree(SG(sapi_headers).mimetype);
        SG(sapi_headers).mimetype = NULL;
    }
    return bailed_out;
}

/* What the libxml extension resets between engine requests, for a worker request inside
 * one long engine request: the error list and libxml_use_internal_errors() (the
 * structured error handler), the external entity loader callback, the stream context and
 * libxml_disable_entity_loader(). The order is PHP's: RSHUTDOWN, post-deactivate, RINIT.
 * The stream context is released first: post-deactivate only forgets it, because at the
 * end of an engine request the resource list frees it.
 *
 * Most requests never touch libxml, and the full reset (seven calls into libxml, each
 * finding its per-thread state) was 5% of a worker hello request's instructions: it is
 * skipped when every piece of state it resets is as the last full reset left it. */
#ifdef FERROPHP_LIBXML_GLOBALS
/* libxml's per-thread handlers right after this thread's last full reset. */
typedef struct {
    bool known;
    xmlGenericErrorFunc generic_error;
    void *generic_error_context;
    xmlParserInputBufferCreateFilenameFunc input_buffer;
    xmlOutputBufferCreateFilenameFunc output_buffer;
} ferrophp_libxml_handlers;

static __thread ferrophp_libxml_handlers ferrophp_libxml_after_reset;

static void ferrophp_libxml_record_handlers(void) {
    ferrophp_libxml_after_reset.generic_error = xmlGenericError;
    ferrophp_libxml_after_reset.generic_error_context = xmlGenericErrorContext;
    ferrophp_libxml_after_reset.input_buffer = xmlParserInputBufferCreateFilenameValue;
    ferrophp_libxml_after_reset.output_buffer = xmlOutputBufferCreateFilenameValue;
    ferrophp_libxml_after_reset.known = true;
}

/* Whether a reset would change nothing: PHP's side (the globals RSHUTDOWN and
 * post-deactivate clear, the flag RINIT clears) and libxml's (no last error, no
 * structured handler, the generic handler and the I/O callbacks RINIT installs). */
static bool ferrophp_libxml_untouched(const zend_libxml_globals *globals) {
    const ferrophp_libxml_handlers *after = &ferrophp_libxml_after_reset;
    return after->known && Z_ISUNDEF(globals->stream_context) && globals->error_buffer.s == NULL &&
           globals->error_list == NULL && Z_TYPE(globals->entity_loader.callback) == IS_NULL &&
           globals->entity_loader.fci.size == 0 && !globals->entity_loader_disabled &&
           xmlGetLastError() == NULL && xmlStructuredError == NULL &&
           xmlGenericError == after->generic_error &&
           xmlGenericErrorContext == after->generic_error_context &&
           xmlParserInputBufferCreateFilenameValue == after->input_buffer &&
           xmlOutputBufferCreateFilenameValue == after->output_buffer;
}
#endif

/* The libxml module, found once per thread (modules do not change after start-up). */
static zend_module_entry *ferrophp_libxml_module(void) {
    static __thread zend_module_entry *module;
    static __thread bool looked;
    if (!looked) {
        module = zend_hash_str_find_ptr(&module_registry, "libxml", sizeof("libxml") - 1);
        looked = true;
    }
    return module;
}

static void ferrophp_libxml_reset(void) {
    zend_module_entry *module = ferrophp_libxml_module();
    if (!module) {
        return;
    }
#ifdef FERROPHP_LIBXML_GLOBALS
    /* libphp exports no libxml_globals_id: reach the globals through the module entry. */
#ifdef ZTS
    zend_libxml_globals *globals = TSRMG_BULK_STATIC(*module->globals_id_ptr, zend_libxml_globals *);
#else
    zend_libxml_globals *globals = module->globals_ptr;
#endif
    if (ferrophp_libxml_untouched(globals)) {
        return;
    }
    if (!Z_ISUNDEF(globals->stream_context)) {
        zval_ptr_dtor(&globals->stream_context);
        ZVAL_UNDEF(&globals->stream_context);
    }
#endif
    if (module->request_shutdown_func) {
        module->request_shutdown_func(module->type, module->module_number);
    }
    if (module->post_deactivate_func) {
        module->post_deactivate_func();
    }
    if (module->request_startup_func) {
        module->request_startup_func(module->type, module->module_number);
    }
#ifdef FERROPHP_LIBXML_GLOBALS
    ferrophp_libxml_record_handlers();
#endif
}

bool ferrophp_worker_request_startup(void) {
    volatile bool bailed_out = false;
    zend_try {
        /* The request's own output layer (the script's ended in
         * ferrophp_worker_output_release). */
        php_output_activate();
        PG(header_is_being_sent) = 0;
        PG(connection_status) = PHP_CONNECTION_NORMAL;
        SG(sapi_headers).http_response_code = 200;
        sapi_activate();
        if (PG(expose_php)) {
            sapi_add_header(SAPI_PHP_VERSION_HEADER, sizeof(SAPI_PHP_VERSION_HEADER) - 1, 1);
        }
        if (PG(output_handler) && PG(output_handler)[0]) {
            zval handler;
            ZVAL_STRING(&handler, PG(output_handler));
            php_output_start_user(&handler, 0, PHP_OUTPUT_HANDLER_STDFLAGS);
            zval_ptr_dtor(&handler);
        } else if (PG(output_buffering)) {
            php_output_start_user(NULL, PG(output_buffering) > 1 ? PG(output_buffering) : 0,
                                  PHP_OUTPUT_HANDLER_STDFLAGS);
        } else if (PG(implicit_flush)) {
            php_output_set_implicit_flush(1);
        }
        /* $_ENV is the worker script's, not a request's (as in FrankenPHP): what the script
         * wrote into it at boot (Symfony's Dotenv does) must survive every request. But
         * php_hash_environment() re-arms its JIT, and the first file compiled during the
         * request that names $_ENV would re-create it from the environment (with
         * auto_globals_jit=0, php_hash_environment() itself re-creates it). So the
         * existing one is set aside and put back, disarmed. */
        zval kept_env, kept_env_global;
        ZVAL_UNDEF(&kept_env);
        zval *env = zend_hash_find(&EG(symbol_table), ZSTR_KNOWN(ZEND_STR_AUTOGLOBAL_ENV));
        if (env) {
            ZVAL_COPY(&kept_env, env);
        }
        ZVAL_COPY_VALUE(&kept_env_global, &PG(http_globals)[TRACK_VARS_ENV]);
        ZVAL_UNDEF(&PG(http_globals)[TRACK_VARS_ENV]);
        /* php_hash_environment() zeroes PG(http_globals) without releasing it (it expects
         * php_request_shutdown to have done so): drop the previous request's arrays, or
         * each request would leak them. The symbol table keeps its own references until
         * the new arrays replace them. */
        for (int i = 0; i < NUM_TRACK_VARS; i++) {
            zval_ptr_dtor(&PG(http_globals)[i]);
            ZVAL_UNDEF(&PG(http_globals)[i]);
        }
        /* $_GET, $_POST, $_COOKIE, $_FILES now; the JIT ones ($_SERVER, $_REQUEST) are only
         * armed, and the handler is already compiled, so build them explicitly. */
        php_hash_environment();
        if (!Z_ISUNDEF(kept_env)) {
            zval_ptr_dtor(&PG(http_globals)[TRACK_VARS_ENV]);
            ZVAL_COPY_VALUE(&PG(http_globals)[TRACK_VARS_ENV], &kept_env_global);
            zend_hash_update(&EG(symbol_table), ZSTR_KNOWN(ZEND_STR_AUTOGLOBAL_ENV), &kept_env);
            zend_auto_global *env_global =
                zend_hash_find_ptr(CG(auto_globals), ZSTR_KNOWN(ZEND_STR_AUTOGLOBAL_ENV));
            if (env_global) {
                env_global->armed = 0;
            }
        } else {
            /* Never created (or unset by the script): PHP's own JIT makes it when used. */
            zval_ptr_dtor(&kept_env_global);
        }
        zend_is_auto_global_str("_SERVER", sizeof("_SERVER") - 1);
        zend_is_auto_global_str("_REQUEST", sizeof("_REQUEST") - 1);
        /* Nor its libxml errors and entity loader (nor those the boot code left). */
        ferrophp_libxml_reset();
        /* A new client never sees the previous one's session. */
        ferrophp_delete_session_global();
        ferrophp_module_request_hook("session", sizeof("session") - 1, true);
        ferrophp_request_timer_arm();
        zend_memory_reset_peak_usage();
    } zend_catch {
        bailed_out = true;
    } zend_end_try();
    return bailed_out;
}

bool ferrophp_worker_request_shutdown(void) {
    volatile bool bailed_out = false;
    zend_try {
        sapi_send_headers();
    } zend_catch {
        bailed_out = true;
    } zend_end_try();
    /* Writes and closes the session, then forgets it; resets filter_input() state. The
     * save handler the worker script registered (session_set_save_handler before its
     * loop, as Symfony and Laravel apps do at boot) is app state, not request state:
     * the session's RSHUTDOWN releases it, so it is handed back right after. */
    ferrophp_session_handler_keep();
    ferrophp_deadline_session_check();
    ferrophp_module_request_hook("session", sizeof("session") - 1, false);
    ferrophp_session_handler_restore();
    ferrophp_delete_session_global();
    ferrophp_module_request_hook("filter", sizeof("filter") - 1, false);
    /* pgsql's request end rolls back a transaction left open on a persistent link
     * (pg_pconnect), as at the end of every classic request; without it the next client
     * of this thread would run inside that transaction. It also drops the default link
     * and destroys the OID caches, which its request start re-creates. */
    if (ferrophp_module_request_hook("pgsql", sizeof("pgsql") - 1, false)) {
        ferrophp_module_request_hook("pgsql", sizeof("pgsql") - 1, true);
    }
    zend_try {
        /* Frees this request's libxml error list now rather than at the next request. */
        ferrophp_libxml_reset();
        php_output_deactivate();
        ferrophp_request_timer_settle();
    } zend_catch {
        bailed_out = true;
    } zend_end_try();
    return bailed_out;
}

bool ferrophp_worker_output_started(void) {
    if (SG(headers_sent)) {
        return true;
    }
    /* OG(handlers) holds pointers to the handlers, outermost first. */
    php_output_handler **handlers = (php_output_handler **) zend_stack_base(&OG(handlers));
    int count = zend_stack_count(&OG(handlers));
    for (int i = 0; i < count; i++) {
        if (handlers[i]->buffer.used) {
            return true;
        }
    }
    return false;
}

bool ferrophp_worker_request_finish(void) {
    volatile bool bailed_out = false;
    zend_try {
        /* The body stream behind php://input is a request resource that only the end of
         * the engine request would free; sapi_deactivate merely forgets it. */
        if (SG(request_info).request_body) {
            php_stream_close(SG(request_info).request_body);
            SG(request_info).request_body = NULL;
        }
        /* Drains unread body, frees request_info fields, deletes uploaded temp files. */
        sapi_deactivate();
        /* Output between requests belongs to the worker script again. */
        php_output_activate();
        zend_set_memory_limit(PG(memory_limit));
    } zend_catch {
        bailed_out = true;
    } zend_end_try();
    return bailed_out;
}
