/* See metrics.h: class registration only, from the generated Metrics_arginfo.h. */
#include "php.h"
#include "ext/spl/spl_exceptions.h"
#include "metrics.h"
#include "Metrics_arginfo.h"

zend_class_entry *ferrophp_metrics_ce;
zend_class_entry *ferrophp_metrics_exception_ce;

void ferrophp_metrics_register_classes(void) {
    ferrophp_metrics_exception_ce = register_class_Ferrophp_MetricsException(spl_ce_InvalidArgumentException);
    ferrophp_metrics_ce = register_class_Ferrophp_Metrics();
}
