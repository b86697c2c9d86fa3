<?php
// A scheduled script: appends its run time to $JOBS_OUT, and dispatches a job.
file_put_contents(getenv('JOBS_OUT'), sprintf("scheduled %.6f\n", microtime(true)), FILE_APPEND | LOCK_EX);
