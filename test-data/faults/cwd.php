<?php
// ?chdir=DIR: chdir(DIR) first. ?ms=: sleep. Then report the working directory and what
// relative paths reach: data.txt and inc.php live next to this page.
$changed = isset($_GET['chdir']) ? chdir($_GET['chdir']) : null;
usleep((int) ($_GET['ms'] ?? 0) * 1000);
header('Content-Type: application/json');
echo json_encode([
    'changed' => $changed,
    'cwd' => getcwd(),
    'data' => @file_get_contents('data.txt'),
    'include' => @include 'inc.php',
]);
