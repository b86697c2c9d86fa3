<?php
// Proves the script ran: writes ?marker=.
file_put_contents($_GET['marker'], 'ran');
echo 'touched';
