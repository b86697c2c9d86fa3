/*
 * The C shim: only what bindgen cannot express. Each function wraps one macro,
 * one ZTS globals accessor, one static inline helper, or one zend_try block.
 * No policy lives here; callers in Rust decide what to do with the results.
 */
#ifndef FERROPHP_SHIM_H
#define FERROPHP_SHIM_H

#include "php.h"
#include "SAPI.h"
#include "php_main.h"

/* ZTS globals: pointers into the calling thread's TSRM storage (SG, EG, PG). */
sapi_globals_struct *ferrophp_sapi_globals(void);
zend_executor_globals *ferrophp_executor_globals(void);
php_core_globals *ferrophp_core_globals(void);

/* Caches the thread's TSRM pointer for the shim's own accessors; call once per PHP thread
 * right after ts_resource_ex(0, NULL). */
void ferrophp_thread_started(void);

/* zend_try wrappers: a bailout (fatal error, exit, timeout) longjmps back here, never
 * through Rust frames. Each returns true when the wrapped call bailed out. */
bool ferrophp_try_execute_script(zend_file_handle *file, bool *succeeded);
bool ferrophp_try_eval_string(const char *code, const char *name);

/* static inline helpers. */
zend_string *ferrophp_string_init(const char *str, size_t len, bool persistent);
void ferrophp_string_release(zend_string *s);

#endif
