<?php
// A background script that never asks whether to stop.
file_put_contents(getenv('JOBS_OUT'), "start\n", FILE_APPEND | LOCK_EX);
while (true) {
    usleep(100000);
}
