<?php
// MediaWiki's @ENTRY@.php entry point from Debian's package, with this instance's settings.
// The packaged files live outside the document root (ferrophp serves nothing through a
// symlink leaving it), so this file includes them instead.
define('MW_CONFIG_FILE', dirname(__DIR__) . '/LocalSettings.php');
require '/usr/share/mediawiki/@ENTRY@.php';
