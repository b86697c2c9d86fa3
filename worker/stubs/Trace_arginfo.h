/* This is a generated file, edit the .stub.php file instead.
 * Stub hash: 12e38a01eff41b63ce593776a6ecf233b58a2e19 */

ZEND_BEGIN_ARG_WITH_RETURN_OBJ_INFO_EX(arginfo_class_Ferrophp_Trace_span, 0, 1, Ferrophp\\Span, 0)
	ZEND_ARG_TYPE_INFO(0, name, IS_STRING, 0)
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, attributes, IS_ARRAY, 0, "[]")
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, kind, IS_LONG, 0, "Ferrophp\\Span::KIND_INTERNAL")
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_class_Ferrophp_Trace_traceparent, 0, 0, IS_STRING, 1)
ZEND_END_ARG_INFO()

#define arginfo_class_Ferrophp_Trace_tracestate arginfo_class_Ferrophp_Trace_traceparent

#define arginfo_class_Ferrophp_Trace_traceId arginfo_class_Ferrophp_Trace_traceparent

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_class_Ferrophp_Trace_isSampled, 0, 0, _IS_BOOL, 0)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_OBJ_INFO_EX(arginfo_class_Ferrophp_Trace_server, 0, 0, Ferrophp\\Span, 0)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_INFO_EX(arginfo_class_Ferrophp_Span___construct, 0, 0, 0)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_class_Ferrophp_Span_setAttribute, 0, 2, IS_STATIC, 0)
	ZEND_ARG_TYPE_INFO(0, key, IS_STRING, 0)
	ZEND_ARG_TYPE_INFO(0, value, IS_MIXED, 0)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_class_Ferrophp_Span_setAttributes, 0, 1, IS_STATIC, 0)
	ZEND_ARG_TYPE_INFO(0, attributes, IS_ARRAY, 0)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_class_Ferrophp_Span_addEvent, 0, 1, IS_STATIC, 0)
	ZEND_ARG_TYPE_INFO(0, name, IS_STRING, 0)
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, attributes, IS_ARRAY, 0, "[]")
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_class_Ferrophp_Span_recordException, 0, 1, IS_STATIC, 0)
	ZEND_ARG_OBJ_INFO(0, exception, Throwable, 0)
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, attributes, IS_ARRAY, 0, "[]")
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_class_Ferrophp_Span_setStatus, 0, 1, IS_STATIC, 0)
	ZEND_ARG_TYPE_INFO(0, code, IS_LONG, 0)
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, description, IS_STRING, 0, "\"\"")
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_class_Ferrophp_Span_updateName, 0, 1, IS_STATIC, 0)
	ZEND_ARG_TYPE_INFO(0, name, IS_STRING, 0)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_class_Ferrophp_Span_end, 0, 0, IS_VOID, 0)
ZEND_END_ARG_INFO()

#define arginfo_class_Ferrophp_Span_isRecording arginfo_class_Ferrophp_Trace_isSampled

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_class_Ferrophp_Span_traceId, 0, 0, IS_STRING, 0)
ZEND_END_ARG_INFO()

#define arginfo_class_Ferrophp_Span_spanId arginfo_class_Ferrophp_Span_traceId

#define arginfo_class_Ferrophp_Span_traceparent arginfo_class_Ferrophp_Trace_traceparent


ZEND_METHOD(Ferrophp_Trace, span);
ZEND_METHOD(Ferrophp_Trace, traceparent);
ZEND_METHOD(Ferrophp_Trace, tracestate);
ZEND_METHOD(Ferrophp_Trace, traceId);
ZEND_METHOD(Ferrophp_Trace, isSampled);
ZEND_METHOD(Ferrophp_Trace, server);
ZEND_METHOD(Ferrophp_Span, __construct);
ZEND_METHOD(Ferrophp_Span, setAttribute);
ZEND_METHOD(Ferrophp_Span, setAttributes);
ZEND_METHOD(Ferrophp_Span, addEvent);
ZEND_METHOD(Ferrophp_Span, recordException);
ZEND_METHOD(Ferrophp_Span, setStatus);
ZEND_METHOD(Ferrophp_Span, updateName);
ZEND_METHOD(Ferrophp_Span, end);
ZEND_METHOD(Ferrophp_Span, isRecording);
ZEND_METHOD(Ferrophp_Span, traceId);
ZEND_METHOD(Ferrophp_Span, spanId);
ZEND_METHOD(Ferrophp_Span, traceparent);


