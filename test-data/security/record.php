<?php
// Appends what the script saw of the request body to the file named by the FERRO_RECORD
// environment variable (a test's temp file), one line "TAG LENGTH ABORTED". It ignores
// the abort so the line is written even when the body broke off.
ignore_user_abort(true);
$raw = file_get_contents('php://input');
$line = sprintf("%s %d %d\n", $_GET['tag'] ?? '-', strlen($raw), connection_aborted());
file_put_contents(getenv('FERRO_RECORD'), $line, FILE_APPEND);
echo 'recorded ', $line;
