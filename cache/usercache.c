/* See usercache.h: tables and one small function per macro; no cache logic here. */
#include "php.h"
#include "zend_exceptions.h"
#include "zend_enum.h"
#include "zend_interfaces.h"
#include "ext/spl/spl_exceptions.h"
#include "php_ini.h"
#include "ext/standard/basic_functions.h"
#include "usercache.h"

zend_class_entry *ferrophp_uc_cache_ce;
zend_class_entry *ferrophp_uc_exception_ce;

/* ---- UserCache\Cache arginfo (matches cache/stubs/UserCache.php) ---- */

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_uc_store, 0, 2, _IS_BOOL, 0)
    ZEND_ARG_TYPE_INFO(0, key, IS_STRING, 0)
    ZEND_ARG_TYPE_INFO(0, value, IS_MIXED, 0)
    ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, ttl, IS_LONG, 0, "0")
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_uc_fetch, 0, 1, IS_MIXED, 0)
    ZEND_ARG_TYPE_INFO(0, key, IS_STRING, 0)
    ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, default, IS_MIXED, 0, "null")
    ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(1, found, _IS_BOOL, 1, "null")
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_uc_fetch_copy, 0, 1, IS_MIXED, 0)
    ZEND_ARG_TYPE_INFO(0, key, IS_STRING, 0)
    ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, default, IS_MIXED, 0, "null")
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_uc_fetch_multiple, 0, 1, IS_ARRAY, 0)
    ZEND_ARG_TYPE_INFO(0, keys, IS_ARRAY, 0)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_uc_store_multiple, 0, 1, IS_ARRAY, 0)
    ZEND_ARG_TYPE_INFO(0, values, IS_ARRAY, 0)
    ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, ttl, IS_LONG, 0, "0")
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_uc_exists, 0, 1, _IS_BOOL, 0)
    ZEND_ARG_TYPE_INFO(0, key, IS_STRING, 0)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_MASK_EX(arginfo_uc_delete, 0, 1, MAY_BE_BOOL|MAY_BE_ARRAY)
    ZEND_ARG_TYPE_MASK(0, key, MAY_BE_STRING|MAY_BE_ARRAY, NULL)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_MASK_EX(arginfo_uc_increment, 0, 1, MAY_BE_LONG|MAY_BE_FALSE)
    ZEND_ARG_TYPE_INFO(0, key, IS_STRING, 0)
    ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, step, IS_LONG, 0, "1")
    ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, ttl, IS_LONG, 0, "0")
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_uc_cas, 0, 3, _IS_BOOL, 0)
    ZEND_ARG_TYPE_INFO(0, key, IS_STRING, 0)
    ZEND_ARG_TYPE_INFO(0, old, IS_LONG, 0)
    ZEND_ARG_TYPE_INFO(0, new, IS_LONG, 0)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_uc_remember, 0, 2, IS_MIXED, 0)
    ZEND_ARG_TYPE_INFO(0, key, IS_STRING, 0)
    ZEND_ARG_TYPE_INFO(0, producer, IS_CALLABLE, 0)
    ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, ttl, IS_LONG, 0, "0")
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_uc_clear, 0, 0, _IS_BOOL, 0)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_uc_info, 0, 0, IS_ARRAY, 0)
ZEND_END_ARG_INFO()

#define UC_ME(name, fn, arginfo) ZEND_RAW_FENTRY(name, fn, arginfo, ZEND_ACC_PUBLIC | ZEND_ACC_STATIC)

static const zend_function_entry ferrophp_uc_cache_methods[] = {
    UC_ME("store", ferrophp_uc_store, arginfo_uc_store)
    UC_ME("add", ferrophp_uc_add, arginfo_uc_store)
    UC_ME("fetch", ferrophp_uc_fetch, arginfo_uc_fetch)
    UC_ME("fetchCopy", ferrophp_uc_fetch_copy, arginfo_uc_fetch_copy)
    UC_ME("fetchMultiple", ferrophp_uc_fetch_multiple, arginfo_uc_fetch_multiple)
    UC_ME("storeMultiple", ferrophp_uc_store_multiple, arginfo_uc_store_multiple)
    UC_ME("exists", ferrophp_uc_exists, arginfo_uc_exists)
    UC_ME("delete", ferrophp_uc_delete, arginfo_uc_delete)
    UC_ME("increment", ferrophp_uc_increment, arginfo_uc_increment)
    UC_ME("decrement", ferrophp_uc_decrement, arginfo_uc_increment)
    UC_ME("cas", ferrophp_uc_cas, arginfo_uc_cas)
    UC_ME("remember", ferrophp_uc_remember, arginfo_uc_remember)
    UC_ME("clear", ferrophp_uc_clear, arginfo_uc_clear)
    UC_ME("info", ferrophp_uc_info, arginfo_uc_info)
    ZEND_FE_END
};

