<?php
// Worker script for the admin tests: /worker.php?exit=N ends the script with status N (1:
// a crash, to be counted; 0 would be a restart, as FrankenPHP counts it); ?ms=N sleeps.
while (ferrophp_handle_request(function () {
    if (isset($_GET['ms'])) {
        usleep((int) $_GET['ms'] * 1000);
    }
    if (isset($_GET['exit'])) {
        echo "bye\n";
        exit((int) $_GET['exit']);
    }
    echo "worker\n";
})) {
}
