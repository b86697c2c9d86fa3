/*
 * php-sys's C shim, for its callers in Rust (bindgen reads this file through wrapper.h) and
 * for the C of the crates above it (worker/c/, which include it). Only what bindgen cannot
 * express, one small function each: the ZTS globals accessors (SG, EG, PG are macros over
 * the thread's TSRM cache), zend_try wrappers (setjmp must never return through Rust
 * frames), static inline helpers and zval/hash macros. No policy lives here: callers
 * decide what to do with the results, and nothing here calls up into another crate.
 * ferrophp's own C (the request lifecycle, the SAPI's functions, the module entry, the
 * deadlines...) is the worker crate's: worker/c/.
 */
#ifndef FERROPHP_SHIM_H
#define FERROPHP_SHIM_H

#include "php.h"
#include "SAPI.h"
#include "php_main.h"
#include "php_ini.h"

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
/* Runs a php -S router script; *declined is set when it returned false. */
bool ferrophp_try_execute_router(zend_file_handle *file, bool *declined);
bool ferrophp_try_eval_string(const char *code, const char *name);

/* static inline helpers. */
void ferrophp_string_release(zend_string *s);

/* An ini default set during module start-up, after the ini entries were registered
 * (where sapi_module.ini_defaults is not ours to set: PHP's CLI), unless php.ini or -d
 * configured the entry. */
void ferrophp_ini_startup_default(const char *name, size_t name_len, const char *value,
                                  size_t value_len);
/* ini defaults that php.ini may override (sapi_module.ini_defaults). */
void ferrophp_ini_default(HashTable *configuration_hash, const char *name, size_t name_len,
                          const char *value, size_t value_len);

/* zval macros. */
/* Swaps an internal function's handler (module start-up only); returns the old one, or
 * NULL when there is no such internal function. */
zif_handler ferrophp_replace_function_handler(const char *name, size_t len, zif_handler handler);
/* Calls fn once module start-up is complete (every extension, OPcache included, has
 * registered its functions) and before ZTS copies the function table for threads. Set it
 * before php_module_startup. */
void ferrophp_on_post_startup(void (*fn)(void));
/* ZEND_HASH_FOREACH_KEY_VAL_IND with references dereferenced: cb(ctx, key or NULL, h, val). */
void ferrophp_hash_foreach(HashTable *ht,
                           void (*cb)(void *ctx, zend_string *key, zend_ulong h, zval *val),
                           void *ctx);
/* The array behind zv (references followed), or NULL. */
HashTable *ferrophp_zval_array_ptr(zval *zv);
void ferrophp_zval_bool(zval *zv, bool value);
void ferrophp_zval_long(zval *zv, zend_long value);
void ferrophp_zval_stringl(zval *zv, const char *str, size_t len);
void ferrophp_zval_array(zval *zv, uint32_t size);
uint32_t ferrophp_num_args(zend_execute_data *execute_data);

/* A persistent string flagged interned + permanent with its hash computed: safe to share
 * read-only between threads and never refcounted (used for $_SERVER keys). */
zend_string *ferrophp_permanent_string(const char *str, size_t len);
/* ht[key] = string copy of val (ZVAL_STRINGL_FAST + zend_hash_update). */
void ferrophp_hash_update_stringl(HashTable *ht, zend_string *key, const char *val, size_t len);
/* Z_ARRVAL_P(zv). */
HashTable *ferrophp_array(zval *zv);
/* sapi_module.input_filter, which frees and replaces *val. */
unsigned int ferrophp_input_filter(int arg, const char *var, char **val, size_t len, size_t *new_len);

/* zend_try wrappers and exceptions for calls into PHP code. */
/* zend_call_function inside zend_try (the handler's return value is discarded). */
bool ferrophp_try_call(zend_fcall_info *fci, zend_fcall_info_cache *fcc);
/* Reports EG(exception) as an uncaught exception (E_ERROR without bailing out). */
void ferrophp_report_exception(void);
/* Throws RuntimeException("<the called function>() <what>"), as FrankenPHP does for a
 * worker function called outside a worker. */
void ferrophp_throw_runtime_exception_for_call(const char *what);

#endif
