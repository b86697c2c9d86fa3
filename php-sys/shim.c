/* See shim.h: one small function per thing bindgen cannot express, and no logic. */
#define ZEND_ENABLE_STATIC_TSRMLS_CACHE 1
#include "shim.h"
#include "zend_exceptions.h"
#include "php_variables.h"

ZEND_TSRMLS_CACHE_DEFINE()

void ferrophp_thread_started(void) { ZEND_TSRMLS_CACHE_UPDATE(); }

sapi_globals_struct *ferrophp_sapi_globals(void) {
    return TSRMG_FAST_BULK_STATIC(sapi_globals_offset, sapi_globals_struct *);
}

zend_executor_globals *ferrophp_executor_globals(void) {
    return TSRMG_FAST_BULK_STATIC(executor_globals_offset, zend_executor_globals *);
}

php_core_globals *ferrophp_core_globals(void) {
    return TSRMG_FAST_BULK_STATIC(core_globals_offset, php_core_globals *);
}

bool ferrophp_try_execute_script(zend_file_handle *file, bool *succeeded) {
    volatile bool bailed_out = false;
    *succeeded = false;
    zend_try {
        *succeeded = php_execute_script(file);
    } zend_catch {
        bailed_out = true;
    } zend_end_try();
    return bailed_out;
}

bool ferrophp_try_eval_string(const char *code, const char *name) {
    volatile bool bailed_out = false;
    zend_try {
        zend_eval_string(code, NULL, name);
    } zend_catch {
        bailed_out = true;
    } zend_end_try();
    return bailed_out;
}

zend_string *ferrophp_string_init(const char *str, size_t len, bool persistent) {
    return zend_string_init(str, len, persistent);
}

void ferrophp_string_release(zend_string *s) { zend_string_release(s); }

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_ferrophp_finish_request, 0, 0, _IS_BOOL, 0)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_ferrophp_request_headers, 0, 0, IS_ARRAY, 0)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_ferrophp_headers_send, 0, 0, IS_LONG, 0)
    ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, status, IS_LONG, 0, "200")
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_ferrophp_handle_request, 0, 1, _IS_BOOL, 0)
    ZEND_ARG_TYPE_INFO(0, handler, IS_CALLABLE, 0)
ZEND_END_ARG_INFO()

const zend_function_entry ferrophp_sapi_functions[] = {
    ZEND_RAW_FENTRY("ferrophp_handle_request", ferrophp_fn_handle_request, arginfo_ferrophp_handle_request, 0)
    ZEND_RAW_FENTRY("frankenphp_handle_request", ferrophp_fn_handle_request, arginfo_ferrophp_handle_request, 0)
    ZEND_RAW_FENTRY("frankenphp_response_headers", ferrophp_fn_response_headers, arginfo_ferrophp_request_headers, 0)
    ZEND_RAW_FENTRY("ferrophp_response_headers", ferrophp_fn_response_headers, arginfo_ferrophp_request_headers, 0)
    ZEND_RAW_FENTRY("fastcgi_finish_request", ferrophp_fn_finish_request, arginfo_ferrophp_finish_request, 0)
    ZEND_RAW_FENTRY("ferrophp_finish_request", ferrophp_fn_finish_request, arginfo_ferrophp_finish_request, 0)
    ZEND_RAW_FENTRY("frankenphp_finish_request", ferrophp_fn_finish_request, arginfo_ferrophp_finish_request, 0)
    ZEND_RAW_FENTRY("getallheaders", ferrophp_fn_request_headers, arginfo_ferrophp_request_headers, 0)
    ZEND_RAW_FENTRY("apache_request_headers", ferrophp_fn_request_headers, arginfo_ferrophp_request_headers, 0)
    ZEND_RAW_FENTRY("frankenphp_request_headers", ferrophp_fn_request_headers, arginfo_ferrophp_request_headers, 0)
    ZEND_RAW_FENTRY("headers_send", ferrophp_fn_headers_send, arginfo_ferrophp_headers_send, 0)
    ZEND_FE_END
};

void ferrophp_ini_default(HashTable *configuration_hash, const char *name, size_t name_len,
                          const char *value, size_t value_len) {
    zval tmp;
    ZVAL_NEW_STR(&tmp, zend_string_init(value, value_len, 1));
    zend_hash_str_update(configuration_hash, name, name_len, &tmp);
}

