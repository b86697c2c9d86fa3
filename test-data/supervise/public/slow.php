<?php
// A request still in flight when the server is asked to stop.
usleep((int) ($_GET['ms'] ?? 1000) * 1000);
echo 'done ', getmypid();
