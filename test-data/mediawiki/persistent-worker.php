<?php
// A persistent worker for MediaWiki's index.php or api.php (copied over the docroot's
// entry point of the same name; the entry is chosen by this file's name): MediaWiki is
// set up once per PHP thread (WebStart.php: autoloader, settings, extensions), then each
// request gets what Setup.php and the entry point would give it, in a loop.
//
// MediaWiki is not written for this, and its own resets are for its test suite only, so
// private singletons are reset through bound closures: the service container (fresh
// services, hence no stale in-process caches such as LinkCache across requests), the
// main RequestContext, the session manager's global session, and the response statics. Class definitions,
// configuration, hooks and ExtensionRegistry stay, as do the values they fetched from
// the apcu_* cache: that is what makes this worker mode rather than classic mode with
// extra steps. Used by server/tests/mediawiki.rs with $wgPHPSessionHandling = 'disable'
// (MediaWiki's PHP session handler is for legacy $_SESSION users only).

use MediaWiki\HeaderCallback;
use MediaWiki\HookContainer\HookRunner;
use MediaWiki\MediaWikiServices;
use MediaWiki\Session\SessionManager;

$entry = basename(__FILE__, '.php');
define('MW_CONFIG_FILE', dirname(__DIR__) . '/LocalSettings.php');
define('MW_ENTRY_POINT', $entry);
if ($entry === 'api') {
    define('MW_API', true);
}
// Setup.php looks at the request it runs in; the boot request has no client.
$_SERVER['REMOTE_ADDR'] ??= '127.0.0.1';
$_SERVER['REQUEST_METHOD'] ??= 'GET';
require '/usr/share/mediawiki/includes/WebStart.php';

// MediaWikiServices::resetGlobalInstance() without its tests-only guard.
$resetServices = Closure::bind(static function (): void {
    $old = self::$instance;
    self::$instance = self::newInstance($old->getBootstrapConfig(), 'load');
    (new HookRunner($old->getHookContainer()))->onMediaWikiServices(self::$instance);
    self::$instance->importWiring($old, ['BootstrapConfig']);
    $old->destroy();
}, null, MediaWikiServices::class);
$resetContext = Closure::bind(static function (): void {
    self::$instance = null;
}, null, RequestContext::class);
// Response state MediaWiki keeps in statics: cookies already set, and "nothing more may
// be sent" from the end of the previous request (doPostOutputShutdown).
$resetResponse = Closure::bind(static function (): void {
    self::$setCookies = [];
    self::$disableForPostSend = false;
}, null, WebResponse::class);
$resetHeaderCallback = Closure::bind(static function (): void {
    self::$headersSentException = null;
    self::$messageSent = false;
}, null, HeaderCallback::class);
$resetSessions = Closure::bind(static function (): void {
    self::$instance = null;
    self::$globalSession = null;
    self::$globalSessionRequest = null;
}, null, SessionManager::class);

$resets = [$resetServices, $resetContext, $resetSessions, $resetResponse, $resetHeaderCallback];
$handler = static function () use ($entry, $resets): void {
    global $wgRequest, $wgUser, $wgLang, $wgOut, $wgTitle, $wgInitialSessionId;
    // Shows the test that one PHP state served many requests.
    static $served = 0;
    header('X-Worker-Served: ' . ++$served);
    foreach ($resets as $reset) {
        $reset();
    }
    // header_register_callback() lasts one request.
    HeaderCallback::register();
    ObjectCache::clear();
    Title::clearCaches();

    // What Setup.php does per request: the request, its session, the legacy globals.
    $wgRequest = RequestContext::getMain()->getRequest();
    if ($entry === 'index') {
        $wgRequest->interpolateTitle();
    }
    $session = SessionManager::getGlobalSession();
    $wgInitialSessionId = $session->isPersistent() ? $session->getSessionId() : null;
    $session->renew();
    unset($session);
    // Replacing $wgUser is deprecated (its destructor says so); Setup.php disarms that
    // warning the same way at shutdown.
    StubGlobalUser::$destructorDeprecationDisarmed = true;
    $wgUser = new StubGlobalUser(RequestContext::getMain()->getUser());
    $wgLang = new StubUserLang();
    $wgOut = RequestContext::getMain()->getOutput();
    $wgTitle = null;

    if ($entry === 'index') {
        // index.php's wfIndexMain().
        (new MediaWiki())->run();
        return;
    }
    // api.php's wfApiMain(), without its path-info redirect and request log.
    $wgTitle = Title::makeTitle(NS_SPECIAL, 'Badtitle/dummy title for API calls set in api.php');
    RequestContext::getMain()->setTitle($wgTitle);
    try {
        $processor = new ApiMain(RequestContext::getMain(), true);
        Hooks::runner()->onApiBeforeMain($processor);
    } catch (Throwable $e) {
        ApiMain::handleApiBeforeMainException($e);
        $processor = false;
    }
    if ($processor) {
        $processor->execute();
    }
    (new MediaWiki())->doPostOutputShutdown();
};

while (ferrophp_handle_request($handler)) {
    gc_collect_cycles();
}
