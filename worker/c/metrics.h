/*
 * C side of Ferrophp\Metrics (worker/src/metrics.rs): the class registration. The
 * arginfo and method table are generated from worker/stubs/Metrics.stub.php; the method
 * bodies are Rust (zim_Ferrophp_Metrics_<method>). No metrics logic lives here.
 */
#ifndef FERROPHP_METRICS_H
#define FERROPHP_METRICS_H

#include "php.h"

extern zend_class_entry *ferrophp_metrics_ce;
extern zend_class_entry *ferrophp_metrics_exception_ce;

/* Registers Ferrophp\Metrics (final, static methods) and Ferrophp\MetricsException
 * (extends InvalidArgumentException), as the stub declares them. MINIT only. */
void ferrophp_metrics_register_classes(void);

#endif
