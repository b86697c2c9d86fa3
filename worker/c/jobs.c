/* See jobs.h: the Job object's layout and handlers, the class registration (from the
 * generated Jobs_arginfo.h), payload serialize/unserialize. No queue logic lives here. */
#include "php.h"
#include "zend_closures.h"
#include "zend_exceptions.h"
#include "zend_smart_str.h"
#include "ext/standard/php_var.h"
#include "ext/spl/spl_exceptions.h"
#include "jobs.h"
#include "Jobs_arginfo.h"

zend_class_entry *ferrophp_jobs_ce;
zend_class_entry *ferrophp_job_ce;
zend_class_entry *ferrophp_background_ce;
zend_class_entry *ferrophp_jobs_exception_ce;

static zend_object_handlers ferrophp_job_handlers;

typedef struct {
    uint64_t key;
    zend_object std;
} ferrophp_job_object;

static inline ferrophp_job_object *job_from(zend_object *obj) {
    return (ferrophp_job_object *)((char *)obj - XtOffsetOf(ferrophp_job_object, std));
}

static zend_object *job_new(zend_class_entry *ce) {
    ferrophp_job_object *job = zend_object_alloc(sizeof(ferrophp_job_object), ce);
    job->key = 0;
    zend_object_std_init(&job->std, ce);
    object_properties_init(&job->std, ce);
    job->std.handlers = &ferrophp_job_handlers;
    return &job->std;
}

static void job_free(zend_object *obj) {
    ferrophp_job_object *job = job_from(obj);
    if (job->key != 0) {
        uint64_t key = job->key;
        job->key = 0;
        ferrophp_job_released(key);
    }
    zend_object_std_dtor(obj);
}

/* Private: Jobs come from Jobs::take(). */
ZEND_METHOD(Ferrophp_Job, __construct) {
    ZEND_PARSE_PARAMETERS_NONE();
}

void ferrophp_jobs_register_classes(void) {
    ferrophp_jobs_exception_ce = register_class_Ferrophp_JobsException(spl_ce_RuntimeException);
    ferrophp_jobs_ce = register_class_Ferrophp_Jobs();
    ferrophp_job_ce = register_class_Ferrophp_Job();
    ferrophp_job_ce->create_object = job_new;
    memcpy(&ferrophp_job_handlers, zend_get_std_object_handlers(), sizeof(zend_object_handlers));
    ferrophp_job_handlers.clone_obj = NULL;
    ferrophp_job_handlers.free_obj = job_free;
    ferrophp_job_handlers.offset = XtOffsetOf(ferrophp_job_object, std);
    ferrophp_background_ce = register_class_Ferrophp_Background();
}

/* Finds a resource or a closure inside `value` (arrays and objects' properties, to a
 * depth of 64; recursion through references stops there too): the path to it in `path`. */
static const char *find_unstorable(zval *value, smart_str *path, int depth) {
    ZVAL_DEREF(value);
    if (Z_TYPE_P(value) == IS_RESOURCE) {
        return "a resource";
    }
    if (depth > 64) {
        return NULL;
    }
    HashTable *ht = NULL;
    if (Z_TYPE_P(value) == IS_OBJECT) {
        if (Z_OBJCE_P(value) == zend_ce_closure) {
            return "a closure";
        }
        /* An object that decides what it stores (__serialize, __sleep, Serializable) is
         * left to serialize(), which throws for what it refuses. */
        zend_class_entry *ce = Z_OBJCE_P(value);
        if (ce->__serialize || ce->serialize || zend_hash_str_exists(&ce->function_table, "__sleep", sizeof("__sleep") - 1)) {
            return NULL;
        }
        ht = Z_OBJPROP_P(value);
    } else if (Z_TYPE_P(value) == IS_ARRAY) {
        ht = Z_ARRVAL_P(value);
    }
    if (ht == NULL || (GC_FLAGS(ht) & GC_PROTECTED)) {
        return NULL;
    }
    zend_string *key;
    zend_ulong index;
    zval *item;
    const char *found = NULL;
    GC_TRY_PROTECT_RECURSION(ht);
    ZEND_HASH_FOREACH_KEY_VAL(ht, index, key, item) {
        size_t before = path->s ? ZSTR_LEN(path->s) : 0;
        if (key) {
            smart_str_appendc(path, '[');
            smart_str_appendl(path, ZSTR_VAL(key), ZSTR_LEN(key));
            smart_str_appendc(path, ']');
        } else {
            smart_str_appendc(path, '[');
            smart_str_append_long(path, (zend_long)index);
            smart_str_appendc(path, ']');
        }
        found = find_unstorable(item, path, depth + 1);
        if (found) {
            break;
        }
        if (path->s) {
            ZSTR_LEN(path->s) = before;
        }
    } ZEND_HASH_FOREACH_END();
    GC_TRY_UNPROTECT_RECURSION(ht);
    return found;
}

