<?php
// Appends one line per execution to the file named by FERRO_JOURNAL (a test's temp
// file): "TAG METHOD BODY_LENGTH HOST", so a test can count exactly which requests PHP
// ran. It ignores the abort so the line is written even when the client is gone.
ignore_user_abort(true);
$raw = file_get_contents('php://input');
$line = sprintf(
    "%s %s %d %s\n",
    $_GET['tag'] ?? '-',
    $_SERVER['REQUEST_METHOD'],
    strlen($raw),
    $_SERVER['HTTP_HOST'] ?? '-'
);
file_put_contents(getenv('FERRO_JOURNAL'), $line, FILE_APPEND | LOCK_EX);
echo 'journal ', $line;