static const zend_function_entry class_Ferrophp_TraceException_methods[] = {
	ZEND_FE_END
};


static const zend_function_entry class_Ferrophp_Trace_methods[] = {
	ZEND_ME(Ferrophp_Trace, span, arginfo_class_Ferrophp_Trace_span, ZEND_ACC_PUBLIC|ZEND_ACC_STATIC)
	ZEND_ME(Ferrophp_Trace, traceparent, arginfo_class_Ferrophp_Trace_traceparent, ZEND_ACC_PUBLIC|ZEND_ACC_STATIC)
	ZEND_ME(Ferrophp_Trace, tracestate, arginfo_class_Ferrophp_Trace_tracestate, ZEND_ACC_PUBLIC|ZEND_ACC_STATIC)
	ZEND_ME(Ferrophp_Trace, traceId, arginfo_class_Ferrophp_Trace_traceId, ZEND_ACC_PUBLIC|ZEND_ACC_STATIC)
	ZEND_ME(Ferrophp_Trace, isSampled, arginfo_class_Ferrophp_Trace_isSampled, ZEND_ACC_PUBLIC|ZEND_ACC_STATIC)
	ZEND_ME(Ferrophp_Trace, server, arginfo_class_Ferrophp_Trace_server, ZEND_ACC_PUBLIC|ZEND_ACC_STATIC)
	ZEND_FE_END
};


static const zend_function_entry class_Ferrophp_Span_methods[] = {
	ZEND_ME(Ferrophp_Span, __construct, arginfo_class_Ferrophp_Span___construct, ZEND_ACC_PRIVATE)
	ZEND_ME(Ferrophp_Span, setAttribute, arginfo_class_Ferrophp_Span_setAttribute, ZEND_ACC_PUBLIC)
	ZEND_ME(Ferrophp_Span, setAttributes, arginfo_class_Ferrophp_Span_setAttributes, ZEND_ACC_PUBLIC)
	ZEND_ME(Ferrophp_Span, addEvent, arginfo_class_Ferrophp_Span_addEvent, ZEND_ACC_PUBLIC)
	ZEND_ME(Ferrophp_Span, recordException, arginfo_class_Ferrophp_Span_recordException, ZEND_ACC_PUBLIC)
	ZEND_ME(Ferrophp_Span, setStatus, arginfo_class_Ferrophp_Span_setStatus, ZEND_ACC_PUBLIC)
	ZEND_ME(Ferrophp_Span, updateName, arginfo_class_Ferrophp_Span_updateName, ZEND_ACC_PUBLIC)
	ZEND_ME(Ferrophp_Span, end, arginfo_class_Ferrophp_Span_end, ZEND_ACC_PUBLIC)
	ZEND_ME(Ferrophp_Span, isRecording, arginfo_class_Ferrophp_Span_isRecording, ZEND_ACC_PUBLIC)
	ZEND_ME(Ferrophp_Span, traceId, arginfo_class_Ferrophp_Span_traceId, ZEND_ACC_PUBLIC)
	ZEND_ME(Ferrophp_Span, spanId, arginfo_class_Ferrophp_Span_spanId, ZEND_ACC_PUBLIC)
	ZEND_ME(Ferrophp_Span, traceparent, arginfo_class_Ferrophp_Span_traceparent, ZEND_ACC_PUBLIC)
	ZEND_FE_END
};

static zend_class_entry *register_class_Ferrophp_TraceException(zend_class_entry *class_entry_InvalidArgumentException)
{
	zend_class_entry ce, *class_entry;

	INIT_NS_CLASS_ENTRY(ce, "Ferrophp", "TraceException", class_Ferrophp_TraceException_methods);
	class_entry = zend_register_internal_class_ex(&ce, class_entry_InvalidArgumentException);

	return class_entry;
}

static zend_class_entry *register_class_Ferrophp_Trace(void)
{
	zend_class_entry ce, *class_entry;

	INIT_NS_CLASS_ENTRY(ce, "Ferrophp", "Trace", class_Ferrophp_Trace_methods);
	class_entry = zend_register_internal_class_ex(&ce, NULL);
	class_entry->ce_flags |= ZEND_ACC_FINAL|ZEND_ACC_NO_DYNAMIC_PROPERTIES|ZEND_ACC_NOT_SERIALIZABLE;

	return class_entry;
}

