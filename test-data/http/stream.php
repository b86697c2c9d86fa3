<?php
// One chunk, flush, a pause, then the rest: the first chunk must reach the client early.
echo "first chunk\n";
// flush() alone only empties the SAPI buffer; output_buffering (4096 in production
// settings) needs ob_flush() first, as under php-fpm.
if (ob_get_level() > 0) {
    ob_flush();
}
flush();
usleep((int) ($_GET['ms'] ?? 1000) * 1000);
echo "second chunk\n";
