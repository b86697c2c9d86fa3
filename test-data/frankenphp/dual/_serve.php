<?php
// Runs a page's handler the way the page is deployed: once per request in classic mode,
// in a frankenphp_handle_request() loop when the page is a worker script (its boot
// $_SERVER then carries FRANKENPHP_WORKER). Each page in this directory returns its
// handler through serve(), so one script checks a behaviour in both modes.
function serve(callable $handler): void
{
    if (($_SERVER['FRANKENPHP_WORKER'] ?? null) !== '1') {
        $handler();
        return;
    }
    while (frankenphp_handle_request($handler)) {
    }
}
