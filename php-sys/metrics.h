/*
 * C side of Ferrophp\Metrics (worker/src/metrics.rs): the class and method arginfo
 * tables and the class registration. No metrics logic lives here.
 */
#ifndef FERROPHP_METRICS_H
#define FERROPHP_METRICS_H

#include "php.h"

/* Method bodies live in Rust (worker/src/metrics.rs). */
#define FERROPHP_METRICS_HANDLER(name) void name(zend_execute_data *execute_data, zval *return_value)
FERROPHP_METRICS_HANDLER(ferrophp_metrics_observe);
FERROPHP_METRICS_HANDLER(ferrophp_metrics_increment);
FERROPHP_METRICS_HANDLER(ferrophp_metrics_gauge);
FERROPHP_METRICS_HANDLER(ferrophp_metrics_quantile);
FERROPHP_METRICS_HANDLER(ferrophp_metrics_snapshot);

extern zend_class_entry *ferrophp_metrics_ce;
extern zend_class_entry *ferrophp_metrics_exception_ce;

/* INIT_NS_CLASS_ENTRY + zend_register_internal_class_ex for Ferrophp\Metrics (final,
 * static methods) and Ferrophp\MetricsException (extends InvalidArgumentException). */
void ferrophp_metrics_register_classes(void);

#endif
