/* apcu.c: the C side of the built-in apcu_* layer (cache/src/apcu.rs): APCUIterator's
 * object (one Rust state pointer before the zend_object), the apc.* ini entries, and the
 * registration of the functions, the class and the APC_* constants, whose arginfo and
 * tables are generated from stubs/apcu.stub.php. No cache logic here. */
#include "php.h"
#include "zend_interfaces.h"
#include "usercache.h"

/* APCu's own apcu.so defines zif_apcu_* and zim_APCUIterator_* too. A user may load it
 * (this layer then steps aside), and a binary with libphp linked in exports every symbol
 * (--export-dynamic) so that extensions bind to the engine: apcu.so's function table would
 * then bind to our bodies instead of its own. So the generated table names this layer's
 * bodies with a prefix, and Rust defines ferrophp_zif_apcu_* / ferrophp_zim_APCUIterator_*. */
#undef ZEND_FUNCTION
#define ZEND_FUNCTION(name) ZEND_NAMED_FUNCTION(ferrophp_zif_##name)
#undef ZEND_FE
#define ZEND_FE(name, arg_info) ZEND_RAW_FENTRY(#name, ferrophp_zif_##name, arg_info, 0)
#undef ZEND_METHOD
#define ZEND_METHOD(classname, name) ZEND_NAMED_FUNCTION(ferrophp_zim_##classname##_##name)
#undef ZEND_ME
#define ZEND_ME(classname, name, arg_info, flags) \
    ZEND_RAW_FENTRY(#name, ferrophp_zim_##classname##_##name, arg_info, flags)
#include "apcu_arginfo.h"

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

/* apc.* ini entries as APCu 5.1.22 declares them (names, defaults, scopes): read by code
 * that checks for APCu (ini_get('apc.enabled')) and by our layer. */
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
    zend_register_ini_entries_ex(ferrophp_apc_ini_entries, module_number, MODULE_PERSISTENT);
    zend_register_functions(NULL, ext_functions, NULL, MODULE_PERSISTENT);

    ferrophp_apcu_iterator_ce = register_class_APCUIterator(zend_ce_iterator);
    ferrophp_apcu_iterator_ce->create_object = apcu_iterator_create;
    memcpy(&ferrophp_apcu_iterator_handlers, zend_get_std_object_handlers(), sizeof(zend_object_handlers));
    ferrophp_apcu_iterator_handlers.clone_obj = NULL;
    ferrophp_apcu_iterator_handlers.free_obj = apcu_iterator_free;
    ferrophp_apcu_iterator_handlers.offset = XtOffsetOf(ferrophp_apcu_iterator, std);

    register_apcu_symbols(module_number);
}

