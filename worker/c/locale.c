/* setlocale() per PHP thread.
 *
 * C's setlocale() changes the locale of the whole process: with many PHP threads, one
 * request's setlocale(LC_ALL, 'de_DE.UTF-8') would change how every other running
 * request formats floats (printf('%.2f'), localeconv()) or collates strings, and PHP's
 * request shutdown would reset it under them. PHP's setlocale() is replaced here by one
 * that gives the calling thread a locale object of its own (POSIX newlocale/uselocale);
 * glibc's locale-dependent functions read the calling thread's locale. A PHP thread
 * starts with the locale PHP itself sets at start-up (C, LC_CTYPE C.UTF-8) and gets it
 * back at the end of each engine request: each classic request, or a worker script's
 * whole run. */
#include "php.h"
#include "zend_smart_str.h"
#include "ext/standard/basic_functions.h"
#include "worker.h"
#include <langinfo.h>
#include <locale.h>

/* The locale object this thread uses, or (locale_t)0 before ferrophp_locale_thread_reset. */
static __thread locale_t thread_locale;
/* Whether a setlocale() call changed thread_locale since the last reset. */
static __thread bool thread_locale_changed;

/* glibc's categories with the names its composite LC_ALL strings use; newlocale() wants
 * every one of them named in a composite name. */
static const struct {
    int category;
    const char *name;
} categories[] = {
    {LC_CTYPE, "LC_CTYPE"},       {LC_NUMERIC, "LC_NUMERIC"},
    {LC_TIME, "LC_TIME"},         {LC_COLLATE, "LC_COLLATE"},
    {LC_MONETARY, "LC_MONETARY"}, {LC_MESSAGES, "LC_MESSAGES"},
#ifdef LC_PAPER
    {LC_PAPER, "LC_PAPER"},       {LC_NAME, "LC_NAME"},
    {LC_ADDRESS, "LC_ADDRESS"},   {LC_TELEPHONE, "LC_TELEPHONE"},
    {LC_MEASUREMENT, "LC_MEASUREMENT"}, {LC_IDENTIFICATION, "LC_IDENTIFICATION"},
#endif
};

static int category_mask(zend_long category) {
    if (category == LC_ALL) {
        return LC_ALL_MASK;
    }
    for (size_t i = 0; i < sizeof categories / sizeof categories[0]; i++) {
        if (categories[i].category == category) {
            return 1 << category;
        }
    }
    return 0;
}

static const char *category_name(int category) {
    return nl_langinfo_l(_NL_LOCALE_NAME(category), thread_locale);
}

/* The thread's name for `category`, as setlocale(category, NULL) would give it: for LC_ALL
 * one name when all categories agree, else glibc's composite "LC_CTYPE=..;..." form,
 * which setlocale() accepts back. */
static zend_string *current_name(zend_long category) {
    if (category != LC_ALL) {
        return zend_string_init(category_name((int)category), strlen(category_name((int)category)), 0);
    }
    const char *first = category_name(categories[0].category);
    bool uniform = true;
    for (size_t i = 1; i < sizeof categories / sizeof categories[0]; i++) {
        if (strcmp(first, category_name(categories[i].category)) != 0) {
            uniform = false;
            break;
        }
    }
    if (uniform) {
        return zend_string_init(first, strlen(first), 0);
    }
    smart_str out = {0};
    for (size_t i = 0; i < sizeof categories / sizeof categories[0]; i++) {
        if (i > 0) {
            smart_str_appendc(&out, ';');
        }
        smart_str_appends(&out, categories[i].name);
        smart_str_appendc(&out, '=');
        smart_str_appends(&out, category_name(categories[i].category));
    }
    return smart_str_extract(&out);
}

static locale_t startup_locale(void) {
    locale_t c = newlocale(LC_ALL_MASK, "C", (locale_t)0);
    if (!c) {
        return c;
    }
    /* As zend_reset_lc_ctype_locale(). */
    locale_t utf8 = newlocale(LC_CTYPE_MASK, "C.UTF-8", c);
    return utf8 ? utf8 : c;
}

