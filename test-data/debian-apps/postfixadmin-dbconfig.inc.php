<?php
// What dbconfig-common writes to /etc/postfixadmin/dbconfig.inc.php for a MariaDB
// database (server/tests/debian_apps.rs; the socket is in config.local.php).
$dbuser='postfixadmin';
$dbpass='pfa-pass';
$basepath='';
$dbname='postfixadmin';
$dbserver='localhost';
$dbport='';
$dbtype='mysqli';
