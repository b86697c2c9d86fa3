/* request_scope.c: one request's life on its PHP thread, for both modes, in one place:
 * install the scope Rust prepared (SG(server_context), SG(request_info), the deadline),
 * run the engine's sequence around the script or the worker's handler, uninstall. The
 * PHP thread leaves C only at the edges of a request (worker.h draws both paths), so the
 * engine's globals are reached here through the thread's TSRM cache, never one FFI call
 * per field, and every bailout lands in a zend_try of this file, never in Rust frames.
 *
 * What a worker request does inside the worker script's long engine request (its
 * startup, shutdown and finish sequences) is worker_request.c's.
 */
#define ZEND_ENABLE_STATIC_TSRMLS_CACHE 1 /* the thread's cache is php-sys's shim.c's */
#include "worker.h"
#include "zend_exceptions.h"
#include "ext/spl/spl_exceptions.h"

/* Points the engine at the request and starts its deadline. */
static void ferrophp_request_install(ferrophp_request_scope *s) {
    SG(server_context) = s->server_context;
    sapi_request_info *info = &SG(request_info);
    info->argc = s->argc;
    info->argv = s->argv;
    info->path_translated = s->path_translated;
    info->request_method = s->request_method;
    info->query_string = s->query_string;
    info->request_uri = s->request_uri;
    info->content_type = s->content_type;
    info->content_length = s->content_length;
    info->cookie_data = NULL;
    SG(sapi_headers).http_response_code = 200;
    if (s->keep_working_directory) {
        SG(options) |= SAPI_OPTION_NO_CHDIR;
    } else {
        SG(options) &= ~SAPI_OPTION_NO_CHDIR;
    }
    /* PHP_AUTH_USER/PW/DIGEST: emalloc'd request_info fields, freed at deactivation. */
    php_handle_auth_data(s->authorization);
    EG(exit_status) = 0;
    if (s->deadline) {
        int64_t now = ferrophp_deadline_now();
        ferrophp_deadline_begin(now, s->request_timeout_ns ? now + s->request_timeout_ns : 0,
                                s->slowlog_ns ? now + s->slowlog_ns : 0);
    }
}

void ferrophp_request_uninstall(ferrophp_request_scope *s) {
    SG(server_context) = NULL;
    sapi_request_info *info = &SG(request_info);
    info->argc = 0;
    info->argv = NULL;
    info->path_translated = NULL;
    info->request_method = NULL;
    info->query_string = NULL;
    info->request_uri = NULL;
    info->content_type = NULL;
    info->cookie_data = NULL;
    if (s->deadline) {
        s->expired = ferrophp_deadline_expired();
        ferrophp_deadline_end();
        s->deadline = false;
    }
}

/* Whether the script (or handler) may start: not when the body broke off during start-up,
 * as if the abort that was held back then (the SAPI's on_read_post) had ended it; a
 * script that ignores user aborts runs, and sees connection_aborted(). */
static bool ferrophp_request_may_start(ferrophp_request_scope *s) {
    *s->script_started = true;
    return !*s->disconnected || PG(ignore_user_abort);
}

/* The CLI's STDIN/STDOUT/STDERR constants, as plain PHP: three fopen()s. */
static void ferrophp_define_std_streams(void) {
    ferrophp_try_eval_string(
        "define('STDIN', fopen('php://stdin', 'rb')); "
        "define('STDOUT', fopen('php://stdout', 'wb')); "
        "define('STDERR', fopen('php://stderr', 'wb'));",
        "ferrophp std streams");
}

/* Runs `path` as the request's primary script or, with `router`, as a php -S router
 * (*declined: it returned false). php_execute_script would report "Failed opening
 * required" for a missing file; callers expect the CLI's exit status 1 instead. */
static void ferrophp_request_execute(ferrophp_request_scope *s, const char *path, bool router,
                                     bool *declined) {
    if (!router && !s->script_exists) {
        s->not_found = true;
        s->exit_status = 1;
        return;
    }
    zend_file_handle handle;
    zend_stream_init_filename(&handle, path);
    if (router) {
        ferrophp_try_execute_router(&handle, declined);
    } else {
        bool succeeded;
        ferrophp_try_execute_script(&handle, &succeeded);
    }
    zend_destroy_file_handle(&handle);
    s->exit_status = EG(exit_status);
}

