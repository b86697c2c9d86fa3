<?php
// A worker whose own code after its loop runs a while (back-edges the VM checks for a
// timeout): worker_http.rs checks that the max_execution_time timer a request left running
// never ends the script outside a request.
$handler = static function (): void {
    echo 'served';
};
while (frankenphp_handle_request($handler)) {
}
$sum = 0;
for ($i = 0; $i < 2000000; $i++) {
    $sum += $i & 7;
}
error_log("timer.php: loop ended cleanly ($sum)");
