<?php
// A worker whose requests hold their PHP thread for ?ms= milliseconds.
$handler = static function (): void {
    usleep((int) ($_GET['ms'] ?? 0) * 1000);
    echo "worker ok\n";
};
while (ferrophp_handle_request($handler)) {
}
