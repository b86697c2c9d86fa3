<?php
// Classic mode's side of memory_boundaries.rs's request-scope test.
require __DIR__ . '/scope_report.php';
echo scope_report();
