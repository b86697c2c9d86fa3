<?php
// Worker mode's side of memory_boundaries.rs's request-scope test. `?exit=N` ends the
// script after the report: the request stays installed through the script's shutdown.
require __DIR__ . '/scope_report.php';
$handler = static function (): void {
    echo scope_report();
    if (isset($_GET['exit'])) {
        exit((int) $_GET['exit']);
    }
};
while (ferrophp_handle_request($handler)) {
}
