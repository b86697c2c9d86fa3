<?php
// The serving process: a restarted server answers with another pid.
echo getmypid();
