<?php
// WordPress in worker mode, as far as WordPress allows it (server/tests/databases.rs).
//
// WordPress is written for one request per process run: wp-settings.php defines its
// functions with plain `require`, so including index.php again on the next request would
// redeclare them. This worker therefore boots WordPress once per thread, in the global
// scope as index.php does (wp-load.php: config, database, plugins, theme, `init`), and per
// request runs what wp-blog-header.php runs after the load: `wp()` (parse the request,
// run the main query) and the template loader. What classic PHP resets by ending the
// process's request is reset here by hand: the slashed superglobals (wp_magic_quotes),
// the current user (from this request's cookies), the in-memory object cache, the script
// and style queues.
//
// Themes load header.php, footer.php and sidebar.php with require_once (get_header() ->
// locate_template(..., $load_once = true)), so after a thread's first request they would
// be skipped. The get_header/get_footer/get_sidebar actions, which fire just before,
// include them again (plain require) once they have been included before.
//
// How faithful: WordPress's own code and the theme run unchanged, against the same
// database as in classic mode, but its load happens once per thread, so anything a plugin
// computes at load time from the request (there is none at boot) is fixed at boot, and
// any global state beyond what is reset here survives between requests: function statics
// cannot be reset from PHP, so for example the emoji detection script
// (print_emoji_detection_script's `static $printed`) is printed on a thread's first
// response only. WordPress has
// no worker-mode contract; this proves the front end, not the admin (which stays classic:
// the worker serves only the URLs it matches).

// The site's address is fixed at boot, as in any deployment with a configured home URL
// (WP_HOME_URL from the worker's env): WordPress derives constants from it while loading
// (WP_CONTENT_URL, WP_PLUGIN_URL) and the script and style queues keep it as their base.
define('WP_HOME', $_SERVER['WP_HOME_URL'] ?? getenv('WP_HOME_URL'));
define('WP_SITEURL', WP_HOME);
// Told in a header, so the test can see that one boot served every request.
$ferrophp_booted = sprintf('%d-%.6f', getmypid(), microtime(true));
define('WP_USE_THEMES', true);
require __DIR__ . '/wp-load.php';

// The script and style queues remember what they printed ("done"), and inline additions
// accumulate on the registered items: each request starts from a deep copy of the
// queues as the boot left them.
$ferrophp_deps = serialize([wp_scripts(), wp_styles()]);

foreach (['get_header' => 'header', 'get_footer' => 'footer', 'get_sidebar' => 'sidebar'] as $hook => $part) {
    add_action($hook, static function ($name = null, $args = []) use ($part): void {
        $names = $name ? ["$part-$name.php", "$part.php"] : ["$part.php"];
        $file = locate_template($names);
        if ($file !== '' && in_array(realpath($file), get_included_files(), true)) {
            load_template($file, false, $args);
        }
    }, 10, 2);
}

$handler = static function (): void {
    // wp-settings.php slashes the superglobals once per classic request; these are new.
    wp_magic_quotes();
    $GLOBALS['current_user'] = null;
    wp_cache_flush();
    [$GLOBALS['wp_scripts'], $GLOBALS['wp_styles']] = unserialize($GLOBALS['ferrophp_deps']);
    header('X-Ferrophp-Worker-Boot: ' . $GLOBALS['ferrophp_booted']);
    wp();
    require ABSPATH . WPINC . '/template-loader.php';
};
while (ferrophp_handle_request($handler)) {
    gc_collect_cycles();
}
