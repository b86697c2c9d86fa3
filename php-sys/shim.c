/* shim.c: the thin wrappers. One small function per thing bindgen cannot express: the
 * ZTS globals accessors (SG/EG/PG are macros over the thread's TSRM cache), zend_try
 * around calls that may bail out (setjmp must never return through Rust frames), static
 * inline helpers and zval/hash macros. No logic lives here, and nothing here calls into
 * a crate above php-sys: ferrophp's own C is the worker crate's (worker/c/).
 *
 * This file defines the TSRM cache that the C files compiled with
 * ZEND_ENABLE_STATIC_TSRMLS_CACHE read, here and in worker/c/.
 */
#define ZEND_ENABLE_STATIC_TSRMLS_CACHE 1
#include "shim.h"
#include "zend_exceptions.h"
#include "ext/spl/spl_exceptions.h"

/* The calling thread's TSRM pointer, shared by every C file compiled with
 * ZEND_ENABLE_STATIC_TSRMLS_CACHE (zend.h declares it extern for them: this one and
 * worker/c/'s), and by PHP's CLI SAPI (libphp-cli.a). libphp.so keeps its own hidden, so
 * with it the shim defines one,
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

unsigned int ferrophp_input_filter(int arg, const char *var, char **val, size_t len, size_t *new_len) {
    return sapi_module.input_filter ? sapi_module.input_filter(arg, var, val, len, new_len) : 1;
}

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
