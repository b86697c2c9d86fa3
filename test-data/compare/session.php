<?php
// The `sessions` workload of the comparison harness: a session started on every request
// (the save path holds 150,000 other session files), one counter kept in it.
session_start();
$_SESSION['n'] = ($_SESSION['n'] ?? 0) + 1;
echo 'visit ', $_SESSION['n'];
