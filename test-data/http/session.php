<?php
// A session counter: each request with the session cookie increments it.
session_start();
$_SESSION['n'] = ($_SESSION['n'] ?? 0) + 1;
echo $_SESSION['n'];
