<?php
// Classic mode entry of the confinement probe (lib/probe.php).
require __DIR__ . '/lib/probe.php';
header('Content-Type: application/json');
echo confine_probe();