/* ---- apcu_* compatibility arginfo (APCu 5.1 signatures) ---- */

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_apcu_fetch, 0, 1, IS_MIXED, 0)
    ZEND_ARG_TYPE_INFO(0, key, IS_MIXED, 0)
    ZEND_ARG_INFO_WITH_DEFAULT_VALUE(1, success, "null")
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_apcu_store, 0, 1, IS_MIXED, 0)
    ZEND_ARG_TYPE_INFO(0, key, IS_MIXED, 0)
    ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, value, IS_MIXED, 0, "UNKNOWN")
    ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, ttl, IS_LONG, 0, "0")
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_apcu_delete, 0, 1, IS_MIXED, 0)
    ZEND_ARG_TYPE_INFO(0, key, IS_MIXED, 0)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_MASK_EX(arginfo_apcu_exists, 0, 1, MAY_BE_BOOL|MAY_BE_ARRAY)
    ZEND_ARG_INFO(0, key)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_MASK_EX(arginfo_apcu_inc, 0, 1, MAY_BE_LONG|MAY_BE_FALSE)
    ZEND_ARG_TYPE_INFO(0, key, IS_STRING, 0)
    ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, step, IS_LONG, 0, "1")
    ZEND_ARG_INFO_WITH_DEFAULT_VALUE(1, success, "null")
    ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, ttl, IS_LONG, 0, "0")
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_apcu_cas, 0, 3, _IS_BOOL, 0)
    ZEND_ARG_TYPE_INFO(0, key, IS_STRING, 0)
    ZEND_ARG_TYPE_INFO(0, old, IS_LONG, 0)
    ZEND_ARG_TYPE_INFO(0, new, IS_LONG, 0)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_apcu_entry, 0, 2, IS_MIXED, 0)
    ZEND_ARG_TYPE_INFO(0, key, IS_STRING, 0)
    ZEND_ARG_TYPE_INFO(0, callback, IS_CALLABLE, 0)
    ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, ttl, IS_LONG, 0, "0")
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_apcu_clear_cache, 0, 0, _IS_BOOL, 0)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_MASK_EX(arginfo_apcu_cache_info, 0, 0, MAY_BE_ARRAY|MAY_BE_FALSE)
    ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, limited, _IS_BOOL, 0, "false")
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_apcu_key_info, 0, 1, IS_ARRAY, 1)
    ZEND_ARG_TYPE_INFO(0, key, IS_STRING, 0)
ZEND_END_ARG_INFO()

#define arginfo_apcu_enabled arginfo_apcu_clear_cache
#define arginfo_apcu_add arginfo_apcu_store
#define arginfo_apcu_dec arginfo_apcu_inc
#define arginfo_apcu_sma_info arginfo_apcu_cache_info

