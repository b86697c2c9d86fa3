<?php
// A scheduled script that records which process ran it and when.
file_put_contents(getenv('JOBS_OUT'), sprintf("tick %d %.6f\n", getmypid(), microtime(true)), FILE_APPEND | LOCK_EX);
