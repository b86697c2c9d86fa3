/*
 * C side of Ferrophp\Jobs, Ferrophp\Job and Ferrophp\Background (worker/src/jobs/): the
 * Job object's layout (a key before the zend_object naming its lease in Rust), the class
 * registration, and the two engine sequences Rust cannot express: serialize() of a
 * payload (refusing resources and closures anywhere inside it) and a new Job object with
 * its payload unserialized. The arginfo and method tables are generated from
 * worker/stubs/Jobs.stub.php; the method bodies are Rust (zim_Ferrophp_<Class>_<method>),
 * but for Job's private constructor. No queue logic lives here.
 */
#ifndef FERROPHP_JOBS_H
#define FERROPHP_JOBS_H

#include "php.h"

extern zend_class_entry *ferrophp_jobs_ce;
extern zend_class_entry *ferrophp_job_ce;
extern zend_class_entry *ferrophp_background_ce;
extern zend_class_entry *ferrophp_jobs_exception_ce;

/* Rust: a Job object holding lease `key` (non-zero) is being freed. */
void ferrophp_job_released(uint64_t key);

/* Registers the four classes as the stub declares them; Job is final, not constructible
 * from PHP, not cloneable or serializable, and its free_obj calls ferrophp_job_released.
 * MINIT only. */
void ferrophp_jobs_register_classes(void);

/* serialize($value) into a new zend_string (the caller releases it with
 * ferrophp_jobs_string_release); NULL with an exception thrown when the value holds a
 * resource or a closure (Ferrophp\JobsException naming where) or serialize() threw. */
zend_string *ferrophp_jobs_serialize(zval *value);
void ferrophp_jobs_string_release(zend_string *s);

/* rv = a new Job with lease `key` and its readonly properties; the payload is
 * unserialize()d from `payload` (false, with a warning, when it cannot be). */
void ferrophp_job_create(zval *rv, uint64_t key, const char *id, size_t id_len,
                         const char *queue, size_t queue_len,
                         const char *payload, size_t payload_len, zend_long attempts);

/* The lease key of $this in a running Job method (0 when finished or not a Job); the
 * pointer lets Rust clear it once acknowledged or failed. */
uint64_t *ferrophp_job_this(zend_execute_data *execute_data);

/* RINIT of a background worker's run: max_execution_time=0 for this engine request (as
 * the CLI has it; a runtime change, restored at its end), which also disarms the timer
 * php_request_startup armed. The script may still call set_time_limit(). */
void ferrophp_background_untimed(void);

#endif
