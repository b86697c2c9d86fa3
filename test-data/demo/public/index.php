<?php
// The demo app served by scripts/demo.sh: classic mode (this file runs per request).
$hits = UserCache\Cache::increment('demo:hits');
$opcache = function_exists('opcache_get_status') ? opcache_get_status(false) : false;
header('Content-Type: text/html; charset=utf-8');
?><!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>ferrophp demo</title></head>
<body>
<h1>ferrophp</h1>
<ul>
  <li>PHP <?= PHP_VERSION ?> (<?= PHP_ZTS ? 'ZTS' : 'NTS' ?>), SAPI <code><?= PHP_SAPI ?></code></li>
  <li>OPcache: <?= is_array($opcache) && $opcache['opcache_enabled'] ? 'on' : 'off' ?></li>
  <li>Hits, counted in <code>UserCache\Cache</code> shared by all PHP threads: <?= (int) $hits ?></li>
  <li>Served by <code><?= htmlspecialchars($_SERVER['SERVER_SOFTWARE']) ?></code> over <?= htmlspecialchars($_SERVER['SERVER_PROTOCOL']) ?></li>
</ul>
<p>The same page from a persistent worker script: <a href="/worker.php">/worker.php</a>.</p>
</body>
</html>
