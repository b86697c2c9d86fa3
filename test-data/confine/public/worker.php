<?php
// Worker mode entry of the confinement probe (lib/probe.php).
require __DIR__ . '/lib/probe.php';
$served = 0;
$handler = static function () use (&$served): void {
    header('Content-Type: application/json');
    header('X-Worker-Requests: ' . ++$served);
    echo confine_probe();
};
while (ferrophp_handle_request($handler)) {
}