static const zend_function_entry ferrophp_uc_apcu_functions[] = {
    ZEND_RAW_FENTRY("apcu_fetch", ferrophp_apcu_fetch, arginfo_apcu_fetch, 0)
    ZEND_RAW_FENTRY("apcu_store", ferrophp_apcu_store, arginfo_apcu_store, 0)
    ZEND_RAW_FENTRY("apcu_add", ferrophp_apcu_add, arginfo_apcu_add, 0)
    ZEND_RAW_FENTRY("apcu_delete", ferrophp_apcu_delete, arginfo_apcu_delete, 0)
    ZEND_RAW_FENTRY("apcu_exists", ferrophp_apcu_exists, arginfo_apcu_exists, 0)
    ZEND_RAW_FENTRY("apcu_inc", ferrophp_apcu_inc, arginfo_apcu_inc, 0)
    ZEND_RAW_FENTRY("apcu_dec", ferrophp_apcu_dec, arginfo_apcu_dec, 0)
    ZEND_RAW_FENTRY("apcu_cas", ferrophp_apcu_cas, arginfo_apcu_cas, 0)
    ZEND_RAW_FENTRY("apcu_entry", ferrophp_apcu_entry, arginfo_apcu_entry, 0)
    ZEND_RAW_FENTRY("apcu_clear_cache", ferrophp_apcu_clear_cache, arginfo_apcu_clear_cache, 0)
    ZEND_RAW_FENTRY("apcu_cache_info", ferrophp_apcu_cache_info, arginfo_apcu_cache_info, 0)
    ZEND_RAW_FENTRY("apcu_key_info", ferrophp_apcu_key_info, arginfo_apcu_key_info, 0)
    ZEND_RAW_FENTRY("apcu_sma_info", ferrophp_apcu_sma_info, arginfo_apcu_sma_info, 0)
    ZEND_RAW_FENTRY("apcu_enabled", ferrophp_apcu_enabled, arginfo_apcu_enabled, 0)
    ZEND_FE_END
};

/* ---- APCUIterator (APCu 5.1 stub: apc_iterator.stub.php) ---- */

zend_class_entry *ferrophp_apcu_iterator_ce;
static zend_object_handlers ferrophp_apcu_iterator_handlers;

typedef struct {
    void *state; /* Box<IterState> owned by Rust; NULL until __construct ran */
    zend_object std;
} ferrophp_apcu_iterator;

static inline ferrophp_apcu_iterator *apcu_iterator_from(zend_object *obj) {
    return (ferrophp_apcu_iterator *)((char *)obj - XtOffsetOf(ferrophp_apcu_iterator, std));
}

static zend_object *apcu_iterator_create(zend_class_entry *ce) {
    ferrophp_apcu_iterator *it = zend_object_alloc(sizeof(ferrophp_apcu_iterator), ce);
    it->state = NULL;
    zend_object_std_init(&it->std, ce);
    object_properties_init(&it->std, ce);
    it->std.handlers = &ferrophp_apcu_iterator_handlers;
    return &it->std;
}

static void apcu_iterator_free(zend_object *obj) {
    ferrophp_apcu_iterator *it = apcu_iterator_from(obj);
    if (it->state) {
        ferrophp_apcu_iterator_drop(it->state);
        it->state = NULL;
    }
    zend_object_std_dtor(obj);
}

void **ferrophp_apcu_iterator_state(zval *obj) {
    if (Z_TYPE_P(obj) != IS_OBJECT || !instanceof_function(Z_OBJCE_P(obj), ferrophp_apcu_iterator_ce)) {
        return NULL;
    }
    return &apcu_iterator_from(Z_OBJ_P(obj))->state;
}

void **ferrophp_apcu_iterator_this(zend_execute_data *execute_data) {
    return ferrophp_apcu_iterator_state(&EX(This));
}

ZEND_BEGIN_ARG_INFO_EX(arginfo_apcu_it_construct, 0, 0, 0)
    ZEND_ARG_INFO_WITH_DEFAULT_VALUE(0, search, "null")
    ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, format, IS_LONG, 0, "APC_ITER_ALL")
    ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, chunk_size, IS_LONG, 0, "0")
    ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, list, IS_LONG, 0, "APC_LIST_ACTIVE")
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_apcu_it_void, 0, 0, IS_VOID, 0)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_apcu_it_valid, 0, 0, _IS_BOOL, 0)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_MASK_EX(arginfo_apcu_it_key, 0, 0, MAY_BE_STRING|MAY_BE_LONG)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_apcu_it_current, 0, 0, IS_MIXED, 0)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_apcu_it_total, 0, 0, IS_LONG, 0)
ZEND_END_ARG_INFO()

#define APCU_IT_ME(name, fn, arginfo) ZEND_RAW_FENTRY(name, fn, arginfo, ZEND_ACC_PUBLIC)