void ferrophp_zval_bool(zval *zv, bool value) { ZVAL_BOOL(zv, value); }
void ferrophp_zval_long(zval *zv, zend_long value) { ZVAL_LONG(zv, value); }
void ferrophp_zval_stringl(zval *zv, const char *str, size_t len) { ZVAL_STRINGL(zv, str, len); }
void ferrophp_zval_array(zval *zv, uint32_t size) { array_init_size(zv, size); }
uint32_t ferrophp_num_args(zend_execute_data *execute_data) { return ZEND_NUM_ARGS(); }

zend_string *ferrophp_permanent_string(const char *str, size_t len) {
    zend_string *s = zend_string_init(str, len, 1);
    zend_string_hash_val(s);
    GC_SET_REFCOUNT(s, 1);
    GC_TYPE_INFO(s) = GC_STRING | ((IS_STR_INTERNED | IS_STR_PERSISTENT | IS_STR_PERMANENT) << GC_FLAGS_SHIFT);
    return s;
}

void ferrophp_hash_update_stringl(HashTable *ht, zend_string *key, const char *val, size_t len) {
    zval zv;
    ZVAL_STRINGL_FAST(&zv, val, len);
    zend_hash_update(ht, key, &zv);
}

HashTable *ferrophp_array(zval *zv) { return Z_ARRVAL_P(zv); }

unsigned int ferrophp_input_filter(int arg, const char *var, char **val, size_t len, size_t *new_len) {
    return sapi_module.input_filter ? sapi_module.input_filter(arg, var, val, len, new_len) : 1;
}

static zend_module_entry ferrophp_module = {
    STANDARD_MODULE_HEADER,
    "ferrophp",
    NULL,
    ferrophp_module_minit,
    ferrophp_module_mshutdown,
    ferrophp_module_rinit,
    ferrophp_module_rshutdown,
    ferrophp_module_minfo,
    "0.1.0",
    STANDARD_MODULE_PROPERTIES
};

zend_module_entry *ferrophp_module_entry(void) { return &ferrophp_module; }

bool ferrophp_try_call(zend_fcall_info *fci, zend_fcall_info_cache *fcc) {
    volatile bool bailed_out = false;
    zval retval;
    ZVAL_UNDEF(&retval);
    fci->retval = &retval;
    zend_try {
        if (zend_call_function(fci, fcc) == SUCCESS) {
            zval_ptr_dtor(&retval);
        }
    } zend_catch {
        bailed_out = true;
    } zend_end_try();
    return bailed_out;
}

bool ferrophp_try_void(void (*fn)(void)) {
    volatile bool bailed_out = false;
    zend_try {
        fn();
    } zend_catch {
        bailed_out = true;
    } zend_end_try();
    return bailed_out;
}

ZEND_NORETURN void ferrophp_bailout(void) { zend_bailout(); }

bool ferrophp_module_request_hook(const char *name, size_t len, bool startup) {
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

void ferrophp_zval_destroy(zval *zv) {
    zval_ptr_dtor(zv);
    ZVAL_UNDEF(zv);
}

void ferrophp_report_exception(void) {
    if (EG(exception)) {
        zend_try {
            zend_exception_error(EG(exception), E_ERROR);
        } zend_end_try();
    }
}

static void ferrophp_delete_session_global(void) {
    zend_hash_str_del(&EG(symbol_table), "_SESSION", sizeof("_SESSION") - 1);
}

bool ferrophp_worker_request_startup(void) {
    volatile bool bailed_out = false;
    zend_try {
        /* The boot script's output layer gives way to the request's. */
        php_output_end_all();
        php_output_deactivate();
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
        zend_is_auto_global_str("_SERVER", sizeof("_SERVER") - 1);
        zend_is_auto_global_str("_REQUEST", sizeof("_REQUEST") - 1);
        /* A new client never sees the previous one's session. */
        ferrophp_delete_session_global();
        ferrophp_module_request_hook("session", sizeof("session") - 1, true);
        zend_set_timeout(EG(timeout_seconds), 0);
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
    /* Writes and closes the session, then forgets it; resets filter_input() state. */
    ferrophp_module_request_hook("session", sizeof("session") - 1, false);
    ferrophp_delete_session_global();
    ferrophp_module_request_hook("filter", sizeof("filter") - 1, false);
    zend_try {
        php_output_deactivate();
        zend_unset_timeout();
    } zend_catch {
        bailed_out = true;
    } zend_end_try();
    return bailed_out;
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
