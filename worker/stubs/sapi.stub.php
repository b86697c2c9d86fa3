<?php

/**
 * The PHP functions ferrophp's SAPI adds (sapi_module.additional_functions, registered
 * under the `standard` module as every SAPI's are). scripts/gen-arginfo.sh turns this
 * file into sapi_arginfo.h (PHP's own build/gen_stub.php); worker/c/module.c includes it.
 * Bodies are Rust: `zif_<name>` in worker/src/functions.rs and worker/src/deadline.rs, but
 * for ferrophp_handle_request, which is C (worker/c/request_scope.c).
 *
 * An alias (@alias) shares its target's body. Each function with a body of its own has a
 * name no other SAPI linked into the binary defines: PHP's CLI server (libphp-cli.a)
 * defines zif_apache_request_headers and zif_apache_response_headers.
 *
 * @generate-class-entries
 */

/** Serves the next request with $handler inside the worker script's engine request; true
 *  when it was served, false when the script should end its loop (stop, restart,
 *  max_requests). */
function ferrophp_handle_request(callable $handler): bool {}

/** @alias ferrophp_handle_request */
function frankenphp_handle_request(callable $handler): bool {}

/** The response headers set so far, as name => value (later duplicates joined with ", "). */
function frankenphp_response_headers(): array {}

/** @alias frankenphp_response_headers */
function ferrophp_response_headers(): array {}

/** @alias frankenphp_response_headers */
function apache_response_headers(): array {}

/** @alias ferrophp_finish_request */
function fastcgi_finish_request(): bool {}

/** Sends everything so far and ends the response; the script goes on without a client. */
function ferrophp_finish_request(): bool {}

/** @alias ferrophp_finish_request */
function frankenphp_finish_request(): bool {}

/** @alias frankenphp_request_headers */
function getallheaders(): array {}

/** @alias frankenphp_request_headers */
function apache_request_headers(): array {}

/** The request headers, names in canonical Title-Case, duplicates joined with ", ". */
function frankenphp_request_headers(): array {}

/** Sends the headers now. A 1xx status sends an informational response (103 Early Hints
 *  with the current Link headers) and leaves the final response's status and headers as
 *  they were. */
function headers_send(int $status = 200): int {}

/** frankenphp_log()'s levels (FrankenPHP's slog levels), registered by the ferrophp
 *  module (ferrophp_sapi_register_constants). */

/** @var int */
const FRANKENPHP_LOG_LEVEL_DEBUG = -4;
/** @var int */
const FRANKENPHP_LOG_LEVEL_INFO = 0;
/** @var int */
const FRANKENPHP_LOG_LEVEL_WARN = 4;
/** @var int */
const FRANKENPHP_LOG_LEVEL_ERROR = 8;

/** The message goes to the server log at the severity of its slog level (one of the
 *  FRANKENPHP_LOG_LEVEL_* above), followed by the context as key=value pairs. */
function frankenphp_log(string $message, int $level = 0, array $context = []): void {}

/** The current request may run at least $seconds more, under both its
 *  max_execution_time and --request-timeout; false when a deadline already passed. */
function ferrophp_request_heartbeat(int $seconds): bool {}