static const zend_function_entry ferrophp_apcu_iterator_methods[] = {
    APCU_IT_ME("__construct", ferrophp_apcu_it_construct, arginfo_apcu_it_construct)
    APCU_IT_ME("rewind", ferrophp_apcu_it_rewind, arginfo_apcu_it_void)
    APCU_IT_ME("next", ferrophp_apcu_it_next, arginfo_apcu_it_void)
    APCU_IT_ME("valid", ferrophp_apcu_it_valid, arginfo_apcu_it_valid)
    APCU_IT_ME("key", ferrophp_apcu_it_key, arginfo_apcu_it_key)
    APCU_IT_ME("current", ferrophp_apcu_it_current, arginfo_apcu_it_current)
    APCU_IT_ME("getTotalHits", ferrophp_apcu_it_total_hits, arginfo_apcu_it_total)
    APCU_IT_ME("getTotalSize", ferrophp_apcu_it_total_size, arginfo_apcu_it_total)
    APCU_IT_ME("getTotalCount", ferrophp_apcu_it_total_count, arginfo_apcu_it_total)
    ZEND_FE_END
};

/* apc.* ini entries as APCu 5.1.22 declares them (names, defaults, scopes): read by code
 * that checks for APCu (ini_get('apc.enabled')) and by our layer. PHP_INI_BEGIN names
 * its array `ini_entries`, which the usercache.* table below already uses. */
