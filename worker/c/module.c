/* module.c: ferrophp's own PHP extension (its module entry, whose start-up registers the
 * cache's, metrics' and trace's classes: bodies in worker/src/module.rs) and the PHP
 * functions the SAPI adds (sapi_module.additional_functions) with their constants. The
 * functions' arginfo and table and the constants' registration are generated from
 * worker/stubs/sapi.stub.php (scripts/gen-arginfo.sh); the generated header declares each
 * body as zif_<name>, which Rust defines. */
#include "worker.h"
#include "sapi_arginfo.h"

const zend_function_entry *ferrophp_sapi_functions(void) { return ext_functions; }

void ferrophp_sapi_register_constants(int module_number) { register_sapi_symbols(module_number); }

static zend_module_entry ferrophp_module = {
    STANDARD_MODULE_HEADER,
    "ferrophp",
    NULL,
    ferrophp_module_minit,
    ferrophp_module_mshutdown,
    ferrophp_module_rinit,
    ferrophp_module_rshutdown,
    ferrophp_module_minfo,
    "0.1.0",
    STANDARD_MODULE_PROPERTIES
};

zend_module_entry *ferrophp_module_entry(void) {
    /* mercure_publish() (mercure.c): the module's own functions, in every SAPI. */
    ferrophp_module.functions = ferrophp_mercure_functions();
    return &ferrophp_module;
}
