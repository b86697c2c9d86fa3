<?php
// Worker mode: the same kinds, served by a worker script that boots once per thread.
require __DIR__ . '/kinds.php';
$handler = static function (): void {
    echo deadline_run($_GET);
};
while (ferrophp_handle_request($handler)) {
}
