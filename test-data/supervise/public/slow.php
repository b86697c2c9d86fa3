<?php
// A request still in flight when the server is asked to stop: "started" leaves at once
// (so the client knows the request is running), the rest after ?ms= milliseconds.
echo "started\n";
flush();
usleep((int) ($_GET['ms'] ?? 1000) * 1000);
echo 'done ', getmypid();
