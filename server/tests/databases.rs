//! Real applications on real databases through ferrophp.
//!
//! The tests start their own MariaDB (`mariadbd` from Debian's `mariadb-server`) and
//! PostgreSQL (`postgres` from Debian's `postgresql`) as child processes (`common::db`),
//! each in a private temporary directory and reachable only through a unix socket in it (no TCP
//! listener: `--skip-networking`, `listen_addresses=''`). One pair of servers is shared by
//! the tests that run at the same time and stopped (SIGTERM for mariadbd, SIGINT for
//! postgres, SIGKILL after 20 s, by pid) when the last of them drops its handle, so nothing is left running or listening afterwards.
//!
//! What is proven, test by test:
//! - `wordpress_installs_logs_in_posts_and_reads_back_classic`: Debian's WordPress on
//!   MariaDB (mysqli through mysqlnd): the web installer, a cookie login, a post created
//!   through the REST API with the nonce, read back on the front page.
//! - `wordpress_front_page_in_worker_mode`: the same site served by a worker script that
//!   boots WordPress once per thread and runs its front controller per request.
//! - `persistent_connections_survive_worker_requests`: `mysqli` `p:` links, persistent PDO
//!   (MySQL and PostgreSQL) and `pg_pconnect` keep their server connection across worker
//!   requests, and what happens to a transaction a request leaves open (rolled back for
//!   handles the request opened; still open on handles the worker keeps, except pgsql).
//! - `persistent_connections_in_classic_mode`: the same reuse and clean-up across the
//!   classic requests of one PHP thread.
//! - `persistent_connections_close_with_their_worker_thread`: `--max-requests` replacing
//!   worker threads closes their connections; none pile up on the servers.
//! - `postgres_crud_app_classic_and_worker`: a small pgsql/pdo_pgsql app on PostgreSQL,
//!   the same files in classic and worker mode.
//! - `adminer_on_postgres_classic`: Debian's Adminer on PostgreSQL (pgsql extension):
//!   login, SQL command with its token, table browser.
//!
//! `docs/databases.md` has the findings and how to run this.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::db::{databases, run, Databases};
use common::{client_builder, Server};
use serde_json::Value;

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../test-data/databases")
        .canonicalize()
        .expect("test-data/databases exists")
}

fn start_server(root: &Path, args: &[&str], dbs: &Databases) -> Server {
    start_server_with_env(root, args, dbs, &[])
}

fn start_server_with_env(
    root: &Path,
    args: &[&str],
    dbs: &Databases,
    extra: &[(&str, &str)],
) -> Server {
    let env = dbs.env();
    let mut env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    env.extend_from_slice(extra);
    Server::start_with_env(root, args, &env)
}

fn get_json(client: &reqwest::blocking::Client, url: &str) -> Value {
    let r = client.get(url).send().unwrap();
    let status = r.status();
    let text = r.text().unwrap();
    assert_eq!(status, 200, "{url}: {text}");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{url}: {e}: {text}"))
}

const KINDS: [&str; 4] = ["mysqli", "pdo_mysql", "pdo_pgsql", "pgsql"];

