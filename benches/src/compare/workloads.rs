//! What the harness measures: each workload's site, URL (classic and worker mode), the
//! strings its response must contain to count as the real page, its load and which
//! systems run it. `memory` is not in this table: it is the PSS workload
//! ([`super::memory`]), selected by the same `--only`/`--skip` names.

use serde::Serialize;

use super::systems::Kind;

/// The document root a workload runs against (see [`super::apps`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize)]
pub(crate) enum Site {
    Synthetic,
    WordPress,
    MediaWiki,
    Symfony,
}

/// The slow requests of a mixed workload: their paths and share of all requests.
pub(crate) struct SlowClass {
    pub(crate) classic_path: &'static str,
    pub(crate) worker_path: &'static str,
    pub(crate) fraction: f64,
}

pub(crate) struct Workload {
    pub(crate) name: &'static str,
    pub(crate) description: &'static str,
    pub(crate) site: Site,
    pub(crate) classic_path: &'static str,
    /// The path worker mode serves, and its worker script (relative to the root).
    pub(crate) worker: Option<(&'static str, &'static str)>,
    /// Strings the response must contain (checked on every system before and after its
    /// measurement, with status 200).
    pub(crate) markers: &'static [&'static str],
    pub(crate) post_body: Option<usize>,
    /// Session files put in a private `session.save_path` (the same directory for every
    /// system) before the workload's rounds; requests then carry one of
    /// [`SESSION_IDS`] session cookies. 0: no session set-up.
    pub(crate) session_files: usize,
    pub(crate) connections: u32,
    pub(crate) kinds: &'static [Kind],
    /// A second, slow request class mixed into this workload (then measured with
    /// `load::run` instead of wrk).
    pub(crate) slow: Option<SlowClass>,
    /// A real app: non-2xx responses counted by wrk's Lua hook, a longer warm-up.
    pub(crate) real_app: bool,
}

/// Session ids in rotation for a session workload: enough that two requests rarely wait on
/// one session's lock, few enough that the directory does not grow much.
pub(crate) const SESSION_IDS: usize = 1000;

const ALL_PHP: &[Kind] = &[Kind::FerrophpClassic, Kind::FerrophpWorker, Kind::NginxFpm];
const CLASSIC_ONLY: &[Kind] = &[Kind::FerrophpClassic, Kind::NginxFpm];
const HELLO: &[&str] = &["Hello, World!"];
const SYNTHETIC_WORKER: &str = "worker.php";

const fn synthetic(
    name: &'static str,
    description: &'static str,
    classic_path: &'static str,
    worker_path: &'static str,
    markers: &'static [&'static str],
) -> Workload {
    Workload {
        name,
        description,
        site: Site::Synthetic,
        classic_path,
        worker: Some((worker_path, SYNTHETIC_WORKER)),
        markers,
        post_body: None,
        session_files: 0,
        connections: 32,
        kinds: ALL_PHP,
        slow: None,
        real_app: false,
    }
}

const fn app(
    name: &'static str,
    description: &'static str,
    site: Site,
    classic_path: &'static str,
    markers: &'static [&'static str],
) -> Workload {
    Workload {
        name,
        description,
        site,
        classic_path,
        worker: None,
        markers,
        post_body: None,
        session_files: 0,
        connections: 16,
        kinds: CLASSIC_ONLY,
        slow: None,
        real_app: true,
    }
}

