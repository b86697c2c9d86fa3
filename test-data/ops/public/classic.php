<?php
// Classic-mode page for the admin tests: optional sleep (ms) to hold a thread busy.
if (isset($_GET['ms'])) {
    usleep((int) $_GET['ms'] * 1000);
}
echo "classic\n";
