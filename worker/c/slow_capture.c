/* slow_capture.c: the slow log's capture of a slow request's PHP stack, on the request's
 * own thread (the moments and signals that ask for it are deadline.c's).
 *
 * The slow log's capture (ferrophp_slow_snapshot) always runs on the request's own
 * thread, reading its own engine state, never another thread's memory: at a VM safe
 * point (zend_interrupt_function), or in a timed wait that woke at the slow-log moment
 * (the thread is inside an internal function's C call, so every frame of the VM is
 * complete: ZEND_DO_ICALL saved the opline first), or, for a thread blocked in
 * flock/waitpid, in the slow-log signal's handler, which interrupts that thread in the
 * same complete state. The capture walks EG(current_execute_data) read-only and copies
 * bounded pieces (names, file, line, argument summaries) into the thread's own
 * preallocated buffer: no allocation, no lock, no call outside this file (and the inline
 * checks of deadline_state.h) except reading memory the thread itself owns and is not
 * changing (it is stopped in that handler).
 * The watchdog reads the buffer only after the thread published it (release/acquire)
 * and hands it back the same way.
 */
#define _GNU_SOURCE
#define ZEND_ENABLE_STATIC_TSRMLS_CACHE 1 /* the thread's cache is php-sys's shim.c's */
#include "deadline_state.h"
#include <string.h>

/* Appends to the snapshot's text; what does not fit is cut. Returns the start offset. */
static uint32_t put(ferrophp_slow_snapshot *s, const char *p, size_t n) {
    uint32_t at = s->text_len;
    size_t room = FERROPHP_SLOW_TEXT - s->text_len;
    if (n > room) {
        n = room;
    }
    memcpy(s->text + s->text_len, p, n);
    s->text_len += (uint32_t) n;
    return at;
}

static void put_str(ferrophp_slow_snapshot *s, const char *p) { put(s, p, strlen(p)); }

static void put_u64(ferrophp_slow_snapshot *s, uint64_t v) {
    char buf[24];
    int i = sizeof buf;
    do {
        buf[--i] = (char) ('0' + v % 10);
        v /= 10;
    } while (v);
    put(s, buf + i, sizeof buf - i);
}

static void put_i64(ferrophp_slow_snapshot *s, int64_t v) {
    if (v < 0) {
        put(s, "-", 1);
        put_u64(s, (uint64_t) 0 - (uint64_t) v);
    } else {
        put_u64(s, (uint64_t) v);
    }
}

/* A float with up to 6 decimals, without printf (not async-signal-safe). */
static void put_double(ferrophp_slow_snapshot *s, double v) {
    if (v != v) {
        put_str(s, "NAN");
        return;
    }
    if (v < 0) {
        put(s, "-", 1);
        v = -v;
    }
    if (v > 9e15) {
        put_str(s, v == __builtin_inf() ? "INF" : "1.0E+16+");
        return;
    }
    uint64_t whole = (uint64_t) v;
    uint64_t frac = (uint64_t) ((v - (double) whole) * 1000000.0 + 0.5);
    if (frac >= 1000000) {
        whole++;
        frac -= 1000000;
    }
    put_u64(s, whole);
    if (frac) {
        char digits[7] = "000000";
        for (int i = 5; i >= 0; i--) {
            digits[i] = (char) ('0' + frac % 10);
            frac /= 10;
        }
        int n = 6;
        while (n > 0 && digits[n - 1] == '0') {
            n--;
        }
        put(s, ".", 1);
        put(s, digits, n);
    }
}

static void put_zstr(ferrophp_slow_snapshot *s, const zend_string *z, size_t max) {
    if (z) {
        put(s, ZSTR_VAL(z), ZSTR_LEN(z) < max ? ZSTR_LEN(z) : max);
    }
}

/* One argument, as debug traces summarise them: its type and a short view of it. */
static void put_arg(ferrophp_slow_snapshot *s, zval *zv) {
    if (Z_TYPE_P(zv) == IS_REFERENCE) {
        zv = Z_REFVAL_P(zv);
    }
    switch (Z_TYPE_P(zv)) {
        case IS_UNDEF:
        case IS_NULL: put_str(s, "null"); break;
        case IS_FALSE: put_str(s, "false"); break;
        case IS_TRUE: put_str(s, "true"); break;
        case IS_LONG: put_str(s, "int("); put_i64(s, Z_LVAL_P(zv)); put_str(s, ")"); break;
        case IS_DOUBLE: put_str(s, "float("); put_double(s, Z_DVAL_P(zv)); put_str(s, ")"); break;
        case IS_STRING:
            put_str(s, "string(");
            put_u64(s, Z_STRLEN_P(zv));
            put_str(s, ") \"");
            put_zstr(s, Z_STR_P(zv), 32);
            put_str(s, Z_STRLEN_P(zv) > 32 ? "...\"" : "\"");
            break;
        case IS_ARRAY:
            /* nNumOfElements, read as it is: zend_array_count may write to the array. */
            put_str(s, "array(");
            put_u64(s, Z_ARRVAL_P(zv)->nNumOfElements);
            put_str(s, ")");
            break;
        case IS_OBJECT:
            put_str(s, "object(");
            put_zstr(s, Z_OBJCE_P(zv)->name, 128);
            put_str(s, ")");
            break;
        case IS_RESOURCE: put_str(s, "resource("); put_i64(s, Z_RES_HANDLE_P(zv)); put_str(s, ")"); break;
        default: put_str(s, "?"); break;
    }
}

