<?php
// Worker script: ?step=dirty changes every piece of libxml state a request can change;
// any other request reports that state, which must be a fresh request's each time.
$handler = static function (): void {
    header('Content-Type: application/json');
    $out = [];
    if (($_GET['step'] ?? '') === 'dirty') {
        libxml_use_internal_errors(true);
        simplexml_load_string('<root><unclosed></root>');
        libxml_set_external_entity_loader(static fn () => null);
        libxml_set_streams_context(stream_context_create());
    }
    $last = libxml_get_last_error();
    $out['errors'] = count(libxml_get_errors());
    $out['last_error'] = $last === false ? null : trim($last->message);
    $out['internal_errors'] = libxml_use_internal_errors();
    $out['entity_loader_set'] = libxml_get_external_entity_loader() !== null;
    // Deprecated since PHP 8.0, still a per-request flag; there is no getter: setting it
    // returns the previous value. A dirty request leaves it on, any other turns it off
    // (the per-request default) and reports what it found.
    $dirty = ($_GET['step'] ?? '') === 'dirty';
    $out['entity_loader_disabled'] = @libxml_disable_entity_loader($dirty);
    echo json_encode($out);
};
while (ferrophp_handle_request($handler)) {
}
