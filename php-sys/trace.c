/* See trace.h: arginfo tables, the Span object's layout and handlers, and the two engine
 * hooks. No tracing logic lives here. */
#include "php.h"
#include "zend_exceptions.h"
#include "zend_interfaces.h"
#include "zend_observer.h"
#include "ext/spl/spl_exceptions.h"
#include "trace.h"

zend_class_entry *ferrophp_trace_ce;
zend_class_entry *ferrophp_span_ce;
zend_class_entry *ferrophp_trace_exception_ce;

static zend_object_handlers ferrophp_span_handlers;

typedef struct {
    ferrophp_span_ref ref;
    zend_object std;
} ferrophp_span_object;

static inline ferrophp_span_object *span_from(zend_object *obj) {
    return (ferrophp_span_object *)((char *)obj - XtOffsetOf(ferrophp_span_object, std));
}

static zend_object *span_create(zend_class_entry *ce) {
    ferrophp_span_object *span = zend_object_alloc(sizeof(ferrophp_span_object), ce);
    memset(&span->ref, 0, sizeof(span->ref));
    zend_object_std_init(&span->std, ce);
    object_properties_init(&span->std, ce);
    span->std.handlers = &ferrophp_span_handlers;
    return &span->std;
}

static void span_free(zend_object *obj) {
    ferrophp_span_object *span = span_from(obj);
    if (span->ref.generation != 0) {
        bool unwinding = EG(exception) != NULL && !zend_is_unwind_exit(EG(exception));
        ferrophp_trace_span_released(&span->ref, unwinding);
    }
    zend_object_std_dtor(obj);
}

ferrophp_span_ref *ferrophp_span_create(zval *rv) {
    object_init_ex(rv, ferrophp_span_ce);
    return &span_from(Z_OBJ_P(rv))->ref;
}

ferrophp_span_ref *ferrophp_span_this(zend_execute_data *execute_data) {
    zval *this = &EX(This);
    if (Z_TYPE_P(this) != IS_OBJECT || Z_OBJCE_P(this) != ferrophp_span_ce) {
        return NULL;
    }
    return &span_from(Z_OBJ_P(this))->ref;
}

void ferrophp_span_return_this(zend_execute_data *execute_data, zval *return_value) {
    ZVAL_OBJ_COPY(return_value, Z_OBJ(EX(This)));
}

/* ---- arginfo (matches worker/stubs/Trace.php) ---- */

ZEND_BEGIN_ARG_WITH_RETURN_OBJ_INFO_EX(arginfo_trace_span, 0, 1, Ferrophp\\Span, 0)
    ZEND_ARG_TYPE_INFO(0, name, IS_STRING, 0)
    ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, attributes, IS_ARRAY, 0, "[]")
    ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, kind, IS_LONG, 0, "Ferrophp\\Span::KIND_INTERNAL")
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_trace_nullable_string, 0, 0, IS_STRING, 1)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_trace_bool, 0, 0, _IS_BOOL, 0)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_OBJ_INFO_EX(arginfo_trace_server, 0, 0, Ferrophp\\Span, 0)
ZEND_END_ARG_INFO()

#define TRACE_ME(name, fn, arginfo) ZEND_RAW_FENTRY(name, fn, arginfo, ZEND_ACC_PUBLIC | ZEND_ACC_STATIC)

