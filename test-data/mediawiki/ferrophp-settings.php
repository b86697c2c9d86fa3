<?php
// Settings of the ferrophp test instance, loaded at the end of the installer's
// LocalSettings.php.

// Links and redirects name the address the test server listens on.
$wgServer = WebRequest::detectServer();
$wgCanonicalServer = $wgServer;

// Every cache MediaWiki has goes through APCu's functions (here ferrophp's apcu_*
// layer): CACHE_ACCEL is the local-server cache, which MediaWiki picks itself when
// apcu_fetch() exists and PHP_SAPI is not "cli" (ObjectCache::makeLocalServerCache()).
// The installer already chose it for the main cache; parser output, messages and
// sessions follow it explicitly, so page views, logins and edits all store and fetch.
$wgMainCacheType = CACHE_ACCEL;
$wgParserCacheType = CACHE_ACCEL;
$wgMessageCacheType = CACHE_ACCEL;
$wgSessionCacheType = CACHE_ACCEL;

// Writable state stays inside the instance.
$wgCacheDirectory = __DIR__ . '/cache';
$wgUploadDirectory = __DIR__ . '/images';
$wgEnableUploads = false;
$wgUseImageMagick = false;

// Failures are visible to the test: details in error pages, and logs it can read.
$wgShowExceptionDetails = true;
$wgDebugLogGroups['exception'] = __DIR__ . '/exception.log';
$wgDebugLogGroups['error'] = __DIR__ . '/error.log';

// No outbound traffic, no rate limits in the way of a few hundred requests.
$wgPingback = false;
$wgRateLimits = [];

// Jobs run at the end of web requests by default; with SQLite they collide with the
// test's concurrent edits ("database is locked", a limit of SQLite under MediaWiki's
// deferred transactions, not of the server). Nothing here needs them.
$wgJobRunRate = 0;

// A test may add its own overrides next to this file.
if (is_file(__DIR__ . '/test-overrides.php')) {
    require __DIR__ . '/test-overrides.php';
}