zend_string *ferrophp_jobs_serialize(zval *value) {
    smart_str path = {0};
    const char *found = find_unstorable(value, &path, 0);
    if (found) {
        smart_str_0(&path);
        zend_throw_exception_ex(ferrophp_jobs_exception_ce, 0,
            "job payloads are stored with serialize(): the payload%s is %s, which cannot be stored",
            path.s ? ZSTR_VAL(path.s) : "", found);
        smart_str_free(&path);
        return NULL;
    }
    smart_str_free(&path);
    smart_str buf = {0};
    php_serialize_data_t var_hash;
    PHP_VAR_SERIALIZE_INIT(var_hash);
    php_var_serialize(&buf, value, &var_hash);
    PHP_VAR_SERIALIZE_DESTROY(var_hash);
    if (EG(exception)) {
        smart_str_free(&buf);
        return NULL;
    }
    if (!buf.s) {
        return ZSTR_EMPTY_ALLOC();
    }
    return smart_str_extract(&buf);
}

void ferrophp_jobs_string_release(zend_string *s) {
    zend_string_release(s);
}

void ferrophp_job_create(zval *rv, uint64_t key, const char *id, size_t id_len,
                         const char *queue, size_t queue_len,
                         const char *payload, size_t payload_len, zend_long attempts) {
    object_init_ex(rv, ferrophp_job_ce);
    zend_object *obj = Z_OBJ_P(rv);
    job_from(obj)->key = key;
    zval value;
    const unsigned char *p = (const unsigned char *)payload;
    php_unserialize_data_t var_hash;
    PHP_VAR_UNSERIALIZE_INIT(var_hash);
    /* As unserialize() does: the value lives in var_hash's temporaries until copied. */
    zval *tmp = var_tmp_var(&var_hash);
    if (php_var_unserialize(tmp, &p, p + payload_len, &var_hash)) {
        ZVAL_COPY(&value, tmp);
    } else {
        ZVAL_FALSE(&value);
        if (!EG(exception)) {
            php_error_docref(NULL, E_WARNING, "job %.*s: its payload could not be unserialized", (int)id_len, id);
        }
    }
    PHP_VAR_UNSERIALIZE_DESTROY(var_hash);
    zend_update_property_stringl(ferrophp_job_ce, obj, "id", sizeof("id") - 1, id, id_len);
    zend_update_property_stringl(ferrophp_job_ce, obj, "queue", sizeof("queue") - 1, queue, queue_len);
    zend_update_property(ferrophp_job_ce, obj, "payload", sizeof("payload") - 1, &value);
    zend_update_property_long(ferrophp_job_ce, obj, "attempts", sizeof("attempts") - 1, attempts);
    zval_ptr_dtor(&value);
}

uint64_t *ferrophp_job_this(zend_execute_data *execute_data) {
    zval *this = &EX(This);
    if (Z_TYPE_P(this) != IS_OBJECT || Z_OBJCE_P(this) != ferrophp_job_ce) {
        return NULL;
    }
    return &job_from(Z_OBJ_P(this))->key;
}

void ferrophp_background_untimed(void) {
    zend_string *name = zend_string_init("max_execution_time", sizeof("max_execution_time") - 1, 0);
    zend_alter_ini_entry_chars(name, "0", 1, PHP_INI_SYSTEM, PHP_INI_STAGE_RUNTIME);
    zend_string_release(name);
}