static const zend_function_entry ferrophp_trace_methods[] = {
    TRACE_ME("span", ferrophp_trace_span, arginfo_trace_span)
    TRACE_ME("traceparent", ferrophp_trace_traceparent, arginfo_trace_nullable_string)
    TRACE_ME("tracestate", ferrophp_trace_tracestate, arginfo_trace_nullable_string)
    TRACE_ME("traceId", ferrophp_trace_trace_id, arginfo_trace_nullable_string)
    TRACE_ME("isSampled", ferrophp_trace_is_sampled, arginfo_trace_bool)
    TRACE_ME("server", ferrophp_trace_server, arginfo_trace_server)
    ZEND_FE_END
};

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_span_set_attribute, 0, 2, IS_STATIC, 0)
    ZEND_ARG_TYPE_INFO(0, key, IS_STRING, 0)
    ZEND_ARG_TYPE_INFO(0, value, IS_MIXED, 0)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_span_set_attributes, 0, 1, IS_STATIC, 0)
    ZEND_ARG_TYPE_INFO(0, attributes, IS_ARRAY, 0)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_span_add_event, 0, 1, IS_STATIC, 0)
    ZEND_ARG_TYPE_INFO(0, name, IS_STRING, 0)
    ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, attributes, IS_ARRAY, 0, "[]")
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_span_record_exception, 0, 1, IS_STATIC, 0)
    ZEND_ARG_OBJ_INFO(0, exception, Throwable, 0)
    ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, attributes, IS_ARRAY, 0, "[]")
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_span_set_status, 0, 1, IS_STATIC, 0)
    ZEND_ARG_TYPE_INFO(0, code, IS_LONG, 0)
    ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, description, IS_STRING, 0, "\"\"")
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_span_update_name, 0, 1, IS_STATIC, 0)
    ZEND_ARG_TYPE_INFO(0, name, IS_STRING, 0)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_span_void, 0, 0, IS_VOID, 0)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_span_string, 0, 0, IS_STRING, 0)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_INFO_EX(arginfo_span_construct, 0, 0, 0)
ZEND_END_ARG_INFO()

static ZEND_FUNCTION(ferrophp_span_construct) {
    /* Private: Spans come from Trace::span() and Trace::server(). */
    ZEND_PARSE_PARAMETERS_NONE();
}

#define SPAN_ME(name, fn, arginfo) ZEND_RAW_FENTRY(name, fn, arginfo, ZEND_ACC_PUBLIC)

static const zend_function_entry ferrophp_span_methods[] = {
    ZEND_RAW_FENTRY("__construct", zif_ferrophp_span_construct, arginfo_span_construct, ZEND_ACC_PRIVATE)
    SPAN_ME("setAttribute", ferrophp_span_set_attribute, arginfo_span_set_attribute)
    SPAN_ME("setAttributes", ferrophp_span_set_attributes, arginfo_span_set_attributes)
    SPAN_ME("addEvent", ferrophp_span_add_event, arginfo_span_add_event)
    SPAN_ME("recordException", ferrophp_span_record_exception, arginfo_span_record_exception)
    SPAN_ME("setStatus", ferrophp_span_set_status, arginfo_span_set_status)
    SPAN_ME("updateName", ferrophp_span_update_name, arginfo_span_update_name)
    SPAN_ME("end", ferrophp_span_end, arginfo_span_void)
    SPAN_ME("isRecording", ferrophp_span_is_recording, arginfo_trace_bool)
    SPAN_ME("traceId", ferrophp_span_trace_id, arginfo_span_string)
    SPAN_ME("spanId", ferrophp_span_span_id, arginfo_span_string)
    SPAN_ME("traceparent", ferrophp_span_traceparent, arginfo_trace_nullable_string)
    ZEND_FE_END
};

/* ---- engine hooks ---- */

static void (*previous_throw_hook)(zend_object *ex);

static void describe_to_on_throw(void *ctx, const char *cls, size_t cls_len,
                                 const char *msg, size_t msg_len,
                                 const char *trace, size_t trace_len) {
    (void)ctx; (void)trace; (void)trace_len;
    ferrophp_trace_on_throw(cls, cls_len, msg, msg_len);
}

static void throw_hook(zend_object *ex) {
    if (ex && ferrophp_trace_records()) {
        zval zv;
        ZVAL_OBJ(&zv, ex);
        ferrophp_trace_describe_throwable(&zv, false, describe_to_on_throw, NULL);
    }
    if (previous_throw_hook) {
        previous_throw_hook(ex);
    }
}

static void observe_error(int type, zend_string *file, uint32_t line, zend_string *message) {
    (void)file; (void)line;
    ferrophp_trace_on_error(type, ZSTR_VAL(message), ZSTR_LEN(message));
}

