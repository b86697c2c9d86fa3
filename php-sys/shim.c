/* See shim.h: one small function per thing bindgen cannot express, and no logic, except
 * the two hot paths at the end of this file. */
#define ZEND_ENABLE_STATIC_TSRMLS_CACHE 1
#include "shim.h"
#include "zend_exceptions.h"
#include "php_variables.h"
#include "ext/filter/php_filter.h"
#include "ext/standard/url.h"
#include "ext/session/php_session.h"
#if defined(HAVE_LIBXML) && defined(__has_include)
#if __has_include(<libxml/tree.h>)
#include "ext/libxml/php_libxml.h"
#define FERROPHP_LIBXML_GLOBALS 1
#endif
#endif
#include "ext/spl/spl_exceptions.h"
#include <ctype.h>
#include <dlfcn.h>
#include <stdatomic.h>
#ifdef ZEND_MAX_EXECUTION_TIMERS
#include <time.h>
#endif

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

/* As sapi/cli/php_cli_server.c runs a router: zend_execute_scripts for its return value
 * (php_execute_script gives none), with the timer restart php_execute_script does. */
bool ferrophp_try_execute_router(zend_file_handle *file, bool *declined) {
    volatile bool bailed_out = false;
    *declined = false;
    file->primary_script = 1;
    zend_try {
        zval retval;
        if (PG(max_input_time) != -1) {
            zend_set_timeout(INI_INT("max_execution_time"), 0);
        }
        ZVAL_UNDEF(&retval);
        CG(skip_shebang) = true;
        if (zend_execute_scripts(ZEND_REQUIRE, &retval, 1, file) == SUCCESS
            && Z_TYPE(retval) != IS_UNDEF) {
            *declined = Z_TYPE(retval) == IS_FALSE;
            zval_ptr_dtor(&retval);
        }
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

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_ferrophp_log, 0, 1, IS_VOID, 0)
    ZEND_ARG_TYPE_INFO(0, message, IS_STRING, 0)
    ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, level, IS_LONG, 0, "0")
    ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, context, IS_ARRAY, 0, "[]")
ZEND_END_ARG_INFO()

const zend_function_entry ferrophp_sapi_functions[] = {
    ZEND_RAW_FENTRY("ferrophp_handle_request", ferrophp_fn_handle_request, arginfo_ferrophp_handle_request, 0)
    ZEND_RAW_FENTRY("frankenphp_handle_request", ferrophp_fn_handle_request, arginfo_ferrophp_handle_request, 0)
    ZEND_RAW_FENTRY("frankenphp_response_headers", ferrophp_fn_response_headers, arginfo_ferrophp_request_headers, 0)
    ZEND_RAW_FENTRY("ferrophp_response_headers", ferrophp_fn_response_headers, arginfo_ferrophp_request_headers, 0)
    ZEND_RAW_FENTRY("apache_response_headers", ferrophp_fn_response_headers, arginfo_ferrophp_request_headers, 0)
    ZEND_RAW_FENTRY("fastcgi_finish_request", ferrophp_fn_finish_request, arginfo_ferrophp_finish_request, 0)
    ZEND_RAW_FENTRY("ferrophp_finish_request", ferrophp_fn_finish_request, arginfo_ferrophp_finish_request, 0)
    ZEND_RAW_FENTRY("frankenphp_finish_request", ferrophp_fn_finish_request, arginfo_ferrophp_finish_request, 0)
    ZEND_RAW_FENTRY("getallheaders", ferrophp_fn_request_headers, arginfo_ferrophp_request_headers, 0)
    ZEND_RAW_FENTRY("apache_request_headers", ferrophp_fn_request_headers, arginfo_ferrophp_request_headers, 0)
    ZEND_RAW_FENTRY("frankenphp_request_headers", ferrophp_fn_request_headers, arginfo_ferrophp_request_headers, 0)
    ZEND_RAW_FENTRY("headers_send", ferrophp_fn_headers_send, arginfo_ferrophp_headers_send, 0)
    ZEND_RAW_FENTRY("frankenphp_log", ferrophp_fn_log, arginfo_ferrophp_log, 0)
    ZEND_FE_END
};

void ferrophp_ini_default(HashTable *configuration_hash, const char *name, size_t name_len,
                          const char *value, size_t value_len) {
    zval tmp;
    ZVAL_NEW_STR(&tmp, zend_string_init(value, value_len, 1));
    zend_hash_str_update(configuration_hash, name, name_len, &tmp);
}