void ferrophp_locale_thread_reset(void) {
    if (thread_locale && !thread_locale_changed) {
        return;
    }
    locale_t fresh = startup_locale();
    if (!fresh) {
        return; /* out of memory: keep what the thread has */
    }
    uselocale(fresh);
    if (thread_locale) {
        freelocale(thread_locale);
    }
    thread_locale = fresh;
    thread_locale_changed = false;
    zend_update_current_locale();
}

void ferrophp_locale_thread_release(void) {
    if (!thread_locale) {
        return;
    }
    uselocale(LC_GLOBAL_LOCALE);
    freelocale(thread_locale);
    thread_locale = (locale_t)0;
}

/* One candidate of setlocale(): the new name, or NULL when the locale does not exist. */
static zend_string *try_locale(zend_long category, zend_string *name) {
    if (zend_string_equals_literal(name, "0")) {
        return current_name(category);
    }
    if (ZSTR_LEN(name) >= 255) {
        php_error_docref(NULL, E_WARNING, "Specified locale name is too long");
        return NULL;
    }
    int mask = category_mask(category);
    if (!mask || !thread_locale) {
        return NULL;
    }
    /* newlocale() consumes its base on success: give it a copy, so the object in use
     * stays valid until uselocale() switches away from it. */
    locale_t base = duplocale(thread_locale);
    if (!base) {
        return NULL;
    }
    locale_t changed = newlocale(mask, ZSTR_VAL(name), base);
    if (!changed) {
        freelocale(base);
        return NULL;
    }
    uselocale(changed);
    freelocale(thread_locale);
    thread_locale = changed;
    thread_locale_changed = true;
    zend_string *result = current_name(category);
    if (category == LC_CTYPE || category == LC_ALL) {
        zend_update_current_locale();
        /* PCRE builds locale-aware character tables from this name. */
        if (BG(ctype_string)) {
            zend_string_release_ex(BG(ctype_string), 0);
            BG(ctype_string) = NULL;
        }
        const char *ctype = category_name(LC_CTYPE);
        if (strcmp(ctype, "C") != 0) {
            BG(ctype_string) = zend_string_init(ctype, strlen(ctype), 0);
        }
    }
    return result;
}

/* setlocale(int $category, string|array $locales, string ...$rest): string|false */
static ZEND_NAMED_FUNCTION(ferrophp_fn_setlocale) {
    zend_long category;
    zval *args = NULL;
    int count = 0;

    ZEND_PARSE_PARAMETERS_START(2, -1)
        Z_PARAM_LONG(category)
        Z_PARAM_VARIADIC('+', args, count)
    ZEND_PARSE_PARAMETERS_END();

    for (int i = 0; i < count; i++) {
        zval *candidates = &args[i];
        zval *one;
        zend_string *result = NULL;
        if (Z_TYPE_P(candidates) == IS_ARRAY) {
            ZEND_HASH_FOREACH_VAL(Z_ARRVAL_P(candidates), one) {
                zend_string *tmp;
                zend_string *name = zval_try_get_tmp_string(one, &tmp);
                if (!name) {
                    RETURN_THROWS();
                }
                result = try_locale(category, name);
                zend_tmp_string_release(tmp);
                if (result) {
                    RETURN_STR(result);
                }
            } ZEND_HASH_FOREACH_END();
        } else {
            zend_string *tmp;
            zend_string *name = zval_try_get_tmp_string(candidates, &tmp);
            if (!name) {
                RETURN_THROWS();
            }
            result = try_locale(category, name);
            zend_tmp_string_release(tmp);
            if (result) {
                RETURN_STR(result);
            }
        }
    }
    RETURN_FALSE;
}

void ferrophp_locale_install(void) {
    ferrophp_replace_function_handler("setlocale", sizeof "setlocale" - 1, ferrophp_fn_setlocale);
}
