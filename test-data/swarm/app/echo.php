<?php
// Echoes the request body: the request of the project's k6 script (test-data/load-test.js),
// which needs no session and must keep working whatever the session store does.
header('Content-Type: text/plain');
echo file_get_contents('php://input');
