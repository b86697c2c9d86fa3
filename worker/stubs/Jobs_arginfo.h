/* This is a generated file, edit the .stub.php file instead.
 * Stub hash: fe99ca101c6e4b1f14e988545aa28268b9be6f0f */

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_class_Ferrophp_Jobs_dispatch, 0, 2, IS_STRING, 0)
	ZEND_ARG_TYPE_INFO(0, queue, IS_STRING, 0)
	ZEND_ARG_TYPE_INFO(0, payload, IS_MIXED, 0)
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, delay, IS_DOUBLE, 0, "0")
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, priority, IS_LONG, 0, "0")
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, uniqueKey, IS_STRING, 1, "null")
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, maxAttempts, IS_LONG, 0, "3")
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_OBJ_INFO_EX(arginfo_class_Ferrophp_Jobs_take, 0, 1, Ferrophp\\Job, 1)
	ZEND_ARG_TYPE_MASK(0, queue, MAY_BE_STRING|MAY_BE_ARRAY, NULL)
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, timeout, IS_DOUBLE, 0, "0")
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_INFO_EX(arginfo_class_Ferrophp_Job___construct, 0, 0, 0)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_class_Ferrophp_Job_ack, 0, 0, IS_VOID, 0)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_class_Ferrophp_Job_fail, 0, 0, _IS_BOOL, 0)
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, reason, IS_STRING, 1, "null")
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_class_Ferrophp_Background_shouldStop, 0, 0, _IS_BOOL, 0)
ZEND_END_ARG_INFO()


ZEND_METHOD(Ferrophp_Jobs, dispatch);
ZEND_METHOD(Ferrophp_Jobs, take);
ZEND_METHOD(Ferrophp_Job, __construct);
ZEND_METHOD(Ferrophp_Job, ack);
ZEND_METHOD(Ferrophp_Job, fail);
ZEND_METHOD(Ferrophp_Background, shouldStop);


static const zend_function_entry class_Ferrophp_JobsException_methods[] = {
	ZEND_FE_END
};


static const zend_function_entry class_Ferrophp_Jobs_methods[] = {
	ZEND_ME(Ferrophp_Jobs, dispatch, arginfo_class_Ferrophp_Jobs_dispatch, ZEND_ACC_PUBLIC|ZEND_ACC_STATIC)
	ZEND_ME(Ferrophp_Jobs, take, arginfo_class_Ferrophp_Jobs_take, ZEND_ACC_PUBLIC|ZEND_ACC_STATIC)
	ZEND_FE_END
};


static const zend_function_entry class_Ferrophp_Job_methods[] = {
	ZEND_ME(Ferrophp_Job, __construct, arginfo_class_Ferrophp_Job___construct, ZEND_ACC_PRIVATE)
	ZEND_ME(Ferrophp_Job, ack, arginfo_class_Ferrophp_Job_ack, ZEND_ACC_PUBLIC)
	ZEND_ME(Ferrophp_Job, fail, arginfo_class_Ferrophp_Job_fail, ZEND_ACC_PUBLIC)
	ZEND_FE_END
};


static const zend_function_entry class_Ferrophp_Background_methods[] = {
	ZEND_ME(Ferrophp_Background, shouldStop, arginfo_class_Ferrophp_Background_shouldStop, ZEND_ACC_PUBLIC|ZEND_ACC_STATIC)
	ZEND_FE_END
};

static zend_class_entry *register_class_Ferrophp_JobsException(zend_class_entry *class_entry_RuntimeException)
{
	zend_class_entry ce, *class_entry;

	INIT_NS_CLASS_ENTRY(ce, "Ferrophp", "JobsException", class_Ferrophp_JobsException_methods);
	class_entry = zend_register_internal_class_ex(&ce, class_entry_RuntimeException);

	return class_entry;
}

static zend_class_entry *register_class_Ferrophp_Jobs(void)
{
	zend_class_entry ce, *class_entry;

	INIT_NS_CLASS_ENTRY(ce, "Ferrophp", "Jobs", class_Ferrophp_Jobs_methods);
	class_entry = zend_register_internal_class_ex(&ce, NULL);
	class_entry->ce_flags |= ZEND_ACC_FINAL|ZEND_ACC_NO_DYNAMIC_PROPERTIES|ZEND_ACC_NOT_SERIALIZABLE;

	return class_entry;
}

static zend_class_entry *register_class_Ferrophp_Job(void)
{
	zend_class_entry ce, *class_entry;

	INIT_NS_CLASS_ENTRY(ce, "Ferrophp", "Job", class_Ferrophp_Job_methods);
	class_entry = zend_register_internal_class_ex(&ce, NULL);
	class_entry->ce_flags |= ZEND_ACC_FINAL|ZEND_ACC_NO_DYNAMIC_PROPERTIES|ZEND_ACC_NOT_SERIALIZABLE;

	zval property_id_default_value;
	ZVAL_UNDEF(&property_id_default_value);
	zend_string *property_id_name = zend_string_init("id", sizeof("id") - 1, 1);
	zend_declare_typed_property(class_entry, property_id_name, &property_id_default_value, ZEND_ACC_PUBLIC|ZEND_ACC_READONLY, NULL, (zend_type) ZEND_TYPE_INIT_MASK(MAY_BE_STRING));
	zend_string_release(property_id_name);

	zval property_queue_default_value;
	ZVAL_UNDEF(&property_queue_default_value);
	zend_string *property_queue_name = zend_string_init("queue", sizeof("queue") - 1, 1);
	zend_declare_typed_property(class_entry, property_queue_name, &property_queue_default_value, ZEND_ACC_PUBLIC|ZEND_ACC_READONLY, NULL, (zend_type) ZEND_TYPE_INIT_MASK(MAY_BE_STRING));
	zend_string_release(property_queue_name);

	zval property_payload_default_value;
	ZVAL_UNDEF(&property_payload_default_value);
	zend_string *property_payload_name = zend_string_init("payload", sizeof("payload") - 1, 1);
	zend_declare_typed_property(class_entry, property_payload_name, &property_payload_default_value, ZEND_ACC_PUBLIC|ZEND_ACC_READONLY, NULL, (zend_type) ZEND_TYPE_INIT_MASK(MAY_BE_ANY));
	zend_string_release(property_payload_name);

	zval property_attempts_default_value;
	ZVAL_UNDEF(&property_attempts_default_value);
	zend_string *property_attempts_name = zend_string_init("attempts", sizeof("attempts") - 1, 1);
	zend_declare_typed_property(class_entry, property_attempts_name, &property_attempts_default_value, ZEND_ACC_PUBLIC|ZEND_ACC_READONLY, NULL, (zend_type) ZEND_TYPE_INIT_MASK(MAY_BE_LONG));
	zend_string_release(property_attempts_name);

	return class_entry;
}

static zend_class_entry *register_class_Ferrophp_Background(void)
{
	zend_class_entry ce, *class_entry;

	INIT_NS_CLASS_ENTRY(ce, "Ferrophp", "Background", class_Ferrophp_Background_methods);
	class_entry = zend_register_internal_class_ex(&ce, NULL);
	class_entry->ce_flags |= ZEND_ACC_FINAL|ZEND_ACC_NO_DYNAMIC_PROPERTIES|ZEND_ACC_NOT_SERIALIZABLE;

	return class_entry;
}
