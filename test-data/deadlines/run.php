<?php
// Classic mode: one kind per request (see kinds.php).
require __DIR__ . '/kinds.php';
echo deadline_run($_GET);
