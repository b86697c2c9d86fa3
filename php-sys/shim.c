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
