/* mercure.c: the function table of mercure_publish(), generated from
 * worker/stubs/mercure.stub.php (a header of its own: each generated header defines its
 * own `ext_functions`). It is ferrophp's module's function table (module.c), not the
 * SAPI's additional functions, so PHP's CLI registers it too. The body is Rust
 * (worker/src/mercure_publish.rs). */
#include "worker.h"
#include "mercure_arginfo.h"

const zend_function_entry *ferrophp_mercure_functions(void) { return ext_functions; }
