/* shim.c: the thin wrappers. One small function per thing bindgen cannot express: the
 * ZTS globals accessors (SG/EG/PG are macros over the thread's TSRM cache), zend_try
 * around calls that may bail out (setjmp must never return through Rust frames), static
 * inline helpers and zval/hash macros, the arginfo tables of the PHP functions the SAPI
 * adds, and ferrophp's module entry. No logic lives here.
 *
 * The files next to it hold the sequences that are more than a wrapper, each by role:
 * input.c ($_COOKIE/$_GET fast path), request_scope.c (one request's life in both
 * modes), worker_request.c (a worker request's startup and shutdown), thread.c (what a
 * long-lived PHP thread keeps or releases), locale.c (setlocale per thread). This file defines the TSRM cache that the files compiled with
 * ZEND_ENABLE_STATIC_TSRMLS_CACHE read.
 */
#define ZEND_ENABLE_STATIC_TSRMLS_CACHE 1
#include "shim.h"
#include "zend_exceptions.h"
#include "ext/spl/spl_exceptions.h"

/* The calling thread's TSRM pointer, shared by every shim file compiled with
 * ZEND_ENABLE_STATIC_TSRMLS_CACHE (zend.h declares it extern for them), and by PHP's CLI
 * SAPI (libphp-cli.a). libphp.so keeps its own hidden, so with it the shim defines one,
 * set when a PHP thread starts; with libphp.a linked in (FERROPHP_PHP_STATIC) the engine's
 * own (Zend/zend.c) is visible and is the one TSRM keeps up to date. */
#ifndef FERROPHP_PHP_STATIC
ZEND_TSRMLS_CACHE_DEFINE()
#endif

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

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_ferrophp_request_heartbeat, 0, 1, _IS_BOOL, 0)
    ZEND_ARG_TYPE_INFO(0, seconds, IS_LONG, 0)
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
    ZEND_RAW_FENTRY("ferrophp_request_heartbeat", ferrophp_fn_request_heartbeat, arginfo_ferrophp_request_heartbeat, 0)
    ZEND_FE_END
};

void ferrophp_ini_default(HashTable *configuration_hash, const char *name, size_t name_len,
                          const char *value, size_t value_len) {
    zval tmp;
    ZVAL_NEW_STR(&tmp, zend_string_init(value, value_len, 1));
    zend_hash_str_update(configuration_hash, name, name_len, &tmp);
}

void ferrophp_ini_startup_default(const char *name, size_t name_len, const char *value,
                                  size_t value_len) {
    if (cfg_get_entry(name, name_len)) {
        return; /* php.ini or -d set it */
    }
    zend_string *key = zend_string_init(name, name_len, 0);
    zend_alter_ini_entry_chars(key, value, value_len, ZEND_INI_SYSTEM, ZEND_INI_STAGE_STARTUP);
    zend_string_release(key);
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

HashTable *ferrophp_server_template_new(uint32_t capacity) {
    HashTable *ht = pemalloc(sizeof(HashTable), 1);
    zend_hash_init(ht, capacity, NULL, NULL, 1);
    zend_hash_real_init_mixed(ht);
    return ht;
}

void ferrophp_server_template_add(HashTable *ht, zend_string *key, zend_string *value) {
    zval zv;
    ZVAL_INTERNED_STR(&zv, value);
    zend_hash_update(ht, key, &zv);
}

void ferrophp_server_template_seal(HashTable *ht) {
    /* Every key and value is a permanent interned string, so nothing in it is
     * refcounted: zend_array_dup may copy it as one block, as it copies OPcache's
     * immutable arrays, and no thread ever writes to it again. */
    GC_ADD_FLAGS(ht, IS_ARRAY_IMMUTABLE);
}

void ferrophp_server_start_from(zval *track_vars, HashTable *template) {
    zval_ptr_dtor(track_vars);
    ZVAL_ARR(track_vars, zend_array_dup(template));
}

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
