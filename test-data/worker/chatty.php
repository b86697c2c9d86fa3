<?php
// A worker script that prints outside its handler: at boot (buffered by output_buffering)
// and between requests. None of it may reach a client; it goes to the server log.
echo "boot output\n";
$n = 0;
while (ferrophp_handle_request(function () use (&$n) {
    header('X-Handled: yes');
    echo 'request ', ++$n;
})) {
    echo "between requests\n";
}
