<?php
// Local settings, where PostfixAdmin's config.inc.php says to put them
// (server/tests/debian_apps.rs writes @SOCKET@ and appends the setup password hash
// setup.php generates).
$CONF['database_socket'] = '@SOCKET@';
// The test machine has no DNS: do not require mail domains to resolve.
$CONF['emailcheck_resolve_domain'] = 'NO';
// The setup password hash setup.php generates: the test writes the line the page shows into
// a file of its own rather than appending it here, because OPcache (on, as in production)
// keeps serving this file as it was compiled until it revalidates it
// (opcache.revalidate_freq, 2 s): a new file is compiled on its first include, without a
// wait. A user editing this file sees the change after that delay, as under php-fpm.
if (is_file(__DIR__ . '/setup-password.inc.php')) {
    require __DIR__ . '/setup-password.inc.php';
}