/* The nearest frame below `ex` that runs PHP code: where `ex` was called from. */
static zend_execute_data *caller_of(zend_execute_data *ex) {
    for (ex = ex->prev_execute_data; ex; ex = ex->prev_execute_data) {
        if (ex->func && ZEND_USER_CODE(ex->func->common.type)) {
            return ex;
        }
    }
    return NULL;
}

static void put_c_string(ferrophp_slow_snapshot *s, const char *c, uint32_t *at, uint32_t *len) {
    uint32_t before = s->text_len;
    if (c) {
        put(s, c, strnlen(c, 512));
    }
    *at = before;
    *len = s->text_len - before;
}

/* Fills the thread's snapshot from its own engine state and publishes it. Only on the
 * request's thread, at a point where its VM frames are complete (see the file comment). */
void ferrophp_slow_capture(ferrophp_deadline *d, int64_t now, uint32_t how) {
    if (atomic_exchange(&d->capturing, true)) {
        return;
    }
    if (!slow_due(d, now)) {
        atomic_store(&d->capturing, false);
        return;
    }
    ferrophp_slow_snapshot *s = &d->snap;
    s->seq = atomic_load(&d->seq);
    s->started_ns = atomic_load(&d->started_ns);
    s->captured_ns = now;
    s->how = how;
    s->text_len = 0;
    s->frame_count = 0;
    s->frames_omitted = 0;
    s->line = 0;
    put_c_string(s, d->sg->request_info.request_method, &s->method, &s->method_len);
    put_c_string(s, d->sg->request_info.request_uri, &s->uri, &s->uri_len);
    s->file = s->text_len;
    s->file_len = 0;
    bool innermost = true;
    for (zend_execute_data *ex = d->eg->current_execute_data; ex; ex = ex->prev_execute_data) {
        zend_function *f = ex->func;
        if (!f) {
            continue;
        }
        bool user = ZEND_USER_CODE(f->common.type);
        if (user && innermost && ex->opline) {
            s->file = put(s, "", 0);
            put_zstr(s, f->op_array.filename, 1024);
            s->file_len = s->text_len - s->file;
            s->line = ex->opline->lineno;
            innermost = false;
        }
        if (s->frame_count == FERROPHP_SLOW_FRAMES) {
            s->frames_omitted++;
            continue;
        }
        ferrophp_slow_frame *fr = &s->frames[s->frame_count++];
        fr->function = s->text_len;
        if (f->common.function_name) {
            if (f->common.scope) {
                put_zstr(s, f->common.scope->name, 256);
                put_str(s, "::");
            }
            put_zstr(s, f->common.function_name, 256);
        } else {
            put_str(s, caller_of(ex) ? "include" : "{main}");
        }
        fr->function_len = s->text_len - fr->function;
        zend_execute_data *caller = caller_of(ex);
        fr->file = s->text_len;
        fr->line = 0;
        if (caller && caller->opline) {
            put_zstr(s, caller->func->op_array.filename, 1024);
            fr->line = caller->opline->lineno;
        } else if (!f->common.function_name && user) {
            put_zstr(s, f->op_array.filename, 1024);
            fr->line = ex->opline ? ex->opline->lineno : 0;
        }
        fr->file_len = s->text_len - fr->file;
        fr->args = s->text_len;
        fr->arg_count = 0;
        if (f->common.function_name) {
            uint32_t n = ZEND_CALL_NUM_ARGS(ex);
            fr->arg_count = n;
            /* A user function keeps arguments past its declared ones elsewhere; the
             * declared ones are enough for a summary. */
            uint32_t shown = user && n > f->op_array.num_args ? f->op_array.num_args : n;
            if (shown > 6) {
                shown = 6;
            }
            for (uint32_t i = 0; i < shown; i++) {
                if (i) {
                    put(s, "\x1f", 1);
                }
                put_arg(s, ZEND_CALL_ARG(ex, i + 1));
            }
        }
        fr->args_len = s->text_len - fr->args;
    }
    atomic_store(&d->slow_done_seq, s->seq);
    atomic_store_explicit(&d->slow_ready, true, memory_order_release);
    atomic_store(&d->capturing, false);
}
