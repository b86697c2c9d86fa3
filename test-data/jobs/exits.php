<?php
// A background script that returns at once: each run appends a line to $JOBS_OUT.
file_put_contents(getenv('JOBS_OUT'), sprintf("run %.6f\n", microtime(true)), FILE_APPEND | LOCK_EX);
