<?php
// The scheduling policy (field 41 of /proc/.../stat) of the PHP thread running this
// request, as JSON.
$stat = file_get_contents('/proc/thread-self/stat');
// The command name in parentheses may hold spaces: count fields after its ')'.
$fields = explode(' ', substr($stat, strrpos($stat, ')') + 2));
header('Content-Type: application/json');
echo json_encode(['policy' => (int) $fields[38]]);