zif_handler ferrophp_replace_function_handler(const char *name, size_t len, zif_handler handler) {
    zend_function *fn = zend_hash_str_find_ptr(CG(function_table), name, len);
    if (!fn || fn->type != ZEND_INTERNAL_FUNCTION) {
        return NULL;
    }
    zif_handler old = fn->internal_function.handler;
    fn->internal_function.handler = handler;
    return old;
}

/* zend_post_startup_cb: after every module and zend_extension (OPcache) started, before
 * ZTS copies the function table each thread starts from. Chains whatever was there. */
static zend_result (*ferrophp_prev_post_startup_cb)(void);
static void (*ferrophp_post_startup_fn)(void);

static zend_result ferrophp_post_startup(void) {
    if (ferrophp_prev_post_startup_cb) {
        zend_result (*cb)(void) = ferrophp_prev_post_startup_cb;
        ferrophp_prev_post_startup_cb = NULL;
        if (cb() != SUCCESS) {
            return FAILURE;
        }
    }
    if (ferrophp_post_startup_fn) {
        ferrophp_post_startup_fn();
    }
    return SUCCESS;
}

void ferrophp_on_post_startup(void (*fn)(void)) {
    ferrophp_post_startup_fn = fn;
    ferrophp_prev_post_startup_cb = zend_post_startup_cb;
    zend_post_startup_cb = ferrophp_post_startup;
}

void ferrophp_hash_foreach(HashTable *ht,
                           void (*cb)(void *ctx, zend_string *key, zend_ulong h, zval *val),
                           void *ctx) {
    zend_string *key;
    zend_ulong h;
    zval *val;
    ZEND_HASH_FOREACH_KEY_VAL_IND(ht, h, key, val) {
        ZVAL_DEREF(val);
        cb(ctx, key, h, val);
    } ZEND_HASH_FOREACH_END();
}