#[test]
fn persistent_connections_survive_worker_requests() {
    let dbs = databases();
    let script = data_dir().join("persistent.php");
    let spec = format!("{},1", script.display());
    let server = start_server(&data_dir(), &["--threads", "1", "--worker", &spec], &dbs);
    let client = client_builder().build().unwrap();
    let url = |q: &str| server.url(&format!("/persistent.php?{q}"));

    // Many requests on the one worker thread: every handle comes back on the same
    // server-side connection (CONNECTION_ID(), pg_backend_pid()).
    let first = get_json(&client, &url("op=ids"));
    for i in 0..30 {
        let v = get_json(&client, &url(&format!("op=ids&i={i}")));
        assert_eq!(
            v["ids"], first["ids"],
            "connection changed on request {i}: {v}"
        );
    }
    assert!(first["ids"]["mysqli"].as_i64().unwrap() > 0, "{first}");
    // Session state (user variables, SET ...): mysqli's `p:` reuse resets the session
    // (COM_CHANGE_USER when the link leaves the free list), pg_pconnect's reuse runs
    // `RESET ALL`; persistent PDO hands the session over as it was, to whichever request
    // comes next, as it does in classic PHP.
    let set = get_json(&client, &url("op=set-session&tag=s1"));
    let next = get_json(&client, &url("op=ids"));
    eprintln!("session state: {set} then {next}");
    assert_eq!(next["ids"], first["ids"]);
    for (kind, kept) in [
        ("mysqli", false),
        ("pgsql", false),
        ("pdo_mysql", true),
        ("pdo_pgsql", true),
    ] {
        let expected = if kept { Value::from("s1") } else { Value::Null };
        assert_eq!(next["session"][kind], expected, "{kind}: {next}");
    }

    // A request opens a transaction on each handle and returns without ending it.
    let open = get_json(&client, &url("op=leave-open&tag=a"));
    for kind in KINDS {
        assert_eq!(open["in_txn"][kind], true, "{kind}: {open}");
    }
    assert_eq!(open["ids"], first["ids"]);
    // The next request gets the same connections back.
    let after = get_json(&client, &url("op=state"));
    eprintln!("after a request left transactions open: {after}");
    assert_eq!(after["ids"], first["ids"], "{after}");
    let committed: Vec<String> = after["committed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap().to_owned())
        .collect();
    for kind in KINDS {
        assert_eq!(
            after["in_txn"][kind], false,
            "{kind}: the transaction of the previous request is still open: {after}"
        );
        assert!(
            !committed.contains(&format!("{kind}:a")),
            "{kind}: an uncommitted insert got committed: {after}"
        );
    }

    // Handles the worker keeps across requests (in a static) keep their transaction: that
    // is app state, like any other object a worker keeps, and only the app can end it.
    // The exception is pgsql: its request end rolls back every persistent link, kept or
    // not, as it does at the end of a classic request.
    let kept = get_json(&client, &url("op=keep-open&tag=k"));
    let state = get_json(&client, &url("op=state"));
    eprintln!("kept handles: {kept} then {state}");
    for kind in KINDS {
        assert_eq!(kept["kept_in_txn"][kind], true, "{kind}: {kept}");
        let still_open = kind != "pgsql";
        assert_eq!(state["kept_in_txn"][kind], still_open, "{kind}: {state}");
        assert_eq!(state["in_txn"][kind], false, "{kind}: {state}");
        assert_ne!(
            state["kept_ids"][kind], state["ids"][kind],
            "{kind}: {state}"
        );
    }
    assert_eq!(state["committed"], serde_json::json!([]), "{state}");
    drop(server);
    // Nothing any request left open was ever committed.
    let left = dbs.mariadb.sql("SELECT COUNT(*) FROM app.marks");
    assert_eq!(left.trim(), "0");
    assert_eq!(
        dbs.postgres.sql("app", "SELECT COUNT(*) FROM marks").trim(),
        "0"
    );
}

/// A private WordPress site on the shared MariaDB, in a database of its own.
fn make_wordpress(dbs: &Databases, database: &str) -> tempfile::TempDir {
    dbs.mariadb.sql(&format!("CREATE DATABASE {database}"));
    let dir = tempfile::tempdir().unwrap();
    run(
        Command::new("bash")
            .arg(data_dir().join("make-wordpress.sh"))
            .arg(dir.path())
            .arg(&dbs.mariadb.socket)
            .arg(database),
        "make-wordpress.sh",
    );
    dir
}

/// Installs WordPress through its web installer, logs in, publishes a post through the
/// REST API (as the block editor does, with the `wp_rest` nonce) and returns its title.
fn install_login_and_post(server: &Server) -> String {
    let client = client_builder().cookie_store(true).build().unwrap();
    // Not installed yet: the front page sends the browser to the installer.
    let front = client.get(server.url("/")).send().unwrap();
    assert_eq!(front.status(), 302, "{}", front.text().unwrap());
    let location = front.headers()["location"].to_str().unwrap().to_owned();
    assert!(location.contains("/wp-admin/install.php"), "{location}");
    let form = client
        .get(server.url("/wp-admin/install.php?step=1"))
        .send()
        .unwrap();
    assert_eq!(form.status(), 200);
    let form = form.text().unwrap();
    assert!(
        form.contains("name=\"weblog_title\""),
        "no install form: {form}"
    );

    // The form as a browser posts it.
    let installed = client
        .post(server.url("/wp-admin/install.php?step=2"))
        .form(&[
            ("weblog_title", "ferrophp on MariaDB"),
            ("user_name", "admin"),
            ("admin_password", "correct horse battery staple"),
            ("admin_password2", "correct horse battery staple"),
            ("pw_weak", "1"),
            ("admin_email", "admin@example.invalid"),
            ("blog_public", "0"),
            ("Submit", "Install WordPress"),
            ("language", ""),
        ])
        .send()
        .unwrap();
    assert_eq!(installed.status(), 200);
    let installed = installed.text().unwrap();
    assert!(
        installed.contains("Success!"),
        "install failed: {installed}"
    );

    // Log in: wp-login.php first sets its test cookie, then takes the form.
    let login = client.get(server.url("/wp-login.php")).send().unwrap();
    assert_eq!(login.status(), 200);
    let logged_in = client
        .post(server.url("/wp-login.php"))
        .form(&[
            ("log", "admin"),
            ("pwd", "correct horse battery staple"),
            ("wp-submit", "Log In"),
            ("redirect_to", &server.url("/wp-admin/")),
            ("testcookie", "1"),
        ])
        .send()
        .unwrap();
    assert_eq!(logged_in.status(), 302, "{}", logged_in.text().unwrap());
    let dashboard = client.get(server.url("/wp-admin/")).send().unwrap();
    assert_eq!(dashboard.status(), 200);
    let dashboard = dashboard.text().unwrap();
    assert!(
        dashboard.contains("Dashboard"),
        "not logged in: {dashboard}"
    );

    // The nonce the admin's scripts get, then a post through the REST API.
    let nonce = client
        .get(server.url("/wp-admin/admin-ajax.php?action=rest-nonce"))
        .send()
        .unwrap()
        .text()
        .unwrap();
    assert!(
        nonce.len() == 10 && nonce.chars().all(|c| c.is_ascii_hexdigit()),
        "rest nonce: {nonce}"
    );
    let title = format!("Written through ferrophp {}", std::process::id());
    let created = client
        .post(server.url("/index.php?rest_route=/wp/v2/posts"))
        .header("X-WP-Nonce", nonce.trim())
        .header("Content-Type", "application/json")
        .body(
            serde_json::json!({
                "title": title,
                "content": "<p>Stored in MariaDB by mysqli, rendered by twentytwentyone: ünïcödé</p>",
                "status": "publish",
            })
            .to_string(),
        )
        .send()
        .unwrap();
    let status = created.status();
    let body = created.text().unwrap();
    assert_eq!(status, 201, "{body}");
    let post: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(post["title"]["raw"], title.as_str(), "{post}");
    // Without the nonce the same cookie is not enough (WordPress's CSRF rule holds).
    let refused = client
        .post(server.url("/index.php?rest_route=/wp/v2/posts"))
        .header("Content-Type", "application/json")
        .body(r#"{"title": "no nonce", "status": "publish"}"#)
        .send()
        .unwrap();
    assert_eq!(refused.status(), 401);
    title
}

/// The front page of an anonymous visitor shows the post.
fn front_page_shows(server: &Server, title: &str) {
    let client = client_builder().build().unwrap();
    let front = client.get(server.url("/")).send().unwrap();
    assert_eq!(front.status(), 200);
    let html = front.text().unwrap();
    assert!(
        html.contains(title),
        "post missing on the front page: {html}"
    );
    assert!(html.contains("ünïcödé"), "content missing: {html}");
    assert!(
        html.contains("twentytwentyone"),
        "not the theme's page: {html}"
    );
}

#[test]
fn wordpress_installs_logs_in_posts_and_reads_back_classic() {
    let dbs = databases();
    let site = make_wordpress(&dbs, "wp_classic");
    let server = start_server(&site.path().join("wp"), &[], &dbs);
    let started = Instant::now();
    let title = install_login_and_post(&server);
    front_page_shows(&server, &title);
    eprintln!("wordpress classic: {:?}", started.elapsed());
    // Really in MariaDB.
    let stored = dbs.mariadb.sql(
        "SELECT post_title FROM wp_classic.wp_posts WHERE post_status='publish' AND post_type='post'",
    );
    assert!(stored.contains(&title), "{stored}");
    let log = std::fs::read_to_string(site.path().join("debug.log")).unwrap_or_default();
    assert!(!log.contains("PHP Fatal"), "{log}");
}

/// A worker server whose worker serves the given URL paths (a `[[worker]]` table with
/// `match`), so the same URLs reach the worker as reach the classic scripts.
fn start_worker_server(
    root: &Path,
    script: &Path,
    matches: &str,
    env: &str,
    dbs: &Databases,
) -> (Server, tempfile::TempDir) {
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("ferrophp.toml");
    std::fs::write(
        &config,
        format!(
            "[[worker]]\nscript = {script:?}\nthreads = 1\nmatch = {matches:?}\nenv = {{ {env} }}\n"
        ),
    )
    .unwrap();
    let server = start_server(
        root,
        &["--threads", "1", "--config", config.to_str().unwrap()],
        dbs,
    );
    (server, tmp)
}

/// Create, read, update (with an optimistic revision check), delete through the notes
/// app's forms; returns the backend pids the app reported on each JSON read.
fn notes_crud_round(server: &Server, tag: &str) -> Vec<Value> {
    let client = client_builder().build().unwrap();
    let mut backends = Vec::new();
    let list = |backends: &mut Vec<Value>| -> Vec<Value> {
        let v = get_json(&client, &server.url("/index.php?action=json"));
        backends.push(v["backends"].clone());
        v["notes"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|n| n["title"].as_str().unwrap().starts_with(tag))
            .cloned()
            .collect()
    };
    let post = |fields: &[(&str, &str)]| {
        client
            .post(server.url("/index.php"))
            .form(fields)
            .send()
            .unwrap()
    };

    let title = format!("{tag} first");
    let created = post(&[
        ("action", "create"),
        ("title", &title),
        ("body", "ünïcödé <b>"),
    ]);
    assert_eq!(created.status(), 303);
    let location = created.headers()["location"].to_str().unwrap().to_owned();
    let id: i64 = location.rsplit('=').next().unwrap().parse().unwrap();
    let notes = list(&mut backends);
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert_eq!(notes[0]["id"], id);
    assert_eq!(notes[0]["body"], "ünïcödé <b>");
    assert_eq!(notes[0]["revision"], 1);

    let id_s = id.to_string();
    let update = |revision: &str, body: &str| {
        post(&[
            ("action", "update"),
            ("id", &id_s),
            ("revision", revision),
            ("body", body),
        ])
        .status()
    };
    assert_eq!(update("1", "second text"), 303);
    // A client that still holds revision 1 is refused; the transaction is rolled back.
    assert_eq!(update("1", "lost update"), 409);
    let notes = list(&mut backends);
    assert_eq!(notes[0]["body"], "second text");
    assert_eq!(notes[0]["revision"], 2);

    let html = client
        .get(server.url("/index.php"))
        .send()
        .unwrap()
        .text()
        .unwrap();
    assert!(
        html.contains(&format!(
            "<li id=\"note-{id}\">{title}: second text (r2)</li>"
        )),
        "{html}"
    );
    let second = post(&[
        ("action", "create"),
        ("title", &format!("{tag} second")),
        ("body", "<b>"),
    ]);
    assert_eq!(second.status(), 303);
    let html = client
        .get(server.url("/index.php"))
        .send()
        .unwrap()
        .text()
        .unwrap();
    assert!(html.contains(": &lt;b&gt; (r1)"), "not escaped: {html}");

    assert_eq!(post(&[("action", "delete"), ("id", &id_s)]).status(), 303);
    let notes = list(&mut backends);
    assert_eq!(notes.len(), 1);
    assert_eq!(notes[0]["title"], format!("{tag} second").as_str());
    for _ in 0..5 {
        list(&mut backends);
    }
    backends
}

#[test]
fn postgres_crud_app_classic_and_worker() {
    let dbs = databases();
    let root = data_dir().join("notes");

    let classic = start_server(&root, &[], &dbs);
    let backends = notes_crud_round(&classic, "classic");
    drop(classic);
    // Classic mode: every request opened its own connections.
    let distinct: std::collections::HashSet<String> =
        backends.iter().map(|b| b["pdo"].to_string()).collect();
    assert_eq!(distinct.len(), backends.len(), "{backends:?}");

    let (worker, _config) =
        start_worker_server(&root, &root.join("worker.php"), "/index.php", "", &dbs);
    let backends = notes_crud_round(&worker, "worker");
    // Worker mode: the thread's connections (kept in the app's statics) serve every
    // request.
    assert!(backends.iter().all(|b| b == &backends[0]), "{backends:?}");
    let v = get_json(
        &client_builder().build().unwrap(),
        &worker.url("/index.php?action=json"),
    );
    assert_eq!(v["worker"], true, "not served by the worker: {v}");
    // Both runs' surviving notes are in PostgreSQL.
    let titles = dbs
        .postgres
        .sql("app", "SELECT title FROM notes ORDER BY id");
    assert!(
        titles.contains("classic second") && titles.contains("worker second"),
        "{titles}"
    );
}

#[test]
fn wordpress_front_page_in_worker_mode() {
    let dbs = databases();
    let site = make_wordpress(&dbs, "wp_worker");
    let root = site.path().join("wp");
    // WordPress must be installed before a worker can boot it (an uninstalled site
    // redirects and exits during the load): install and post in classic mode first.
    let classic = start_server(&root, &[], &dbs);
    let title = install_login_and_post(&classic);
    drop(classic);

    let script = root.join("ferrophp-worker.php");
    // The worker boots with a fixed home URL (it has no request to take one from), and
    // the browser asks for that host.
    let host = "wp.test";
    let env = format!("WP_HOME_URL = \"http://{host}\"");
    let (server, _config) = start_worker_server(&root, &script, "/", &env, &dbs);
    let client = client_builder().build().unwrap();
    let get_front = || {
        client
            .get(server.url("/"))
            .header("Host", host)
            .send()
            .unwrap()
    };
    let mut boot = None;
    for i in 0..8 {
        let r = get_front();
        assert_eq!(r.status(), 200, "request {i}");
        let this_boot = r.headers()["x-ferrophp-worker-boot"]
            .to_str()
            .unwrap()
            .to_owned();
        let html = r.text().unwrap();
        // The post, rendered by the theme's loop, on every request.
        assert!(html.contains(&title), "request {i}: post missing: {html}");
        assert!(html.contains("ünïcödé"), "request {i}: {html}");
        // The whole page: header.php and footer.php too, which the theme loads with
        // require_once (wp-worker.php includes them again after the first request).
        assert!(
            html.contains("<title>ferrophp on MariaDB</title>"),
            "request {i}: {html}"
        );
        assert!(html.contains("</html>"), "request {i}: no footer: {html}");
        assert_eq!(html.matches("<html").count(), 1, "request {i}: {html}");
        // The theme's stylesheet at the configured address, and its inline script once
        // (the script and style queues are reset per request).
        let style =
            format!("id='twenty-twenty-one-style-css' href='http://{host}/wp-content/themes/");
        assert!(html.contains(&style), "request {i}: {html}");
        let inline = "id='twenty-twenty-one-ie11-polyfills-js-after'";
        assert_eq!(html.matches(inline).count(), 1, "request {i}: {html}");
        assert!(!html.contains("127.0.0.1"), "request {i}: {html}");
        // One boot served every request: WordPress was not loaded again.
        assert_eq!(
            boot.get_or_insert(this_boot.clone()),
            &this_boot,
            "rebooted at {i}"
        );
    }
    // A post written while the worker runs shows up on its next request (the in-memory
    // object cache is flushed per request).
    dbs.mariadb.sql(
        "UPDATE wp_worker.wp_posts SET post_title = 'Retitled behind the worker' \
         WHERE post_type = 'post' AND post_status = 'publish' AND post_title LIKE 'Written%'",
    );
    let html = get_front().text().unwrap();
    assert!(html.contains("Retitled behind the worker"), "{html}");
}

/// Classic mode: PHP threads live long, so persistent connections are reused across the
/// classic requests one thread serves too, and PHP's own request end cleans them up.
#[test]
fn persistent_connections_in_classic_mode() {
    let dbs = databases();
    let server = start_server(&data_dir(), &["--threads", "1"], &dbs);
    let client = client_builder().build().unwrap();
    let url = |q: &str| server.url(&format!("/persistent.php?{q}"));
    let first = get_json(&client, &url("op=ids"));
    for i in 0..10 {
        let v = get_json(&client, &url(&format!("op=ids&i={i}")));
        assert_eq!(
            v["ids"], first["ids"],
            "connection changed on request {i}: {v}"
        );
        assert_eq!(v["requests"], 1, "a classic request starts afresh: {v}");
    }
    let open = get_json(&client, &url("op=leave-open&tag=c"));
    assert_eq!(open["ids"], first["ids"]);
    let after = get_json(&client, &url("op=state"));
    for kind in KINDS {
        assert_eq!(open["in_txn"][kind], true, "{kind}: {open}");
        assert_eq!(after["in_txn"][kind], false, "{kind}: {after}");
    }
    assert_eq!(after["ids"], first["ids"], "{after}");
    assert_eq!(after["committed"], serde_json::json!([]), "{after}");
    // The PHP thread's exit closes its persistent connections cleanly (pg_pconnect links
    // used to corrupt the heap there: the process aborted instead of exiting 0).
    let mut server = server;
    server.sigterm();
    let status = server
        .wait_exit(Duration::from_secs(20))
        .expect("server exits");
    assert!(status.success(), "{status:?}\n{}", server.stderr());
}

/// Adminer (Debian's `adminer` package, one compiled PHP file) on PostgreSQL through the
/// pgsql extension: the login form, a session, an SQL command with its CSRF token, and
/// the table browser showing the row. Classic mode only: Adminer defines its functions at
/// file level, so it can run once per PHP request only.
#[test]
fn adminer_on_postgres_classic() {
    let adminer = Path::new("/usr/share/adminer/adminer.php");
    assert!(
        adminer.exists(),
        "Debian's adminer package is missing: scripts/install-test-deps.sh installs it"
    );
    let dbs = databases();
    let root = tempfile::tempdir().unwrap();
    std::fs::copy(adminer, root.path().join("index.php")).unwrap();
    let server = start_server(root.path(), &[], &dbs);
    let client = client_builder().cookie_store(true).build().unwrap();

    let login = client.get(server.url("/")).send().unwrap().text().unwrap();
    assert!(login.contains("name=\"auth[username]\""), "{login}");
    let pg_server = format!("{}:{}", dbs.postgres.sockdir.display(), dbs.postgres.port);
    let logged_in = client
        .post(server.url("/"))
        .form(&[
            ("auth[driver]", "pgsql"),
            ("auth[server]", pg_server.as_str()),
            ("auth[username]", "postgres"),
            // Adminer refuses empty passwords; the server trusts local connections.
            ("auth[password]", "unused"),
            ("auth[db]", "app"),
        ])
        .send()
        .unwrap();
    assert_eq!(logged_in.status(), 303, "{}", logged_in.text().unwrap());
    let query = format!(
        "pgsql={}&username=postgres&db=app&ns=public",
        common::encode(&pg_server)
    );

    let form = client
        .get(server.url(&format!("/?{query}&sql=")))
        .send()
        .unwrap()
        .text()
        .unwrap();
    assert!(form.contains("<title>SQL command"), "{form}");
    let token = form
        .split("name=\"token\" value=\"")
        .nth(1)
        .and_then(|t| t.split('"').next())
        .unwrap_or_else(|| panic!("no token: {form}"))
        .to_owned();
    let sql = "CREATE TABLE adminer_notes (id serial PRIMARY KEY, body text); \
               INSERT INTO adminer_notes (body) VALUES ('written by Adminer: ünïcödé');";
    let ran = client
        .post(server.url(&format!("/?{query}&sql=")))
        .form(&[("query", sql), ("token", token.as_str())])
        .send()
        .unwrap();
    assert_eq!(ran.status(), 200);
    let ran = ran.text().unwrap();
    assert!(!ran.contains("class='error'"), "{ran}");

    let browse = client
        .get(server.url(&format!("/?{query}&select=adminer_notes")))
        .send()
        .unwrap()
        .text()
        .unwrap();
    assert!(browse.contains("written by Adminer: ünïcödé"), "{browse}");
    let stored = dbs.postgres.sql("app", "SELECT body FROM adminer_notes");
    assert_eq!(stored.trim(), "written by Adminer: ünïcödé");
}

/// Persistent connections belong to a PHP thread: when `--max-requests` replaces a worker
/// thread, its connections are closed with it, so replacements never pile up connections
/// on the servers.
#[test]
fn persistent_connections_close_with_their_worker_thread() {
    let dbs = databases();
    // A MariaDB user and a PostgreSQL application_name of this test's own, to count only
    // its connections.
    dbs.mariadb.sql(
        "CREATE USER 'recycle'@'localhost' IDENTIFIED BY 'app-pass'; \
         GRANT ALL ON app.* TO 'recycle'@'localhost';",
    );
    let count = || {
        let my = dbs
            .mariadb
            .sql("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER = 'recycle'");
        let pg = dbs.postgres.sql(
            "postgres",
            "SELECT COUNT(*) FROM pg_stat_activity WHERE application_name = 'recycle'",
        );
        (
            my.trim().parse::<u32>().unwrap(),
            pg.trim().parse::<u32>().unwrap(),
        )
    };
    let script = data_dir().join("persistent.php");
    let spec = format!("{},1", script.display());
    let args = ["--threads", "1", "--worker", &spec, "--max-requests", "5"];
    let env = [("DB_MY_USER", "recycle"), ("DB_PG_APPNAME", "recycle")];
    let server = start_server_with_env(&data_dir(), &args, &dbs, &env);
    let client = client_builder().build().unwrap();
    let mut ids = std::collections::HashSet::new();
    for i in 0..30 {
        let r = client
            .get(server.url(&format!("/persistent.php?op=ids&i={i}")))
            .send();
        let Ok(r) = r else {
            panic!("request {i}: {r:?}\nserver stderr:\n{}", server.stderr());
        };
        let v: Value = serde_json::from_str(&r.text().unwrap()).unwrap();
        ids.insert(v["ids"]["mysqli"].to_string());
        // At most the current thread's two connections per server: the replaced threads'
        // are gone (a closing connection may take a moment to leave the server's list).
        assert!(
            common::wait_until(Duration::from_secs(5), || {
                let (my, pg) = count();
                my <= 2 && pg <= 2
            }),
            "request {i}: connections of this test: {:?}",
            count()
        );
    }
    // 30 requests, 5 per thread: six threads, six connections one after the other.
    assert_eq!(ids.len(), 6, "{ids:?}");
    let mut server = server;
    server.sigterm();
    let status = server
        .wait_exit(Duration::from_secs(20))
        .expect("server exits");
    assert!(status.success(), "{status:?}\n{}", server.stderr());
    assert!(
        common::wait_until(Duration::from_secs(5), || count() == (0, 0)),
        "left after the server stopped: {:?}",
        count()
    );
}
