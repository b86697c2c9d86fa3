<?php
// Worker-mode form of accel.php: the handler hands every request's ?f= over.
while (ferrophp_handle_request(static function (): void {
    header('X-Worker: yes');
    header('X-Accel-Redirect: ' . ($_GET['f'] ?? '/reports/q3.txt'));
    echo "PHP BODY THAT MUST NOT BE SENT\n";
})) {
}