HashTable *ferrophp_zval_array_ptr(zval *zv) {
    ZVAL_DEREF(zv);
    return Z_TYPE_P(zv) == IS_ARRAY ? Z_ARRVAL_P(zv) : NULL;
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

void ferrophp_throw_runtime_exception_for_call(const char *what) {
    zend_throw_exception_ex(spl_ce_RuntimeException, 0, "%s() %s",
                            get_active_function_name(), what);
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
 * end of an engine request the resource list frees it. */
static void ferrophp_libxml_reset(void) {
    zend_module_entry *module = zend_hash_str_find_ptr(&module_registry, "libxml", sizeof("libxml") - 1);
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
        /* Nor its libxml errors and entity loader (nor those the boot code left). */
        ferrophp_libxml_reset();
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
    /* Writes and closes the session, then forgets it; resets filter_input() state. The
     * save handler the worker script registered (session_set_save_handler before its
     * loop, as Symfony and Laravel apps do at boot) is app state, not request state:
     * the session's RSHUTDOWN releases it, so it is handed back right after. */
    ferrophp_session_handler_keep();
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

/* ---------------------------------------------------------------------------------------
 * $_COOKIE and $_GET without the detours. PHP's php_default_treat_data hands each variable
 * to the filter extension's input filter (php_sapi_filter), which registers it twice
 * through php_register_variable_ex: raw into the filter's own array (for filter_input)
 * and into $_COOKIE/$_GET, each time re-scanning the name for mangling, checking
 * __Host-/__Secure-, (for cookies) looking it up as a duplicate and interning the key,
 * with three value copies in between. For a plain name (nothing to mangle, not numeric)
 * that all reduces to: one key, (for cookies) one duplicate check, two inserts. Any other
 * name, and any configuration where the result could differ (another input filter or
 * treat_data, mbstring.encoding_translation, a default filter other than unsafe_raw),
 * takes PHP's own path. The loop is php_default_treat_data's, step for step; only the
 * per-variable work and the tokenizer's implementation differ.
 * ------------------------------------------------------------------------------------- */

typedef void (*ferrophp_treat_data_func)(int arg, char *str, zval *dest_array);
static ferrophp_treat_data_func ferrophp_next_treat_data;
/* mbstring's treat_data, looked up by name: a PHP built without mbstring has none. */
static ferrophp_treat_data_func ferrophp_mbstr_treat_data;
/* The filter extension's globals id (filter_globals_id is not exported): the one its
 * "filter.default" ini entry hands to its ini handler, as every STD_PHP_INI_ENTRY does. */
static int *ferrophp_filter_globals_id;
static zend_long ferrophp_filter_unsafe_raw = -1;
/* Cleared by tests and benchmarks to compare with PHP's own path. */
static atomic_bool ferrophp_fast_input = true;

void ferrophp_set_fast_input(bool enabled) {
    atomic_store_explicit(&ferrophp_fast_input, enabled, memory_order_relaxed);
}

static bool ferrophp_same_object(const void *a, const void *b) {
    Dl_info ia, ib;
    return dladdr(a, &ia) && dladdr(b, &ib) && ia.dli_fbase == ib.dli_fbase;
}

bool ferrophp_install_treat_data(void) {
    zend_ini_entry *entry = zend_hash_str_find_ptr(EG(ini_directives), "filter.default", sizeof("filter.default") - 1);
    zval *raw = zend_get_constant_str("FILTER_UNSAFE_RAW", sizeof("FILTER_UNSAFE_RAW") - 1);
    ferrophp_next_treat_data = sapi_module.treat_data;
    ferrophp_mbstr_treat_data = (ferrophp_treat_data_func)dlsym(RTLD_DEFAULT, "mbstr_treat_data");
    sapi_module.treat_data = ferrophp_treat_data;
    /* The input filter must be the filter extension's php_sapi_filter, whose steps the fast
     * path reproduces: the only filter other than php_default_input_filter inside libphp,
     * and installed together with an init function. */
    if (!entry || !entry->mh_arg2 || (size_t)entry->mh_arg1 != offsetof(zend_filter_globals, default_filter)
        || !raw || Z_TYPE_P(raw) != IS_LONG
        || sapi_module.input_filter == php_default_input_filter || !sapi_module.input_filter_init
        || !ferrophp_same_object((const void *)sapi_module.input_filter, (const void *)php_default_treat_data)
        || (ferrophp_next_treat_data != php_default_treat_data
            && (!ferrophp_mbstr_treat_data || ferrophp_next_treat_data != ferrophp_mbstr_treat_data))) {
        return false;
    }
    ferrophp_filter_globals_id = (int *)entry->mh_arg2;
    ferrophp_filter_unsafe_raw = Z_LVAL_P(raw);
    return true;
}

static zend_filter_globals *ferrophp_filter_globals(void) {
    return TSRMG_BULK_STATIC(*ferrophp_filter_globals_id, zend_filter_globals *);
}

/* mbstring's treat_data only differs from PHP's when it translates encodings. */
static bool ferrophp_encoding_translation(void) {
    zend_ini_entry *entry = zend_hash_str_find_ptr(EG(ini_directives), "mbstring.encoding_translation",
                                                   sizeof("mbstring.encoding_translation") - 1);
    /* What mbstring's OnUpdateBool made of the current value. */
    return entry && entry->value && zend_ini_parse_bool(entry->value);
}

/* php_sapi_filter + php_register_variable_ex for a plain name, unsafe_raw. */
static void ferrophp_register_input(bool cookie, zval *array, zval *raw_array, uint32_t expected,
                                    const char *var, size_t var_len, const char *val, size_t val_len) {
    /* php_register_variable_quick's key, made once for both arrays. */
    zend_string *key = zend_string_init_interned(var, var_len, 0);
    zval raw, filtered;
    /* php_sapi_filter: the first of several same-named cookies wins, in both arrays. */
    if (cookie && zend_hash_exists(Z_ARRVAL_P(array), key)) {
        zend_string_release_ex(key, 0);
        return;
    }
    if (Z_ISUNDEF_P(raw_array)) {
        array_init_size(raw_array, expected);
    }
    ZVAL_STRINGL(&raw, val, val_len);
    zend_hash_update_ind(Z_ARRVAL_P(raw_array), key, &raw);
    if (val_len) {
        ZVAL_STRINGL(&filtered, val, val_len);
    } else {
        ZVAL_EMPTY_STRING(&filtered);
    }
    zend_hash_update_ind(Z_ARRVAL_P(array), key, &filtered);
    zend_string_release_ex(key, 0);
}

/* php_register_variable_ex stores `var` verbatim: no space, dot or bracket to mangle (so
 * the __Host-/__Secure- check cannot fire either) and not a numeric key. */
static bool ferrophp_plain_name(const char *var, size_t *len) {
    const char *p = var;
    zend_ulong idx;
    for (; *p; p++) {
        if (*p == ' ' || *p == '.' || *p == '[') {
            return false;
        }
    }
    *len = p - var;
    return *len && !ZEND_HANDLE_NUMERIC_STR(var, *len, idx);
}

/* php_strtok_r(NULL, separators, rest): skips separators, cuts the token at the next one;
 * with strchr when there is one separator rather than a delimiter set built per call. */
static zend_always_inline char *ferrophp_token(char **rest, const char *separators) {
    char *token = *rest, *end;
    if (separators[1]) {
        token += strspn(token, separators);
    } else {
        while (*token == separators[0]) {
            token++;
        }
    }
    if (!*token) {
        *rest = token;
        return NULL;
    }
    end = separators[1] ? strpbrk(token, separators) : strchr(token, separators[0]);
    if (end) {
        *end = '\0';
        *rest = end + 1;
    } else {
        *rest = token + strlen(token);
    }
    return token;
}

static void ferrophp_treat_input(int arg, zend_filter_globals *fg) {
    bool cookie = arg == PARSE_COOKIE;
    const char *c_var = cookie ? SG(request_info).cookie_data : SG(request_info).query_string;
    const char *separator = cookie ? ";" : PG(arg_separator).input;
    zval *raw_array = cookie ? &fg->cookie_array : &fg->get_array;
    zval *global = &PG(http_globals)[cookie ? TRACK_VARS_COOKIE : TRACK_VARS_GET];
    char *res, *var, *val, *rest;
    zend_long count = 0;
    zval array;
    uint32_t expected = 0;

    if (c_var && *c_var) {
        /* Sized for every variable up front: no rehash while filling (capacity is not
         * observable from PHP). */
        for (const char *p = c_var; expected < 1024
             && (p = separator[1] ? strpbrk(p, separator) : strchr(p, separator[0])); p++) {
            expected++;
        }
        expected = MIN(expected + 1, 1024);
    }
    array_init_size(&array, expected);
    zval_ptr_dtor_nogc(global);
    ZVAL_COPY_VALUE(global, &array);
    if (!expected) {
        return;
    }

    res = estrdup(c_var);
    rest = res;
    var = ferrophp_token(&rest, separator);
    while (var) {
        size_t val_len, var_len;

        val = strchr(var, '=');
        if (cookie) {
            /* Remove leading spaces from cookie names, needed for multi-cookie header where ; can be followed by a space */
            while (isspace((unsigned char)*var)) {
                var++;
            }
            if (var == val || *var == '\0') {
                goto next_var;
            }
        }
        if (++count > PG(max_input_vars)) {
            php_error_docref(NULL, E_WARNING, "Input variables exceeded " ZEND_LONG_FMT ". To increase the limit change max_input_vars in php.ini.", PG(max_input_vars));
            break;
        }
        if (val) {
            *val++ = '\0';
            val_len = strlen(val);
            /* Without '%' (and '+' for php_url_decode) decoding leaves the bytes as they are. */
            if (cookie ? memchr(val, '%', val_len) != NULL : strpbrk(val, "%+") != NULL) {
                val_len = cookie ? php_raw_url_decode(val, val_len) : php_url_decode(val, val_len);
            }
        } else {
            val = "";
            val_len = 0;
        }
        if (!cookie && strpbrk(var, "%+")) {
            php_url_decode(var, strlen(var));
        }
        if (ferrophp_plain_name(var, &var_len)) {
            ferrophp_register_input(cookie, &array, raw_array, expected, var, var_len, val, val_len);
        } else {
            size_t new_val_len;
            char *copy = estrndup(val, val_len);
            if (sapi_module.input_filter(arg, var, &copy, val_len, &new_val_len)) {
                php_register_variable_safe(var, copy, new_val_len, &array);
            }
            efree(copy);
        }
next_var:
        var = ferrophp_token(&rest, separator);
    }
    efree(res);
}

void ferrophp_treat_data(int arg, char *str, zval *dest_array) {
    zend_filter_globals *fg;
    /* (An empty arg_separator.input is left to PHP's strtok.) */
    if ((arg == PARSE_COOKIE || (arg == PARSE_GET && PG(arg_separator).input && *PG(arg_separator).input))
        && ferrophp_filter_globals_id
        && atomic_load_explicit(&ferrophp_fast_input, memory_order_relaxed)
        && sapi_module.input_filter && (fg = ferrophp_filter_globals())->default_filter == ferrophp_filter_unsafe_raw
        && !(ferrophp_next_treat_data == ferrophp_mbstr_treat_data && ferrophp_encoding_translation())) {
        ferrophp_treat_input(arg, fg);
        return;
    }
    ferrophp_next_treat_data(arg, str, dest_array);
}

/* ---------------------------------------------------------------------------------------
 * The execution timer, kept for the thread's life. PHP 8.2 creates a POSIX timer in every
 * init_executor and deletes it in every shutdown_executor (timer_create, timer_delete,
 * getpid twice, gettid, sigaction: six syscalls per request), although the timer is the
 * same thread's each time. shutdown only deletes it when EG(pid) is this process's pid and
 * init only creates one when it is not, so hiding the pid across php_request_shutdown
 * keeps the timer (disarmed by zend_unset_timeout as usual) for the next request.
 * ------------------------------------------------------------------------------------- */

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
