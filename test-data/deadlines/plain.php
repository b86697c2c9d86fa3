<?php
// A blocking read and no PHP code after it but an echo: the deadline must end the request
// all the same (the VM looks for the deadline as the internal call returns), not let it
// finish with a 200.
$f = stream_socket_client('tcp://127.0.0.1:' . (int) $_GET['port'], $errno, $errstr, 5);
stream_set_timeout($f, 30);
$data = fread($f, 100);
echo 'read returned after all: ', strlen($data), " bytes\n";
