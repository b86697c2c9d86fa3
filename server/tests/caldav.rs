//! DAViCal (Debian's `davical` package), a CalDAV server written in PHP, driven through a
//! CalDAV client's whole flow over real TCP against ferrophp and against nginx + php-fpm
//! (benches/baseline/nginx-fpm.sh: nginx's usual `location ~ [^/]\.php(/|$)` with
//! `fastcgi_split_path_info`), each on a fresh database of its own. Every step must get
//! the status the CalDAV RFCs give it, and the same status, `Location`, `ETag` and body
//! (ports aside) from both servers.
//!
//! The flow: RFC 6764 discovery (`GET /caldav.php/.well-known/caldav`, which DAViCal
//! answers 301 to its context path: PATH_INFO that starts with a dot, which ferrophp's
//! dotfile rule once refused with its own 404 before PHP ran), PROPFIND for the
//! current-user-principal and the calendar-home-set, MKCALENDAR, PUT with
//! `If-None-Match: *` (created, then 412), a calendar-query REPORT, PUT with `If-Match`
//! (412 on a stale ETag, 204 on the current one), DELETE with `If-Match` (412, then 204)
//! and a REPORT that no longer finds the event. `--nocapture` prints the table.
//!
//! DAViCal reads `/etc/davical/config.php`: each server runs in a private mount
//! namespace (`unshare`, as root) with the test's own config bound over `/etc/davical`
//! (as debian_apps.rs does), so the host's stays untouched. The databases live on a
//! private PostgreSQL (`common::db`), made by DAViCal's own `create-database.sh`.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::db::{postgres_bin, run, running_as_root, Postgres};
use common::{client_builder, serve_with_binds};
use reqwest::blocking::Client;

const HTDOCS: &str = "/usr/share/davical/htdocs";
const ADMIN_PASSWORD: &str = "caldav-test-pass";

/// One event, as a client writes it (CRLF lines).
const EVENT: &str = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//ferrophp//caldav test//EN\r\n\
    BEGIN:VEVENT\r\nUID:event-1@ferrophp.test\r\nDTSTAMP:20260101T000000Z\r\n\
    DTSTART:20260115T100000Z\r\nDTEND:20260115T110000Z\r\nSUMMARY:Planning\r\n\
    END:VEVENT\r\nEND:VCALENDAR\r\n";

const PRINCIPAL: &str = r#"<?xml version="1.0" encoding="utf-8"?>
<d:propfind xmlns:d="DAV:"><d:prop><d:current-user-principal/></d:prop></d:propfind>"#;

const HOME_SET: &str = r#"<?xml version="1.0" encoding="utf-8"?>
<d:propfind xmlns:d="DAV:" xmlns:c="urn:ietf:params:xml:ns:caldav">
<d:prop><c:calendar-home-set/></d:prop></d:propfind>"#;

const MKCALENDAR: &str = r#"<?xml version="1.0" encoding="utf-8"?>
<c:mkcalendar xmlns:d="DAV:" xmlns:c="urn:ietf:params:xml:ns:caldav">
<d:set><d:prop><d:displayname>Team</d:displayname></d:prop></d:set></c:mkcalendar>"#;

const CALENDAR_QUERY: &str = r#"<?xml version="1.0" encoding="utf-8"?>
<c:calendar-query xmlns:d="DAV:" xmlns:c="urn:ietf:params:xml:ns:caldav">
<d:prop><d:getetag/><c:calendar-data/></d:prop>
<c:filter><c:comp-filter name="VCALENDAR"><c:comp-filter name="VEVENT"/></c:comp-filter></c:filter>
</c:calendar-query>"#;

/// What a step's answer is compared by.
#[derive(Debug, PartialEq)]
struct Answer {
    status: u16,
    location: Option<String>,
    etag: Option<String>,
    body: String,
}

/// A client talking to one server.
struct Dav {
    client: Client,
    base: String,
    port: u16,
}

impl Dav {
    fn new(port: u16) -> Dav {
        Dav {
            client: client_builder().build().unwrap(),
            base: format!("http://127.0.0.1:{port}"),
            port,
        }
    }

