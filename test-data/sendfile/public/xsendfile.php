<?php
// Apache's form: X-Sendfile with a filesystem path from ?p=.
header('X-Sendfile: ' . $_GET['p']);
echo "PHP BODY THAT MUST NOT BE SENT\n";
