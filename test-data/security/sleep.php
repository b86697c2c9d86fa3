<?php
// Sleeps ?ms= milliseconds (default 1000), then answers: a request in flight with no
// bytes moving.
usleep((int) ($_GET['ms'] ?? 1000) * 1000);
echo 'slept';
