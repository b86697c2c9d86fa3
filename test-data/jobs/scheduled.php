<?php
// A scheduled task: appends "scheduled <how> <time>" to $JOBS_OUT; <how> is the first
// argument when run as a command (`ferrophp php-cli scheduled.php command`), else "script".
$how = $argv[1] ?? 'script';
file_put_contents(getenv('JOBS_OUT'), sprintf("scheduled %s %.6f\n", $how, microtime(true)), FILE_APPEND | LOCK_EX);
