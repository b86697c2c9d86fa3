/* This is a generated file, edit the .stub.php file instead.
 * Stub hash: ef021bbe995305e1d8ca70af87127d513b3d6828 */

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_class_Ferrophp_Metrics_observe, 0, 2, IS_VOID, 0)
	ZEND_ARG_TYPE_INFO(0, name, IS_STRING, 0)
	ZEND_ARG_TYPE_INFO(0, value, IS_DOUBLE, 0)
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, tags, IS_ARRAY, 0, "[]")
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_class_Ferrophp_Metrics_increment, 0, 1, IS_VOID, 0)
	ZEND_ARG_TYPE_INFO(0, name, IS_STRING, 0)
	ZEND_ARG_TYPE_MASK(0, by, MAY_BE_LONG|MAY_BE_DOUBLE, "1")
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, tags, IS_ARRAY, 0, "[]")
ZEND_END_ARG_INFO()

#define arginfo_class_Ferrophp_Metrics_gauge arginfo_class_Ferrophp_Metrics_observe

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_class_Ferrophp_Metrics_quantile, 0, 2, IS_DOUBLE, 1)
	ZEND_ARG_TYPE_INFO(0, name, IS_STRING, 0)
	ZEND_ARG_TYPE_INFO(0, q, IS_DOUBLE, 0)
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, tags, IS_ARRAY, 0, "[]")
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_class_Ferrophp_Metrics_snapshot, 0, 0, IS_ARRAY, 0)
ZEND_END_ARG_INFO()


ZEND_METHOD(Ferrophp_Metrics, observe);
ZEND_METHOD(Ferrophp_Metrics, increment);
ZEND_METHOD(Ferrophp_Metrics, gauge);
ZEND_METHOD(Ferrophp_Metrics, quantile);
ZEND_METHOD(Ferrophp_Metrics, snapshot);


static const zend_function_entry class_Ferrophp_MetricsException_methods[] = {
	ZEND_FE_END
};


static const zend_function_entry class_Ferrophp_Metrics_methods[] = {
	ZEND_ME(Ferrophp_Metrics, observe, arginfo_class_Ferrophp_Metrics_observe, ZEND_ACC_PUBLIC|ZEND_ACC_STATIC)
	ZEND_ME(Ferrophp_Metrics, increment, arginfo_class_Ferrophp_Metrics_increment, ZEND_ACC_PUBLIC|ZEND_ACC_STATIC)
	ZEND_ME(Ferrophp_Metrics, gauge, arginfo_class_Ferrophp_Metrics_gauge, ZEND_ACC_PUBLIC|ZEND_ACC_STATIC)
	ZEND_ME(Ferrophp_Metrics, quantile, arginfo_class_Ferrophp_Metrics_quantile, ZEND_ACC_PUBLIC|ZEND_ACC_STATIC)
	ZEND_ME(Ferrophp_Metrics, snapshot, arginfo_class_Ferrophp_Metrics_snapshot, ZEND_ACC_PUBLIC|ZEND_ACC_STATIC)
	ZEND_FE_END
};

static zend_class_entry *register_class_Ferrophp_MetricsException(zend_class_entry *class_entry_InvalidArgumentException)
{
	zend_class_entry ce, *class_entry;

	INIT_NS_CLASS_ENTRY(ce, "Ferrophp", "MetricsException", class_Ferrophp_MetricsException_methods);
	class_entry = zend_register_internal_class_ex(&ce, class_entry_InvalidArgumentException);

	return class_entry;
}

static zend_class_entry *register_class_Ferrophp_Metrics(void)
{
	zend_class_entry ce, *class_entry;

	INIT_NS_CLASS_ENTRY(ce, "Ferrophp", "Metrics", class_Ferrophp_Metrics_methods);
	class_entry = zend_register_internal_class_ex(&ce, NULL);
	class_entry->ce_flags |= ZEND_ACC_FINAL|ZEND_ACC_NO_DYNAMIC_PROPERTIES|ZEND_ACC_NOT_SERIALIZABLE;

	return class_entry;
}
