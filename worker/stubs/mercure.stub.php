<?php

/**
 * FrankenPHP's mercure_publish(), a function of ferrophp's module (worker/c/mercure.c
 * puts this table in its zend_module_entry), so PHP's CLI has it as well as the server.
 * scripts/gen-arginfo.sh turns this file into mercure_arginfo.h. The body is Rust:
 * zif_mercure_publish in worker/src/mercure_publish.rs.
 *
 * @generate-function-entries
 */

/** Publishes an update to the server's Mercure hub (no HTTP round trip) and returns its
 *  id; throws a RuntimeException when no hub is configured or the publish fails.
 *  $topics: one topic, or the canonical topic first and then alternates. */
function mercure_publish(string|array $topics, string $data = '', bool $private = false, ?string $id = null, ?string $type = null, ?int $retry = null): string {}
