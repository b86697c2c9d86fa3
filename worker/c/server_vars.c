/* server_vars.c: the $_SERVER template (worker/src/server_vars/environment.rs builds it):
 * a persistent array of permanent interned strings that every request's $_SERVER starts
 * from as one block copy. The hash and flag macros it needs, one small function each. */
#include "worker.h"

HashTable *ferrophp_server_template_new(uint32_t capacity) {
    HashTable *ht = pemalloc(sizeof(HashTable), 1);
    zend_hash_init(ht, capacity, NULL, NULL, 1);
    zend_hash_real_init_mixed(ht);
    return ht;
}

void ferrophp_server_template_add(HashTable *ht, zend_string *key, zend_string *value) {
    zval zv;
    ZVAL_INTERNED_STR(&zv, value);
    zend_hash_update(ht, key, &zv);
}

void ferrophp_server_template_seal(HashTable *ht) {
    /* Every key and value is a permanent interned string, so nothing in it is
     * refcounted: zend_array_dup may copy it as one block, as it copies OPcache's
     * immutable arrays, and no thread ever writes to it again. */
    GC_ADD_FLAGS(ht, IS_ARRAY_IMMUTABLE);
}

void ferrophp_server_start_from(zval *track_vars, HashTable *template) {
    zval_ptr_dtor(track_vars);
    ZVAL_ARR(track_vars, zend_array_dup(template));
}
