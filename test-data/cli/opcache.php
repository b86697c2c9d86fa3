<?php
// Reports whether OPcache is really on in this SAPI, and that the SAPI name is consistent.
$status = function_exists('opcache_get_status') ? opcache_get_status(false) : false;
echo json_encode([
    'sapi' => php_sapi_name(),
    'sapi_const' => PHP_SAPI,
    'opcache_enabled' => is_array($status) && $status['opcache_enabled'],
    'zts' => PHP_ZTS,
    'version' => PHP_VERSION,
]), "\n";
