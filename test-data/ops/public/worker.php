<?php
// Worker script for the admin tests: /worker.php?exit=1 ends the script (a crash, to be
// counted); ?ms=N sleeps.
while (ferrophp_handle_request(function () {
    if (isset($_GET['ms'])) {
        usleep((int) $_GET['ms'] * 1000);
    }
    if (isset($_GET['exit'])) {
        echo "bye\n";
        exit(0);
    }
    echo "worker\n";
})) {
}