pub(crate) const WORKLOADS: &[Workload] = &[
    Workload {
        kinds: &[
            Kind::FerrophpClassic,
            Kind::FerrophpWorker,
            Kind::NginxFpm,
            Kind::NginxFpmNoKeepalive,
            Kind::HyperHello,
            Kind::FerrophpClassicAa,
        ],
        ..synthetic("hello", "hello world", "/hello.php", "/worker.php/hello", HELLO)
    },
    Workload {
        post_body: Some(4096),
        ..synthetic("echo-4k", "echo of a 4 KB POST", "/echo.php", "/worker.php/echo", &["xxxxxxxxxxxxxxxx"])
    },
    synthetic("print-server", "print_r($_SERVER)", "/server.php", "/worker.php/server", &["[REQUEST_URI] =>"]),
    synthetic("json-api", "json_encode of 100 records", "/json.php", "/worker.php/json", &["\"name\":\"Record 100\""]),
    synthetic(
        "framework-page",
        "autoload 50 classes, render a template",
        "/page.php",
        "/worker.php/page",
        &["<title>Framework page</title>"],
    ),
    Workload {
        kinds: CLASSIC_ONLY,
        worker: None,
        ..synthetic("static-1mb", "a 1 MB static file", "/static/1mb.bin", "", &[])
    },
    Workload {
        session_files: 150_000,
        ..synthetic(
            "sessions",
            "session_start() and a counter in $_SESSION, 150,000 other session files in the save path, 1,000 session ids in rotation",
            "/session.php",
            "/worker.php/session",
            &["visit "],
        )
    },
    Workload {
        connections: 1000,
        kinds: &[Kind::FerrophpClassic, Kind::FerrophpWorker, Kind::NginxFpm, Kind::HyperHello],
        ..synthetic("burst-1000", "hello world, 1,000 concurrent connections", "/hello.php", "/worker.php/hello", HELLO)
    },
    Workload {
        connections: 64,
        slow: Some(SlowClass {
            classic_path: "/sleep.php",
            worker_path: "/worker.php/sleep",
            fraction: 0.05,
        }),
        ..synthetic(
            "head-of-line",
            "hello world with 5% of requests sleeping 200 ms in PHP (`sleep.php`); closed-loop generator instead of wrk (`benches/src/load.rs`), run once with hello world alone and once with the mix; the target is the fast requests' p99 with the slow ones within 2x of their p99 alone",
            "/hello.php",
            "/worker.php/hello",
            HELLO,
        )
    },
    app(
        "wordpress-front",
        "WordPress 6.1 front page (`/`): the 10 newest posts, twentytwentyone theme, MariaDB",
        Site::WordPress,
        "/",
        &["A post with comments", "Bench post 12:", "twentytwentyone"],
    ),
    app(
        "wordpress-post",
        "WordPress single post page with 24 comments (8 of them replies), pretty permalink (`/a-post-with-comments/`)",
        Site::WordPress,
        "/a-post-with-comments/",
        &["<h1 class=\"entry-title\">A post with comments</h1>", "Comment 24:", "Comment 1:"],
    ),
    app(
        "wordpress-rest",
        "WordPress REST API post listing (`/wp-json/wp/v2/posts`, 10 posts as JSON)",
        Site::WordPress,
        "/wp-json/wp/v2/posts",
        &["\"slug\":\"a-post-with-comments\"", "\"slug\":\"bench-post-12\""],
    ),
    app(
        "mediawiki-view",
        "MediaWiki 1.39 Main_Page on SQLite, no object cache on either side (main cache CACHE_NONE, local-server cache empty, parser/message caches in the database)",
        Site::MediaWiki,
        "/index.php?title=Main_Page",
        &[
            "MediaWiki has been installed",
            "compare-caches: local-server=EmptyBagOStuff main=EmptyBagOStuff",
        ],
    ),
    Workload {
        worker: Some(("/worker.php/catalogue/1", "worker.php")),
        kinds: ALL_PHP,
        ..app(
            "symfony-page",
            "Symfony 5.4 (Debian's FrameworkBundle + TwigBundle + Twig), prod container from var/cache, a controller rendering a 40-row Twig page (`/catalogue/1`); worker mode boots the kernel once per thread (runtime/frankenphp-symfony's loop)",
            Site::Symfony,
            "/catalogue/1",
            &["<h1>Catalogue, page 1</h1>", "SKU-0040", "Rendered by Symfony 5.4"],
        )
    },
];

/// The name of the PSS workload.
pub(crate) const MEMORY: &str = "memory";

/// The workloads `--only`/`--skip` select, and whether the PSS workload is selected.
pub(crate) fn select(
    only: &[String],
    skip: &[String],
) -> Result<(Vec<&'static Workload>, bool), String> {
    let known = |name: &String| name == MEMORY || WORKLOADS.iter().any(|w| w.name == name);
    if let Some(bad) = only.iter().chain(skip).find(|n| !known(n)) {
        return Err(format!(
            "unknown workload {bad:?}; known: {}",
            names().join(", ")
        ));
    }
    let chosen = |name: &str| {
        (only.is_empty() || only.iter().any(|o| o == name)) && !skip.iter().any(|s| s == name)
    };
    let workloads = WORKLOADS.iter().filter(|w| chosen(w.name)).collect();
    Ok((workloads, chosen(MEMORY)))
}

pub(crate) fn names() -> Vec<&'static str> {
    WORKLOADS.iter().map(|w| w.name).chain([MEMORY]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_and_skip_select_by_name_and_refuse_unknown_ones() {
        let names = |only: &[&str], skip: &[&str]| {
            let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
            let (w, memory) = select(&s(only), &s(skip)).unwrap();
            (w.iter().map(|w| w.name).collect::<Vec<_>>(), memory)
        };
        assert_eq!(names(&["hello", "memory"], &[]), (vec!["hello"], true));
        let (all, memory) = names(&[], &["memory", "hello"]);
        assert!(!memory && !all.contains(&"hello") && all.contains(&"symfony-page"));
        let Err(err) = select(&["wordpress".into()], &[]) else {
            panic!("an unknown name was accepted");
        };
        assert!(
            err.contains("unknown workload \"wordpress\"") && err.contains("wordpress-front"),
            "{err}"
        );
    }

    #[test]
    fn every_real_app_workload_checks_markers_and_runs_against_the_tuned_baseline() {
        for w in WORKLOADS.iter().filter(|w| w.real_app) {
            assert!(!w.markers.is_empty(), "{}", w.name);
            assert!(w.kinds.contains(&Kind::NginxFpm), "{}", w.name);
            assert!(
                w.kinds.contains(&Kind::FerrophpWorker) == w.worker.is_some(),
                "{}",
                w.name
            );
        }
    }
}
