<?php
// error_log() and a warning; with display_errors=0 neither reaches the response.
error_log('ferrophp-error-log-marker ' . ($_GET['tag'] ?? ''));
trigger_error('ferrophp-warning-marker', E_USER_WARNING);
echo $ferrophp_undefined_variable;
echo 'logged';
