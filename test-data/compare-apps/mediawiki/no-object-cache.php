<?php
// The comparison harness's MediaWiki (benches/src/compare/apps/mediawiki.rs): loaded as
// test-overrides.php after the instance's own settings, on every system alike.
//
// No object cache on either side, so the engines are compared, not the caches: MediaWiki
// picks APCu by itself whenever apcu_fetch() exists (ObjectCache::makeLocalServerCache()),
// which it does under ferrophp (its built-in apcu_* layer) and not under Debian's php-fpm
// (no php-apcu). So the main cache is CACHE_NONE, and the local-server cache, which the
// extension registry and the services use whatever $wgMainCacheType says, is an empty
// one on both. The parser, message and session caches are what MediaWiki itself falls
// back to without an object cache (CACHE_ANYTHING resolves to CACHE_DB then): the SQLite
// database both sides read.
$wgMainCacheType = CACHE_NONE;
$wgParserCacheType = CACHE_DB;
$wgMessageCacheType = CACHE_DB;
$wgSessionCacheType = CACHE_DB;
ExtensionRegistry::getInstance()->setCache(new EmptyBagOStuff());
$wgHooks['MediaWikiServices'][] = static function ($services): void {
    $services->redefineService('LocalServerObjectCache', static function () {
        return new EmptyBagOStuff();
    });
};

// Each page says which caches it ran with, so the harness checks it on every system.
$wgHooks['BeforePageDisplay'][] = static function ($out): void {
    $services = MediaWiki\MediaWikiServices::getInstance();
    $out->addHTML(sprintf(
        "\n<!-- compare-caches: local-server=%s main=%s -->\n",
        get_class($services->getLocalServerObjectCache()),
        get_class(ObjectCache::getLocalClusterInstance())
    ));
};
