<?php
// Worker script for MediaWiki's index.php and api.php (copied over the docroot's entry
// point of the same name; the entry is chosen by this file's name).
//
// MediaWiki's entry points cannot run twice in one PHP request: they declare functions
// and constants, Setup.php runs once (require_once), and per-request state lives in
// singletons (RequestContext::getMain(), the services container, the session manager)
// that only its own test suite may reset. So each run of this script serves one request
// inside ferrophp_handle_request(), with MediaWiki's code unchanged, and then ends;
// ferrophp boots the script again on the same thread for the next one. Requests still go
// through the worker path (queue, per-request startup and shutdown inside the long boot
// request), and the apcu_* cache is shared with the classic threads serving load.php.
// persistent-worker.php is the other way: set up once, reset those singletons itself.
define('MW_CONFIG_FILE', dirname(__DIR__) . '/LocalSettings.php');
$entry = '/usr/share/mediawiki/' . basename(__FILE__);
ferrophp_handle_request(static function () use ($entry): void {
    // MediaWiki's Setup.php binds its configuration globals when included from a
    // function scope, as here.
    require $entry;
});
