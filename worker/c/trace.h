/*
 * C side of Ferrophp\Trace and Ferrophp\Span (worker/src/trace/): the Span object layout
 * (a few plain fields before the zend_object), the class registration, the error observer
 * and throw hook that tell the runtime about uncaught exceptions, and one helper that
 * reads a Throwable's class, message and trace. The arginfo and method tables are
 * generated from worker/stubs/Trace.stub.php; the method bodies are Rust
 * (zim_Ferrophp_Trace_<method>, zim_Ferrophp_Span_<method>: trace_class.rs,
 * span_class.rs), but for Span's private constructor. No tracing logic lives here.
 */
#ifndef FERROPHP_TRACE_H
#define FERROPHP_TRACE_H

#include "php.h"

/* What a Span object names: the request it belongs to (generation 0: a span that records
 * nothing), its slot among that request's spans (UINT32_MAX: the request's server span)
 * and its context. Rust reads and writes these fields only. */
typedef struct {
    uint64_t generation;
    uint32_t index;
    uint8_t flags;
    uint8_t trace_id[16];
    uint8_t span_id[8];
} ferrophp_span_ref;

/* Rust: a Span object is being freed (ends its span if still open); `unwinding`: an
 * exception is in flight (its frame is being left because of it). */
void ferrophp_trace_span_released(const ferrophp_span_ref *ref, bool unwinding);
/* Rust: whether the running request records spans (the throw hook reads exceptions only
 * then). */
bool ferrophp_trace_records(void);
/* Rust: an exception was thrown in a recording request (class and message). */
void ferrophp_trace_on_throw(const char *cls, size_t cls_len, const char *msg, size_t msg_len);
/* Rust: PHP reported an error (every type; the runtime keeps the fatal ones). */
void ferrophp_trace_on_error(int type, const char *msg, size_t msg_len);

extern zend_class_entry *ferrophp_trace_ce;
extern zend_class_entry *ferrophp_span_ce;
extern zend_class_entry *ferrophp_trace_exception_ce;

/* Registers Ferrophp\Trace (final, static methods), Ferrophp\Span (final, not
 * constructible, not cloneable or serializable; free_obj calls
 * ferrophp_trace_span_released) and Ferrophp\TraceException (extends
 * InvalidArgumentException), as the stub declares them; installs the error observer and the throw hook (chained
 * after any installed before). MINIT only. */
void ferrophp_trace_register_classes(void);

/* object_init_ex(rv, Ferrophp\Span); the new object's ref (zeroed) to fill. */
ferrophp_span_ref *ferrophp_span_create(zval *rv);
/* The ref of $this in a running Span method. */
ferrophp_span_ref *ferrophp_span_this(zend_execute_data *execute_data);
/* return $this (for chaining). */
void ferrophp_span_return_this(zend_execute_data *execute_data, zval *return_value);

/* Calls `cb(ctx, class, message, trace)` with a Throwable's class name, its `message`
 * property (empty when not a string) and, when `with_trace`, getTraceAsString() (empty
 * otherwise or when it failed); the strings live for the call only. False (and no call)
 * when `zv` is not a Throwable object. */
typedef void (*ferrophp_throwable_cb)(void *ctx, const char *cls, size_t cls_len,
                                      const char *msg, size_t msg_len,
                                      const char *trace, size_t trace_len);
bool ferrophp_trace_describe_throwable(zval *zv, bool with_trace, ferrophp_throwable_cb cb, void *ctx);

#endif
