<?php
// phpMyAdmin's one server: the test's private MariaDB on its unix socket (debian_apps.rs
// writes @SOCKET@ and binds this file's directory over /etc/phpmyadmin/conf.d, which
// Debian's /etc/phpmyadmin/config.inc.php includes last).
$cfg['Servers'] = [
    1 => [
        'auth_type' => 'cookie',
        'host' => 'localhost',
        'connect_type' => 'socket',
        'socket' => '@SOCKET@',
    ],
];
