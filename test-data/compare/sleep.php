<?php
// The slow class of the head-of-line workload: 200 ms in PHP, holding its thread.
usleep(200000);
echo 'Slept';
