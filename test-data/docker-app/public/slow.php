<?php
// A request still in flight when the container is stopped: it must complete.
usleep((int)($_GET['ms'] ?? 2000) * 1000);
echo 'slow done';