static zend_class_entry *register_class_Ferrophp_Span(void)
{
	zend_class_entry ce, *class_entry;

	INIT_NS_CLASS_ENTRY(ce, "Ferrophp", "Span", class_Ferrophp_Span_methods);
	class_entry = zend_register_internal_class_ex(&ce, NULL);
	class_entry->ce_flags |= ZEND_ACC_FINAL|ZEND_ACC_NO_DYNAMIC_PROPERTIES|ZEND_ACC_NOT_SERIALIZABLE;

	zval const_KIND_INTERNAL_value;
	ZVAL_LONG(&const_KIND_INTERNAL_value, 1);
	zend_string *const_KIND_INTERNAL_name = zend_string_init_interned("KIND_INTERNAL", sizeof("KIND_INTERNAL") - 1, 1);
	zend_declare_class_constant_ex(class_entry, const_KIND_INTERNAL_name, &const_KIND_INTERNAL_value, ZEND_ACC_PUBLIC, NULL);
	zend_string_release(const_KIND_INTERNAL_name);

	zval const_KIND_SERVER_value;
	ZVAL_LONG(&const_KIND_SERVER_value, 2);
	zend_string *const_KIND_SERVER_name = zend_string_init_interned("KIND_SERVER", sizeof("KIND_SERVER") - 1, 1);
	zend_declare_class_constant_ex(class_entry, const_KIND_SERVER_name, &const_KIND_SERVER_value, ZEND_ACC_PUBLIC, NULL);
	zend_string_release(const_KIND_SERVER_name);

	zval const_KIND_CLIENT_value;
	ZVAL_LONG(&const_KIND_CLIENT_value, 3);
	zend_string *const_KIND_CLIENT_name = zend_string_init_interned("KIND_CLIENT", sizeof("KIND_CLIENT") - 1, 1);
	zend_declare_class_constant_ex(class_entry, const_KIND_CLIENT_name, &const_KIND_CLIENT_value, ZEND_ACC_PUBLIC, NULL);
	zend_string_release(const_KIND_CLIENT_name);

	zval const_KIND_PRODUCER_value;
	ZVAL_LONG(&const_KIND_PRODUCER_value, 4);
	zend_string *const_KIND_PRODUCER_name = zend_string_init_interned("KIND_PRODUCER", sizeof("KIND_PRODUCER") - 1, 1);
	zend_declare_class_constant_ex(class_entry, const_KIND_PRODUCER_name, &const_KIND_PRODUCER_value, ZEND_ACC_PUBLIC, NULL);
	zend_string_release(const_KIND_PRODUCER_name);

	zval const_KIND_CONSUMER_value;
	ZVAL_LONG(&const_KIND_CONSUMER_value, 5);
	zend_string *const_KIND_CONSUMER_name = zend_string_init_interned("KIND_CONSUMER", sizeof("KIND_CONSUMER") - 1, 1);
	zend_declare_class_constant_ex(class_entry, const_KIND_CONSUMER_name, &const_KIND_CONSUMER_value, ZEND_ACC_PUBLIC, NULL);
	zend_string_release(const_KIND_CONSUMER_name);

	zval const_STATUS_UNSET_value;
	ZVAL_LONG(&const_STATUS_UNSET_value, 0);
	zend_string *const_STATUS_UNSET_name = zend_string_init_interned("STATUS_UNSET", sizeof("STATUS_UNSET") - 1, 1);
	zend_declare_class_constant_ex(class_entry, const_STATUS_UNSET_name, &const_STATUS_UNSET_value, ZEND_ACC_PUBLIC, NULL);
	zend_string_release(const_STATUS_UNSET_name);

	zval const_STATUS_OK_value;
	ZVAL_LONG(&const_STATUS_OK_value, 1);
	zend_string *const_STATUS_OK_name = zend_string_init_interned("STATUS_OK", sizeof("STATUS_OK") - 1, 1);
	zend_declare_class_constant_ex(class_entry, const_STATUS_OK_name, &const_STATUS_OK_value, ZEND_ACC_PUBLIC, NULL);
	zend_string_release(const_STATUS_OK_name);

	zval const_STATUS_ERROR_value;
	ZVAL_LONG(&const_STATUS_ERROR_value, 2);
	zend_string *const_STATUS_ERROR_name = zend_string_init_interned("STATUS_ERROR", sizeof("STATUS_ERROR") - 1, 1);
	zend_declare_class_constant_ex(class_entry, const_STATUS_ERROR_name, &const_STATUS_ERROR_value, ZEND_ACC_PUBLIC, NULL);
	zend_string_release(const_STATUS_ERROR_name);

	return class_entry;
}
