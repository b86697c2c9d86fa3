/*
 * C side of the cache crate (ferrophp-cache), for its Rust (build.rs runs bindgen over
 * this file, naming php-sys's types) and its two C files: usercache.c (UserCache\Cache's
 * registration, the usercache.* ini entries, one small function per zval / hash / object
 * macro or static inline the Rust side needs) and apcu.c (the apcu_* layer's functions,
 * APCUIterator and constants). Arginfo and method tables are generated from
 * stubs/<name>.stub.php (scripts/gen-arginfo.sh); the bodies they name are Rust. No cache
 * logic lives here.
 */
#ifndef FERROPHP_USERCACHE_H
#define FERROPHP_USERCACHE_H

#include "php.h"
#include "zend_enum.h"

/* Frees an iterator's Rust state (free_obj of APCUIterator). */
void ferrophp_apcu_iterator_drop(void *state);

extern zend_class_entry *ferrophp_uc_cache_ce;
extern zend_class_entry *ferrophp_uc_exception_ce;

/* Registers UserCache\Cache and UserCache\Exception (extends RuntimeException), as
 * stubs/UserCache.stub.php declares them; sets the two pointers above. */
void ferrophp_uc_register_classes(void);
/* The APCu compatibility surface, when APCu itself is not loaded: the apc.* ini entries
 * (APCu's names and defaults), the apcu_* functions, the APCUIterator class (implements
 * Iterator; each object carries one Rust state pointer) and the APC_ITER_* / APC_LIST_*
 * constants. */
void ferrophp_uc_register_apcu(int module_number);
extern zend_class_entry *ferrophp_apcu_iterator_ce;
/* The state slot of an APCUIterator object (NULL when `obj` is not one). */
void **ferrophp_apcu_iterator_state(zval *obj);
/* The state slot of $this in a running APCUIterator method. */
void **ferrophp_apcu_iterator_this(zend_execute_data *execute_data);
/* php_error_docref(NULL, E_WARNING, "%s", msg): "func(): msg" like APCu's warnings. */
void ferrophp_uc_warning(const char *msg);
/* BG(serialize_lock) += delta. While it is non-zero, serialize()/unserialize() start a
 * context of their own instead of joining one in progress (an apcu_fetch from inside
 * Serializable::unserialize, APCu bug 76145). */
void ferrophp_uc_serialize_lock(int delta);
/* cfg_get_entry(name, len) != NULL: the entry was set in php.ini or with -d. */
bool ferrophp_uc_ini_configured(const char *name, size_t len);
/* zend_hash_str_find_ptr(&module_registry, name, len): the registered copy of a module. */
zend_module_entry *ferrophp_uc_find_module(const char *name, size_t len);

/* Persistent (malloc) hash table: pemalloc + zend_hash_init(persistent) + real init. */
HashTable *ferrophp_uc_persistent_array(uint32_t size, bool packed);
/* GC_SET_REFCOUNT(ht, 2); GC_TYPE_INFO = GC_ARRAY | (IS_ARRAY_IMMUTABLE|GC_NOT_COLLECTABLE);
 * HT_FLAGS |= HASH_FLAG_STATIC_KEYS. The engine then never writes to it. */
void ferrophp_uc_array_make_immutable(HashTable *ht);
/* pefree(HT_GET_DATA_ADDR(ht), 1) unless uninitialised, then pefree(ht, 1). Elements are
 * the caller's business. */
void ferrophp_uc_persistent_array_free(HashTable *ht);
/* HT_IS_PACKED(ht). */
bool ferrophp_uc_array_is_packed(const HashTable *ht);
/* Initialises a permanent (interned + persistent + permanent flagged) string with hash
 * `h` (0: compute it) in `mem`, which holds _ZSTR_STRUCT_SIZE(len) bytes aligned to 8. */
zend_string *ferrophp_uc_permanent_string_at(void *mem, const char *str, size_t len, zend_ulong h);
/* zend_string_init(str, len, 0). */
zend_string *ferrophp_uc_request_string(const char *str, size_t len);
/* ZEND_HANDLE_NUMERIC_STR: true (and *idx set) when the key is a canonical integer. */
bool ferrophp_uc_numeric_key(const char *str, size_t len, zend_ulong *idx);

/* ZEND_TRY_ASSIGN_REF_BOOL. */
void ferrophp_uc_assign_ref_bool(zval *ref, bool value);
/* call_user_function(NULL, NULL, fn, ret, argc, argv) == SUCCESS. */
bool ferrophp_uc_call(zval *fn, zval *ret, uint32_t argc, zval *argv);
/* zend_is_callable(zv, 0, NULL). */
bool ferrophp_uc_is_callable(zval *zv);
/* Z_OBJPROP: obj->handlers->get_properties(obj). */
HashTable *ferrophp_uc_object_properties(zend_object *obj);
/* The byte offset of the declared, non-static property slot that properties-table key
 * `key` (possibly mangled: "\0*\0name", "\0Class\0name") names in `ce`, resolved as
 * object_properties_load() does; -1 when it names no such slot (a dynamic property). */
ptrdiff_t ferrophp_uc_property_offset(zend_class_entry *ce, zend_string *key);
/* zend_enum_fetch_case_name. */
zend_string *ferrophp_uc_enum_case_name(zend_object *obj);
/* zend_hash_str_exists(&ce->function_table, lcname, len). */
bool ferrophp_uc_class_has_method(zend_class_entry *ce, const char *lcname, size_t len);
/* GC_ADDREF for any refcounted zval (Z_TRY_ADDREF). */
void ferrophp_uc_try_addref(zval *zv);
/* zval_ptr_dtor. */
void ferrophp_uc_zval_dtor(zval *zv);

/* PHP_INI_BEGIN table (usercache.*) + REGISTER_INI_ENTRIES for module_number. */
void ferrophp_uc_register_ini(int module_number);

#endif
