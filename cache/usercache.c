/* See usercache.h: UserCache\Cache's registration (its arginfo and method table are
 * generated from stubs/UserCache.stub.php), the usercache.* ini entries, and one small
 * function per macro; no cache logic here. The apcu_* layer's tables are apcu.c's. */
#include "php.h"
#include "zend_exceptions.h"
#include "zend_enum.h"
#include "zend_interfaces.h"
#include "ext/spl/spl_exceptions.h"
#include "php_ini.h"
#include "ext/standard/basic_functions.h"
#include "usercache.h"
#include "UserCache_arginfo.h"

zend_class_entry *ferrophp_uc_cache_ce;
zend_class_entry *ferrophp_uc_exception_ce;

void ferrophp_uc_serialize_lock(int delta) { BG(serialize_lock) += delta; }

void ferrophp_uc_warning(const char *msg) { php_error_docref(NULL, E_WARNING, "%s", msg); }

bool ferrophp_uc_ini_configured(const char *name, size_t len) { return cfg_get_entry(name, len) != NULL; }

void ferrophp_uc_register_classes(void) {
    ferrophp_uc_exception_ce = register_class_UserCache_Exception(spl_ce_RuntimeException);
    ferrophp_uc_cache_ce = register_class_UserCache_Cache();
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
