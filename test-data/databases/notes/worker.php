<?php
// Worker mode for the notes app: the library (and its connections, kept in statics) is
// loaded once per thread; the unchanged front controller runs per request.
require_once __DIR__ . '/lib.php';
$notes_worker = true;
$handler = static function (): void {
    include __DIR__ . '/index.php';
};
while (ferrophp_handle_request($handler)) {
}