void ferrophp_request_run(ferrophp_request_scope *s) {
    ferrophp_request_install(s);
    s->exit_status = 0;
    s->not_found = false;
    if (php_request_startup() == FAILURE) {
        s->exit_status = 255;
        ferrophp_request_uninstall(s);
        return;
    }
    if (s->define_std_streams) {
        ferrophp_define_std_streams();
    }
    if (ferrophp_request_may_start(s)) {
        bool declined = !s->router;
        if (s->router) {
            ferrophp_request_execute(s, s->router, true, &declined);
            if (declined && strcmp(s->router, s->path_translated) == 0) {
                /* Before the shutdown flushes anything: the server answers instead. */
                ferrophp_request_router_declined();
                declined = false;
            }
        }
        /* No router, or one that returned false for another script: that script runs. */
        if (declined) {
            ferrophp_request_execute(s, s->path_translated, false, NULL);
        }
    }
    /* A save handler a bailout cut short must still close (its session lock). The
     * execution timer is hidden from shutdown_executor so the thread's timer survives
     * for the next request (disarmed by zend_unset_timeout as usual). php_request_shutdown
     * guards each of its steps with zend_try itself. */
    ferrophp_session_handler_unwind();
    int timer = ferrophp_execution_timer_keep();
    php_request_shutdown(NULL);
    ferrophp_execution_timer_restore(timer);
    ferrophp_request_uninstall(s);
}

/* The worker's handler, called inside zend_try; true when it bailed out or threw exit(). */
static bool ferrophp_worker_run_handler(ferrophp_request_scope *s, zend_fcall_info *fci,
                                        zend_fcall_info_cache *fcc) {
    if (!ferrophp_request_may_start(s)) {
        return false;
    }
    if (ferrophp_try_call(fci, fcc)) {
        return true;
    }
    zend_object *exception = EG(exception);
    if (!exception) {
        return false;
    }
    if (zend_is_unwind_exit(exception) || zend_is_graceful_exit(exception)) {
        return true;
    }
    /* Logged as "Uncaught ..."; the response becomes a 500 if nothing was sent. */
    ferrophp_report_exception();
    return false;
}

/* The handler ended the worker script: its request stays installed while the script's
 * engine request shuts down (shutdown functions and destructors print into it), and
 * Rust completes it after that. A crash (a non-zero status: exit(N), a fatal error)
 * before the handler printed anything is a 500 unless it chose a status; a clean exit()
 * keeps 200, as PHP gives. Output still in buffers counts as printed: PHP flushes them
 * after the shutdown functions, as always. */
static ZEND_NORETURN void ferrophp_worker_end_script(void) {
    int exit_status = EG(exit_status);
    if (exit_status != 0 && !ferrophp_worker_output_started()
        && SG(sapi_headers).http_response_code == 200) {
        SG(sapi_headers).http_response_code = 500;
    }
    ferrophp_worker_ending(exit_status);
    zend_bailout();
}

/* ferrophp_handle_request(callable $handler): bool (also frankenphp_handle_request; the
 * signature is worker/stubs/sapi.stub.php's): waits for the next request, serves it with
 * $handler inside the worker script's engine request, and returns true; false when the
 * script should end its loop. */
ZEND_FUNCTION(ferrophp_handle_request) {
    zend_fcall_info fci;
    zend_fcall_info_cache fcc;
    ZEND_PARSE_PARAMETERS_START(1, 1)
        Z_PARAM_FUNC(fci, fcc)
    ZEND_PARSE_PARAMETERS_END();

    ferrophp_request_scope *s = NULL;
    switch (ferrophp_worker_next(&s)) {
    case FERROPHP_WORKER_NOT_WORKER:
        /* FrankenPHP's exception class and message, under the name that was called. */
        ferrophp_throw_runtime_exception_for_call("called while not in worker mode");
        return;
    case FERROPHP_WORKER_BUSY:
        zend_throw_error(NULL,
                         "ferrophp_handle_request() cannot be called from inside a request handler");
        return;
    case FERROPHP_WORKER_END:
        /* The script runs on outside any request: no client's timer may end it. */
        ferrophp_worker_timer_stop();
        RETURN_FALSE;
    case FERROPHP_WORKER_SKIPPED:
        RETURN_TRUE;
    default:
        break;
    }

    void *boot_context = SG(server_context);
    /* Output the script buffered outside the handler goes to the boot context, before
     * the request replaces it. */
    bool ends_script = ferrophp_worker_output_release();
    ferrophp_request_install(s);
    ends_script = ends_script || ferrophp_worker_request_startup()
        || ferrophp_worker_run_handler(s, &fci, &fcc);
    if (ends_script) {
        ferrophp_worker_end_script();
    }
    bool bailed_out = false;
    zend_try {
        php_output_end_all();
    } zend_catch {
        bailed_out = true;
    } zend_end_try();
    bailed_out = ferrophp_worker_request_shutdown() || bailed_out;
    s->heap_bytes = zend_memory_usage(true);
    ferrophp_worker_respond();
    bailed_out = ferrophp_worker_request_finish() || bailed_out;
    ferrophp_request_uninstall(s);
    SG(server_context) = boot_context;
    /* s belongs to Rust's job from here on, and is gone after ferrophp_worker_done. */
    bool retired = ferrophp_worker_done();
    if (bailed_out || retired) {
        zend_bailout();
    }
    RETURN_TRUE;
}
