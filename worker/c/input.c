/* input.c: $_COOKIE and $_GET without the detours (sapi_module.treat_data's fast path).
 *
 * Why C: it replaces a C function pointer of PHP's sapi_module and is written step for
 * step against php_default_treat_data and the filter extension's php_sapi_filter, with
 * their macros (PG, SG, ZEND_HANDLE_NUMERIC_STR, TSRMG_BULK_STATIC for the filter's
 * globals, whose id libphp does not export), none of which bindgen can express.
 *
 * PHP's php_default_treat_data hands each variable to the filter extension's input filter
 * (php_sapi_filter), which registers it twice through php_register_variable_ex: raw into
 * the filter's own array (for filter_input) and into $_COOKIE/$_GET, each time re-scanning
 * the name for mangling, checking __Host-/__Secure-, (for cookies) looking it up as a
 * duplicate and interning the key, with three value copies in between. For a plain name
 * (nothing to mangle, not numeric) that all reduces to: one key, (for cookies) one
 * duplicate check, two inserts. Any other name, and any configuration where the result
 * could differ (another input filter or treat_data, mbstring.encoding_translation, a
 * default filter other than unsafe_raw), takes PHP's own path. The loop is
 * php_default_treat_data's, step for step; only the per-variable work and the tokenizer's
 * implementation differ. worker/tests/input_parsing.rs compares both paths.
 */
#define ZEND_ENABLE_STATIC_TSRMLS_CACHE 1 /* the thread's cache is php-sys's shim.c's */
#include "worker.h"
#include "php_variables.h"
#include "ext/filter/php_filter.h"
#include "ext/standard/url.h"
#include <ctype.h>
#include <dlfcn.h>
#ifdef FERROPHP_BENCH_FIXTURES
#include <stdatomic.h>
#endif

static void ferrophp_treat_data(int arg, char *str, zval *dest_array);

typedef void (*ferrophp_treat_data_func)(int arg, char *str, zval *dest_array);
static ferrophp_treat_data_func ferrophp_next_treat_data;
/* mbstring's treat_data, looked up by name: a PHP built without mbstring has none. */
static ferrophp_treat_data_func ferrophp_mbstr_treat_data;
/* The filter extension's globals id (filter_globals_id is not exported): the one its
 * "filter.default" ini entry hands to its ini handler, as every STD_PHP_INI_ENTRY does. */
static int *ferrophp_filter_globals_id;
static zend_long ferrophp_filter_unsafe_raw = -1;
#ifdef FERROPHP_BENCH_FIXTURES
/* Cleared by tests and benchmarks to compare with PHP's own path; compiled only with the
 * bench-fixtures feature, so production requests never load it. */
static atomic_bool ferrophp_fast_input = true;

void ferrophp_set_fast_input(bool enabled) {
    atomic_store_explicit(&ferrophp_fast_input, enabled, memory_order_relaxed);
}

static bool ferrophp_fast_input_enabled(void) {
    return atomic_load_explicit(&ferrophp_fast_input, memory_order_relaxed);
}
#else
#define ferrophp_fast_input_enabled() true
#endif

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

static void ferrophp_treat_data(int arg, char *str, zval *dest_array) {
    zend_filter_globals *fg;
    /* (An empty arg_separator.input is left to PHP's strtok.) */
    if ((arg == PARSE_COOKIE || (arg == PARSE_GET && PG(arg_separator).input && *PG(arg_separator).input))
        && ferrophp_filter_globals_id
        && ferrophp_fast_input_enabled()
        && sapi_module.input_filter && (fg = ferrophp_filter_globals())->default_filter == ferrophp_filter_unsafe_raw
        && !(ferrophp_next_treat_data == ferrophp_mbstr_treat_data && ferrophp_encoding_translation())) {
        ferrophp_treat_input(arg, fg);
        return;
    }
    ferrophp_next_treat_data(arg, str, dest_array);
}