    /// `method path`, as the admin, with `headers` and `body`; the port in the answer's
    /// `Location` and body replaced by `PORT`.
    fn send(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Answer {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        // The host nginx's `server_name` gives PHP, so both name themselves alike.
        let mut request = self
            .client
            .request(method.clone(), format!("{}{path}", self.base))
            .header("Host", format!("localhost:{}", self.port))
            .basic_auth("admin", Some(ADMIN_PASSWORD))
            .body(body.to_owned());
        if !body.is_empty() {
            let content_type = if body.starts_with("BEGIN:VCALENDAR") {
                "text/calendar; charset=utf-8"
            } else {
                "application/xml; charset=utf-8"
            };
            request = request.header("Content-Type", content_type);
        }
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let response = request
            .send()
            .unwrap_or_else(|e| panic!("{method} {path} on port {}: {e}", self.port));
        let port = format!(":{}", self.port);
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .map(|v| v.to_str().unwrap().replace(&port, ":PORT"))
        };
        Answer {
            status: response.status().as_u16(),
            location: header("location"),
            etag: header("etag"),
            body: response.text().unwrap().replace(&port, ":PORT"),
        }
    }
}

/// The client's flow; each step's name and answer.
fn flow(dav: &Dav) -> Vec<(&'static str, Answer)> {
    let calendar = "/caldav.php/admin/team/";
    let event = "/caldav.php/admin/team/event-1.ics";
    let moved = EVENT.replace("SUMMARY:Planning", "SUMMARY:Planning (moved)");
    let depth0 = [("Depth", "0")];
    let mut steps = vec![
        (
            "GET /caldav.php/.well-known/caldav (RFC 6764)",
            dav.send("GET", "/caldav.php/.well-known/caldav", &[], ""),
        ),
        (
            "PROPFIND current-user-principal",
            dav.send("PROPFIND", "/caldav.php/", &depth0, PRINCIPAL),
        ),
        (
            "PROPFIND calendar-home-set",
            dav.send("PROPFIND", "/caldav.php/admin/", &depth0, HOME_SET),
        ),
        (
            "MKCALENDAR",
            dav.send("MKCALENDAR", calendar, &[], MKCALENDAR),
        ),
        (
            "PUT If-None-Match: * (new)",
            dav.send("PUT", event, &[("If-None-Match", "*")], EVENT),
        ),
        (
            "PUT If-None-Match: * (exists)",
            dav.send("PUT", event, &[("If-None-Match", "*")], EVENT),
        ),
        (
            "REPORT calendar-query",
            dav.send("REPORT", calendar, &[("Depth", "1")], CALENDAR_QUERY),
        ),
    ];
    let created = steps[4].1.etag.clone().expect("PUT answered with an ETag");
    steps.push((
        "PUT If-Match: stale",
        dav.send("PUT", event, &[("If-Match", "\"stale\"")], &moved),
    ));
    steps.push((
        "PUT If-Match: current",
        dav.send("PUT", event, &[("If-Match", created.as_str())], &moved),
    ));
    let updated = steps[8].1.etag.clone().unwrap_or_default();
    steps.push((
        "DELETE If-Match: replaced",
        dav.send("DELETE", event, &[("If-Match", created.as_str())], ""),
    ));
    steps.push((
        "DELETE If-Match: current",
        dav.send("DELETE", event, &[("If-Match", updated.as_str())], ""),
    ));
    steps.push((
        "REPORT calendar-query (empty)",
        dav.send("REPORT", calendar, &[("Depth", "1")], CALENDAR_QUERY),
    ));
    steps
}

/// The statuses RFC 4791/4918/6764 give the steps, in order.
const EXPECTED: [u16; 12] = [301, 207, 207, 201, 201, 412, 207, 412, 204, 412, 204, 207];