bool ferrophp_trace_describe_throwable(zval *zv, bool with_trace, ferrophp_throwable_cb cb, void *ctx) {
    if (Z_TYPE_P(zv) != IS_OBJECT || !instanceof_function(Z_OBJCE_P(zv), zend_ce_throwable)) {
        return false;
    }
    zend_object *ex = Z_OBJ_P(zv);
    zend_class_entry *base = instanceof_function(ex->ce, zend_ce_exception) ? zend_ce_exception : zend_ce_error;
    zval rv, trace;
    /* Silent reads: a property unset by the script is an empty message, not a warning. */
    zval *message = zend_read_property_ex(base, ex, ZSTR_KNOWN(ZEND_STR_MESSAGE), 1, &rv);
    const char *msg = "";
    size_t msg_len = 0;
    if (message && Z_TYPE_P(message) == IS_STRING) {
        msg = Z_STRVAL_P(message);
        msg_len = Z_STRLEN_P(message);
    }
    ZVAL_UNDEF(&trace);
    if (with_trace && !EG(exception)) {
        zend_call_method_with_0_params(ex, ex->ce, NULL, "gettraceasstring", &trace);
    }
    if (Z_TYPE(trace) == IS_STRING) {
        cb(ctx, ZSTR_VAL(ex->ce->name), ZSTR_LEN(ex->ce->name), msg, msg_len, Z_STRVAL(trace), Z_STRLEN(trace));
    } else {
        cb(ctx, ZSTR_VAL(ex->ce->name), ZSTR_LEN(ex->ce->name), msg, msg_len, "", 0);
    }
    zval_ptr_dtor(&trace);
    return true;
}

void ferrophp_trace_register_classes(void) {
    zend_class_entry ce;
    INIT_NS_CLASS_ENTRY(ce, "Ferrophp", "TraceException", NULL);
    ferrophp_trace_exception_ce = zend_register_internal_class_ex(&ce, spl_ce_InvalidArgumentException);

    INIT_NS_CLASS_ENTRY(ce, "Ferrophp", "Span", ferrophp_span_methods);
    ferrophp_span_ce = zend_register_internal_class_ex(&ce, NULL);
    ferrophp_span_ce->ce_flags |= ZEND_ACC_FINAL | ZEND_ACC_NO_DYNAMIC_PROPERTIES | ZEND_ACC_NOT_SERIALIZABLE;
    ferrophp_span_ce->create_object = span_create;
    memcpy(&ferrophp_span_handlers, zend_get_std_object_handlers(), sizeof(zend_object_handlers));
    ferrophp_span_handlers.clone_obj = NULL;
    ferrophp_span_handlers.free_obj = span_free;
    ferrophp_span_handlers.offset = XtOffsetOf(ferrophp_span_object, std);
    zend_declare_class_constant_long(ferrophp_span_ce, "KIND_INTERNAL", sizeof("KIND_INTERNAL") - 1, 1);
    zend_declare_class_constant_long(ferrophp_span_ce, "KIND_SERVER", sizeof("KIND_SERVER") - 1, 2);
    zend_declare_class_constant_long(ferrophp_span_ce, "KIND_CLIENT", sizeof("KIND_CLIENT") - 1, 3);
    zend_declare_class_constant_long(ferrophp_span_ce, "KIND_PRODUCER", sizeof("KIND_PRODUCER") - 1, 4);
    zend_declare_class_constant_long(ferrophp_span_ce, "KIND_CONSUMER", sizeof("KIND_CONSUMER") - 1, 5);
    zend_declare_class_constant_long(ferrophp_span_ce, "STATUS_UNSET", sizeof("STATUS_UNSET") - 1, 0);
    zend_declare_class_constant_long(ferrophp_span_ce, "STATUS_OK", sizeof("STATUS_OK") - 1, 1);
    zend_declare_class_constant_long(ferrophp_span_ce, "STATUS_ERROR", sizeof("STATUS_ERROR") - 1, 2);

    INIT_NS_CLASS_ENTRY(ce, "Ferrophp", "Trace", ferrophp_trace_methods);
    ferrophp_trace_ce = zend_register_internal_class_ex(&ce, NULL);
    ferrophp_trace_ce->ce_flags |= ZEND_ACC_FINAL | ZEND_ACC_NO_DYNAMIC_PROPERTIES | ZEND_ACC_NOT_SERIALIZABLE;

    previous_throw_hook = zend_throw_exception_hook;
    zend_throw_exception_hook = throw_hook;
    zend_observer_error_register(observe_error);
}
