<?php
// Sleeps ?ms= milliseconds (default 1000), then answers.
$ms = (int) ($_GET['ms'] ?? 1000);
usleep($ms * 1000);
echo "slept $ms";