static const zend_ini_entry_def ferrophp_apc_ini_entries[] = {
    PHP_INI_ENTRY("apc.enabled", "1", PHP_INI_SYSTEM, NULL)
    PHP_INI_ENTRY("apc.shm_segments", "1", PHP_INI_SYSTEM, NULL)
    PHP_INI_ENTRY("apc.shm_size", "32M", PHP_INI_SYSTEM, NULL)
    PHP_INI_ENTRY("apc.entries_hint", "4096", PHP_INI_SYSTEM, NULL)
    PHP_INI_ENTRY("apc.gc_ttl", "3600", PHP_INI_SYSTEM, NULL)
    PHP_INI_ENTRY("apc.ttl", "0", PHP_INI_SYSTEM, NULL)
    PHP_INI_ENTRY("apc.smart", "0", PHP_INI_SYSTEM, NULL)
    PHP_INI_ENTRY("apc.mmap_file_mask", NULL, PHP_INI_SYSTEM, NULL)
    PHP_INI_ENTRY("apc.enable_cli", "0", PHP_INI_SYSTEM, NULL)
    PHP_INI_ENTRY("apc.slam_defense", "0", PHP_INI_SYSTEM, NULL)
    PHP_INI_ENTRY("apc.preload_path", NULL, PHP_INI_SYSTEM, NULL)
    PHP_INI_ENTRY("apc.coredump_unmap", "0", PHP_INI_SYSTEM, NULL)
    PHP_INI_ENTRY("apc.use_request_time", "0", PHP_INI_ALL, NULL)
    PHP_INI_ENTRY("apc.serializer", "php", PHP_INI_SYSTEM, NULL)
PHP_INI_END()

void ferrophp_uc_register_apcu(int module_number) {
    zend_class_entry ce;
    zend_register_ini_entries_ex(ferrophp_apc_ini_entries, module_number, MODULE_PERSISTENT);
    zend_register_functions(NULL, ferrophp_uc_apcu_functions, NULL, MODULE_PERSISTENT);

    INIT_CLASS_ENTRY(ce, "APCUIterator", ferrophp_apcu_iterator_methods);
    ferrophp_apcu_iterator_ce = zend_register_internal_class(&ce);
    ferrophp_apcu_iterator_ce->create_object = apcu_iterator_create;
    zend_class_implements(ferrophp_apcu_iterator_ce, 1, zend_ce_iterator);
    memcpy(&ferrophp_apcu_iterator_handlers, zend_get_std_object_handlers(), sizeof(zend_object_handlers));
    ferrophp_apcu_iterator_handlers.clone_obj = NULL;
    ferrophp_apcu_iterator_handlers.free_obj = apcu_iterator_free;
    ferrophp_apcu_iterator_handlers.offset = XtOffsetOf(ferrophp_apcu_iterator, std);

    REGISTER_LONG_CONSTANT("APC_LIST_ACTIVE", 1, CONST_PERSISTENT | CONST_CS);
    REGISTER_LONG_CONSTANT("APC_LIST_DELETED", 2, CONST_PERSISTENT | CONST_CS);
    REGISTER_LONG_CONSTANT("APC_ITER_TYPE", 1 << 0, CONST_PERSISTENT | CONST_CS);
    REGISTER_LONG_CONSTANT("APC_ITER_KEY", 1 << 1, CONST_PERSISTENT | CONST_CS);
    REGISTER_LONG_CONSTANT("APC_ITER_VALUE", 1 << 2, CONST_PERSISTENT | CONST_CS);
    REGISTER_LONG_CONSTANT("APC_ITER_NUM_HITS", 1 << 3, CONST_PERSISTENT | CONST_CS);
    REGISTER_LONG_CONSTANT("APC_ITER_MTIME", 1 << 4, CONST_PERSISTENT | CONST_CS);
    REGISTER_LONG_CONSTANT("APC_ITER_CTIME", 1 << 5, CONST_PERSISTENT | CONST_CS);
    REGISTER_LONG_CONSTANT("APC_ITER_DTIME", 1 << 6, CONST_PERSISTENT | CONST_CS);
    REGISTER_LONG_CONSTANT("APC_ITER_ATIME", 1 << 7, CONST_PERSISTENT | CONST_CS);
    REGISTER_LONG_CONSTANT("APC_ITER_REFCOUNT", 1 << 8, CONST_PERSISTENT | CONST_CS);
    REGISTER_LONG_CONSTANT("APC_ITER_MEM_SIZE", 1 << 9, CONST_PERSISTENT | CONST_CS);
    REGISTER_LONG_CONSTANT("APC_ITER_TTL", 1 << 10, CONST_PERSISTENT | CONST_CS);
    REGISTER_LONG_CONSTANT("APC_ITER_NONE", 0, CONST_PERSISTENT | CONST_CS);
    REGISTER_LONG_CONSTANT("APC_ITER_ALL", 0xffffffffL, CONST_PERSISTENT | CONST_CS);
}

void ferrophp_uc_serialize_lock(int delta) { BG(serialize_lock) += delta; }

void ferrophp_uc_warning(const char *msg) { php_error_docref(NULL, E_WARNING, "%s", msg); }

bool ferrophp_uc_ini_configured(const char *name, size_t len) { return cfg_get_entry(name, len) != NULL; }

void ferrophp_uc_register_classes(void) {
    zend_class_entry ce;
    INIT_NS_CLASS_ENTRY(ce, "UserCache", "Exception", NULL);
    ferrophp_uc_exception_ce = zend_register_internal_class_ex(&ce, spl_ce_RuntimeException);
    INIT_NS_CLASS_ENTRY(ce, "UserCache", "Cache", ferrophp_uc_cache_methods);
    ferrophp_uc_cache_ce = zend_register_internal_class_ex(&ce, NULL);
    ferrophp_uc_cache_ce->ce_flags |= ZEND_ACC_FINAL | ZEND_ACC_NO_DYNAMIC_PROPERTIES | ZEND_ACC_NOT_SERIALIZABLE;
}

zend_module_entry *ferrophp_uc_find_module(const char *name, size_t len) {
    return zend_hash_str_find_ptr(&module_registry, name, len);
}

HashTable *ferrophp_uc_persistent_array(uint32_t size, bool packed) {
    HashTable *ht = pemalloc(sizeof(HashTable), 1);
    zend_hash_init(ht, size, NULL, ZVAL_PTR_DTOR, 1);
    if (packed) {
        zend_hash_real_init_packed(ht);
    } else {
        zend_hash_real_init_mixed(ht);
    }
    return ht;
}

void ferrophp_uc_array_make_immutable(HashTable *ht) {
    HT_FLAGS(ht) |= HASH_FLAG_STATIC_KEYS;
    GC_SET_REFCOUNT(ht, 2);
    GC_TYPE_INFO(ht) = GC_ARRAY | ((IS_ARRAY_IMMUTABLE | GC_NOT_COLLECTABLE) << GC_FLAGS_SHIFT);
}

void ferrophp_uc_persistent_array_free(HashTable *ht) {
    if (!(HT_FLAGS(ht) & HASH_FLAG_UNINITIALIZED)) {
        pefree(HT_GET_DATA_ADDR(ht), 1);
    }
    pefree(ht, 1);
}

bool ferrophp_uc_array_is_packed(const HashTable *ht) { return HT_IS_PACKED(ht); }

zend_string *ferrophp_uc_permanent_string_at(void *mem, const char *str, size_t len, zend_ulong h) {
    zend_string *s = (zend_string *)mem;
    GC_SET_REFCOUNT(s, 1);
    GC_TYPE_INFO(s) = GC_STRING | ((IS_STR_INTERNED | IS_STR_PERSISTENT | IS_STR_PERMANENT) << GC_FLAGS_SHIFT);
    ZSTR_LEN(s) = len;
    memcpy(ZSTR_VAL(s), str, len);
    ZSTR_VAL(s)[len] = '\0';
    ZSTR_H(s) = h ? h : zend_string_hash_func(s);
    return s;
}


zend_string *ferrophp_uc_request_string(const char *str, size_t len) {
    return zend_string_init(str, len, 0);
}

bool ferrophp_uc_numeric_key(const char *str, size_t len, zend_ulong *idx) {
    return ZEND_HANDLE_NUMERIC_STR(str, len, *idx);
}

void ferrophp_uc_assign_ref_bool(zval *ref, bool value) { ZEND_TRY_ASSIGN_REF_BOOL(ref, value); }

bool ferrophp_uc_call(zval *fn, zval *ret, uint32_t argc, zval *argv) {
    return call_user_function(NULL, NULL, fn, ret, argc, argv) == SUCCESS;
}

bool ferrophp_uc_is_callable(zval *zv) { return zend_is_callable(zv, 0, NULL); }

HashTable *ferrophp_uc_object_properties(zend_object *obj) { return obj->handlers->get_properties(obj); }

ptrdiff_t ferrophp_uc_property_offset(zend_class_entry *ce, zend_string *key) {
    zend_property_info *info;
    if (ZSTR_LEN(key) > 0 && ZSTR_VAL(key)[0] == '\0') {
        const char *class_name, *prop_name;
        size_t prop_name_len;
        if (zend_unmangle_property_name_ex(key, &class_name, &prop_name, &prop_name_len) != SUCCESS) {
            return -1;
        }
        zend_string *name = zend_string_init(prop_name, prop_name_len, 0);
        zend_class_entry *prev_scope = EG(fake_scope);
        if (class_name && class_name[0] != '*') {
            zend_string *cname = zend_string_init(class_name, strlen(class_name), 0);
            EG(fake_scope) = zend_lookup_class(cname);
            zend_string_release_ex(cname, 0);
        } else {
            EG(fake_scope) = ce;
        }
        info = zend_get_property_info(ce, name, 1);
        EG(fake_scope) = prev_scope;
        zend_string_release_ex(name, 0);
    } else {
        info = zend_get_property_info(ce, key, 1);
    }
    if (info == ZEND_WRONG_PROPERTY_INFO || info == NULL || (info->flags & ZEND_ACC_STATIC)) {
        return -1;
    }
    return (ptrdiff_t)info->offset;
}

zend_string *ferrophp_uc_enum_case_name(zend_object *obj) { return Z_STR_P(zend_enum_fetch_case_name(obj)); }

bool ferrophp_uc_class_has_method(zend_class_entry *ce, const char *lcname, size_t len) {
    return zend_hash_str_exists(&ce->function_table, lcname, len);
}

void ferrophp_uc_try_addref(zval *zv) { Z_TRY_ADDREF_P(zv); }

void ferrophp_uc_zval_dtor(zval *zv) { zval_ptr_dtor(zv); }

PHP_INI_BEGIN()
    PHP_INI_ENTRY("usercache.memory_limit", "64M", PHP_INI_SYSTEM, NULL)
    PHP_INI_ENTRY("usercache.retired_limit", "0", PHP_INI_SYSTEM, NULL)
    PHP_INI_ENTRY("usercache.entries_hint", "0", PHP_INI_SYSTEM, NULL)
    PHP_INI_ENTRY("usercache.apcu_compat", "1", PHP_INI_SYSTEM, NULL)
PHP_INI_END()

void ferrophp_uc_register_ini(int module_number) { int type = MODULE_PERSISTENT; REGISTER_INI_ENTRIES(); }
