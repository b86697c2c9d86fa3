<?php
// A classic request that holds its PHP thread for ?ms= milliseconds.
usleep((int) ($_GET['ms'] ?? 0) * 1000);
echo "classic ok\n";
