<?php
// A page with a session: what the session benchmark and tests request.
session_start();
$_SESSION['n'] = ($_SESSION['n'] ?? 0) + 1;
echo session_save_path(), "|", ini_get('session.gc_probability'), "|", $_SESSION['n'], "\n";
