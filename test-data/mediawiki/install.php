<?php
// Installs MediaWiki with SQLite, as maintenance/install.php would.
// Usage: ferrophp php-cli install.php CONFDIR DBDIR
// maintenance/install.php itself refuses to run here: MaintenanceRunner::init() demands
// PHP_SAPI "cli" (or "phpdbg"), and under ferrophp php-cli PHP_SAPI is "ferrophp". This
// does what it does (CliInstaller) after the same bootstrap.
define('MW_CONFIG_CALLBACK', 'Installer::overrideConfig');
define('MEDIAWIKI_INSTALL', true);
define('MEDIAWIKI', true);
define('MW_ENTRY_POINT', 'cli');
// PHP_SAPI is not "cli" under ferrophp php-cli, so say what MediaWiki would infer from it.
$wgCommandLineMode = true;
require_once '/usr/share/mediawiki/includes/BootstrapHelperFunctions.php';
$IP = wfDetectInstallPath();
require_once "$IP/includes/Setup.php";
[$confDir, $dbDir] = [$argv[1], $argv[2]];
$installer = InstallerOverrides::getCliInstaller('Ferrowiki', 'Admin', [
    'pass' => 'ferrophp-test-password',
    'dbtype' => 'sqlite',
    'dbpath' => $dbDir,
    'dbname' => 'ferrowiki',
    'server' => 'http://localhost',
    'scriptpath' => '',
    'lang' => 'en',
]);
$status = $installer->doEnvironmentChecks();
if (!$status->isGood()) { $installer->showStatusMessage($status); exit(1); }
$status = $installer->execute();
if (!$status->isGood()) { $installer->showStatusMessage($status); exit(1); }
$installer->writeConfigurationFile($confDir);
echo "installed\n";
