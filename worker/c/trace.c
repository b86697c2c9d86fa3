/* See trace.h: the Span object's layout and handlers, the class registration (from the
 * generated Trace_arginfo.h), and the two engine hooks. No tracing logic lives here. */
#include "php.h"
#include "zend_exceptions.h"
#include "zend_interfaces.h"
#include "zend_observer.h"
#include "ext/spl/spl_exceptions.h"
#include "trace.h"
#include "Trace_arginfo.h"

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

/* Private: Spans come from Trace::span() and Trace::server(). */
ZEND_METHOD(Ferrophp_Span, __construct) {
    ZEND_PARSE_PARAMETERS_NONE();
}

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
    ferrophp_trace_exception_ce = register_class_Ferrophp_TraceException(spl_ce_InvalidArgumentException);

    ferrophp_span_ce = register_class_Ferrophp_Span();
    ferrophp_span_ce->create_object = span_create;
    memcpy(&ferrophp_span_handlers, zend_get_std_object_handlers(), sizeof(zend_object_handlers));
    ferrophp_span_handlers.clone_obj = NULL;
    ferrophp_span_handlers.free_obj = span_free;
    ferrophp_span_handlers.offset = XtOffsetOf(ferrophp_span_object, std);

    ferrophp_trace_ce = register_class_Ferrophp_Trace();

    previous_throw_hook = zend_throw_exception_hook;
    zend_throw_exception_hook = throw_hook;
    zend_observer_error_register(observe_error);
}
