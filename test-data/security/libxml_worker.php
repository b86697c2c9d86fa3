<?php
// Worker script: ?step=dirty changes every piece of libxml state a request can change,
// ?step=warn only libxml's last error (a parse error reported as a warning), and
// ?step=between has the loop change everything after the request, outside any request;
// any other request reports that state, which must be a fresh request's each time.
$dirty_everything = static function (): void {
    libxml_use_internal_errors(true);
    simplexml_load_string('<root><unclosed></root>');
    libxml_set_external_entity_loader(static fn () => null);
    libxml_set_streams_context(stream_context_create());
};
$between = false;
$handler = static function () use ($dirty_everything, &$between): void {
    header('Content-Type: application/json');
    $out = [];
    $between = ($_GET['step'] ?? '') === 'between';
    if (($_GET['step'] ?? '') === 'dirty') {
        $dirty_everything();
    }
    if (($_GET['step'] ?? '') === 'warn') {
        $out['parsed'] = @simplexml_load_string('<root><unclosed></root>') !== false;
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
    if ($between) {
        $dirty_everything();
        @libxml_disable_entity_loader(true);
    }
}