/// A DAViCal database `name` on `postgres`, made by DAViCal's own script, and the config
/// directory (to bind over `/etc/davical`) that points DAViCal at it.
fn davical_database(postgres: &Postgres, dir: &Path, name: &str) -> PathBuf {
    let path = format!(
        "{}:{}",
        postgres_bin().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    run(
        Command::new("sh")
            .arg("/usr/share/davical/dba/create-database.sh")
            .args([name, ADMIN_PASSWORD])
            .env("PGHOST", &postgres.sockdir)
            .env("PGPORT", postgres.port.to_string())
            .env("PGUSER", "postgres")
            .env("PATH", path),
        "DAViCal's create-database.sh",
    );
    let etc = dir.join(format!("etc-{name}"));
    std::fs::create_dir(&etc).unwrap();
    std::fs::write(
        etc.join("config.php"),
        format!(
            "<?php\n$c->db_connect[] = array('dsn' => 'pgsql:dbname={name};host={};port={}', \
             'dbuser' => 'davical_app');\n$c->system_name = 'ferrophp CalDAV test';\n\
             $c->admin_email = 'admin@example.test';\n",
            postgres.sockdir.display(),
            postgres.port
        ),
    )
    .unwrap();
    etc
}

/// nginx + php-fpm serving DAViCal, started in a mount namespace where `etc` is
/// `/etc/davical` (the daemons stay in it); stopped on drop.
struct NginxFpm {
    run_dir: PathBuf,
    port: u16,
}

impl NginxFpm {
    fn start(run_dir: PathBuf, etc: &Path) -> NginxFpm {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../benches/baseline/nginx-fpm.sh");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let baseline = NginxFpm { run_dir, port };
        run(
            Command::new("unshare")
                .args(["--mount", "--propagation", "private", "--", "/bin/sh", "-c"])
                .arg(r#"mount --bind "$0" /etc/davical && exec bash "$1" start "$2" "$3" "$4" 2 1"#)
                .arg(etc)
                .arg(&script)
                .arg(&baseline.run_dir)
                .arg(HTDOCS)
                .arg(port.to_string()),
            "nginx + php-fpm",
        );
        baseline
    }
}

impl Drop for NginxFpm {
    fn drop(&mut self) {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../benches/baseline/nginx-fpm.sh");
        let _ = Command::new("bash")
            .arg(script)
            .arg("stop")
            .arg(&self.run_dir)
            .status();
    }
}

#[test]
fn a_caldav_client_gets_the_same_answers_as_from_nginx_and_php_fpm() {
    assert!(
        Path::new(HTDOCS).join("caldav.php").exists(),
        "Debian's davical package is not installed (scripts/install-test-deps.sh installs it)"
    );
    assert!(
        running_as_root(),
        "the CalDAV test binds its DAViCal config in a mount namespace: run it as root"
    );
    let dir = tempfile::tempdir().unwrap();
    let postgres = Postgres::start(dir.path());
    let fpm_etc = davical_database(&postgres, dir.path(), "davical_fpm");
    let ferrophp_etc = davical_database(&postgres, dir.path(), "davical_ferrophp");

    let baseline = NginxFpm::start(dir.path().join("nginx-fpm"), &fpm_etc);
    let expected = flow(&Dav::new(baseline.port));

    let mut server = serve_with_binds(
        dir.path(),
        Path::new(HTDOCS),
        &[(ferrophp_etc.as_path(), "/etc/davical")],
        &[],
        &[],
    );
    let got = flow(&Dav::new(server.addr.port()));

    println!("| step | nginx + php-fpm | ferrophp |");
    println!("|---|---:|---:|");
    for ((step, fpm), (_, ours)) in expected.iter().zip(&got) {
        println!("| {step} | {} | {} |", fpm.status, ours.status);
    }
    let statuses = |answers: &[(&str, Answer)]| -> Vec<u16> {
        answers.iter().map(|(_, a)| a.status).collect()
    };
    assert_eq!(
        statuses(&expected),
        EXPECTED,
        "nginx + php-fpm: {expected:#?}"
    );
    for ((step, fpm), (_, ours)) in expected.iter().zip(&got) {
        assert_eq!(ours, fpm, "{step}: ferrophp differs from nginx + php-fpm");
    }
    // The discovery redirect names the context path, and the REPORT found the event.
    assert_eq!(
        got[0].1.location.as_deref(),
        Some("http://localhost:PORT/caldav.php/")
    );
    assert!(got[6].1.body.contains("SUMMARY:Planning"), "{:#?}", got[6]);
    assert!(!got[11].1.body.contains("event-1.ics"), "{:#?}", got[11]);
    assert!(server.is_running(), "{}", server.stderr());
}
