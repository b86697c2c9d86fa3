/* See metrics.h: arginfo tables and class registration only. */
#include "php.h"
#include "zend_exceptions.h"
#include "ext/spl/spl_exceptions.h"
#include "metrics.h"

zend_class_entry *ferrophp_metrics_ce;
zend_class_entry *ferrophp_metrics_exception_ce;

/* Signatures match worker/stubs/Metrics.php. */

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_metrics_observe, 0, 2, IS_VOID, 0)
    ZEND_ARG_TYPE_INFO(0, name, IS_STRING, 0)
    ZEND_ARG_TYPE_INFO(0, value, IS_DOUBLE, 0)
    ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, tags, IS_ARRAY, 0, "[]")
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_metrics_increment, 0, 1, IS_VOID, 0)
    ZEND_ARG_TYPE_INFO(0, name, IS_STRING, 0)
    ZEND_ARG_TYPE_MASK(0, by, MAY_BE_LONG|MAY_BE_DOUBLE, "1")
    ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, tags, IS_ARRAY, 0, "[]")
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_metrics_quantile, 0, 2, IS_DOUBLE, 1)
    ZEND_ARG_TYPE_INFO(0, name, IS_STRING, 0)
    ZEND_ARG_TYPE_INFO(0, q, IS_DOUBLE, 0)
    ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, tags, IS_ARRAY, 0, "[]")
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_metrics_snapshot, 0, 0, IS_ARRAY, 0)
ZEND_END_ARG_INFO()

#define METRICS_ME(name, fn, arginfo) ZEND_RAW_FENTRY(name, fn, arginfo, ZEND_ACC_PUBLIC | ZEND_ACC_STATIC)

static const zend_function_entry ferrophp_metrics_methods[] = {
    METRICS_ME("observe", ferrophp_metrics_observe, arginfo_metrics_observe)
    METRICS_ME("increment", ferrophp_metrics_increment, arginfo_metrics_increment)
    METRICS_ME("gauge", ferrophp_metrics_gauge, arginfo_metrics_observe)
    METRICS_ME("quantile", ferrophp_metrics_quantile, arginfo_metrics_quantile)
    METRICS_ME("snapshot", ferrophp_metrics_snapshot, arginfo_metrics_snapshot)
    ZEND_FE_END
};

void ferrophp_metrics_register_classes(void) {
    zend_class_entry ce;
    INIT_NS_CLASS_ENTRY(ce, "Ferrophp", "MetricsException", NULL);
    ferrophp_metrics_exception_ce = zend_register_internal_class_ex(&ce, spl_ce_InvalidArgumentException);
    INIT_NS_CLASS_ENTRY(ce, "Ferrophp", "Metrics", ferrophp_metrics_methods);
    ferrophp_metrics_ce = zend_register_internal_class_ex(&ce, NULL);
    ferrophp_metrics_ce->ce_flags |= ZEND_ACC_FINAL | ZEND_ACC_NO_DYNAMIC_PROPERTIES | ZEND_ACC_NOT_SERIALIZABLE;
}
