<?php
// Classic mode: ?topic=T (or topics[]=A&topics[]=B) &data=D [&private=1&id=I&type=E&retry=N]
require __DIR__ . '/lib.php';
mercure_test_publish($_GET);
