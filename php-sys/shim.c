/* See shim.h: one small function per thing bindgen cannot express, and no logic. */
#define ZEND_ENABLE_STATIC_TSRMLS_CACHE 1
#include "shim.h"
#include "zend_exceptions.h"

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

const zend_function_entry ferrophp_sapi_functions[] = {
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
