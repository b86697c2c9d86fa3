<?php
// The quick-start demo: shows the embedded engine, its threads model and OPcache.
$opcache = function_exists('opcache_get_status') ? opcache_get_status(false) : false;
printf("ferrophp demo\n");
printf("  PHP %s (%s, SAPI %s)\n", PHP_VERSION, PHP_ZTS ? 'ZTS' : 'NTS', PHP_SAPI);
printf("  OPcache: %s\n", is_array($opcache) && $opcache['opcache_enabled'] ? 'on' : 'off');
printf("  extensions: %s\n", implode(', ', array_slice(get_loaded_extensions(), 0, 40)));
printf("  argv: %s\n", json_encode($argv));
