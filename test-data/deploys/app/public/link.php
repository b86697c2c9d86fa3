<?php
// Paths spelled through the `current` link (APP_LINK, e.g. /srv/app/current): PHP's
// realpath cache keeps what they resolved to for realpath_cache_ttl (120 s), and OPcache
// keys an include by the path as written.
$link = getenv('APP_LINK');
header('X-Realpath: ' . basename((string) realpath($link)));
header('X-Included: ' . (require $link . '/src/link_target.php'));
echo "ok\n";
