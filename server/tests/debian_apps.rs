//! Debian-packaged PHP apps, installed by `apt-get` (scripts/install-test-deps.sh) and
//! served from where the packages put them, driven over HTTP as a user drives them, with
//! ferrophp's defaults: no `-d`, in particular no `include_path`. Debian's packages load
//! their libraries from `/usr/share/php` through PHP's built-in include_path
//! (`.:/usr/share/php` in Debian's PHP and in ours: scripts/build-php.sh); before ours had
//! it, phpMyAdmin answered 500 on every page.
//!
//! - phpMyAdmin (MariaDB): cookie login, a database and a table created through its
//!   forms, an SQL file imported by upload, the database exported as a download.
//! - Roundcube (PostgreSQL, with a private Dovecot for IMAP): the schema loaded as
//!   dbconfig-common loads it, login, contacts imported from an uploaded vCard and
//!   exported as a download, a draft composed with an uploaded attachment and saved to
//!   IMAP, the attachment downloaded back from the saved draft.
//! - PostfixAdmin (MariaDB): setup.php creates the schema, generates the setup password
//!   hash (written to config.local.php as its page says) and creates the superadmin;
//!   login, a domain and a mailbox created through the forms, the mailbox list exported
//!   as CSV.
//!
//! Every form is posted as a browser posts it (`common::form_fields`: the form's own
//! defaults and hidden fields, CSRF tokens included), with a session cookie. For the two
//! apps that load libraries through include_path, the same flow is run again against a
//! server started with `-d include_path=.:` (what ours had) and must fail where the app
//! loads them: phpMyAdmin at its first page, Roundcube when it builds the draft (PEAR's
//! `Mail_mime`). PostfixAdmin bundles its libraries and does not depend on it.
//!
//! Configuration goes where a user puts it: phpMyAdmin reads `/etc/phpmyadmin/conf.d/` and
//! PostfixAdmin `/etc/postfixadmin/`, so their server runs in a private mount namespace
//! (`unshare`, as root) with the test's files bound over those directories, leaving the
//! host's untouched; Roundcube takes its settings from `ROUNDCUBE_*` environment variables.
//! Classic mode: see docs/debian-apps.md for why none of them runs in worker mode.

mod common;

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::db::{run, DbProcess, MariaDb, Postgres};
use common::{client_builder, form_attr, form_containing, form_fields, serve_with_binds, Server};
use reqwest::blocking::multipart::{Form, Part};
use reqwest::blocking::{Client, Response};
use serde_json::Value;

/// What the include_path was before the fix: the negative control's `-d`.
const OLD_INCLUDE_PATH: &str = "include_path=.:";

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../test-data/debian-apps")
        .canonicalize()
        .expect("test-data/debian-apps exists")
}

fn require_package(path: &str, package: &str) {
    assert!(
        Path::new(path).exists(),
        "{path} missing: Debian's {package} package is not installed \
         (scripts/install-test-deps.sh installs it)"
    );
}

/// A browser: cookies kept, redirects not followed (the tests check them).
fn browser() -> Client {
    client_builder().cookie_store(true).build().unwrap()
}

/// The status and body of `response`.
fn read(what: &str, response: reqwest::Result<Response>) -> (u16, String) {
    let r = response.unwrap_or_else(|e| panic!("{what}: {e}"));
    let status = r.status().as_u16();
    (status, r.text().unwrap_or_default())
}

fn get_ok(client: &Client, url: &str) -> String {
    let (status, body) = read(url, client.get(url).send());
    assert_eq!(status, 200, "GET {url}: {}", excerpt(&body));
    body
}

fn excerpt(text: &str) -> &str {
    let mut end = text.len().min(3000);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// Replaces (or adds) a field's value, as a user typing into it.
fn set(fields: &mut Vec<(String, String)>, name: &str, value: &str) {
    fields.retain(|(n, _)| n != name);
    fields.push((name.to_owned(), value.to_owned()));
}

fn field<'a>(fields: &'a [(String, String)], name: &str) -> Option<&'a str> {
    fields
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

/// `fields` plus one file, as multipart/form-data.
fn multipart(fields: &[(String, String)], file: (&str, &str, Vec<u8>, &str)) -> Form {
    let mut form = Form::new();
    for (k, v) in fields {
        form = form.text(k.clone(), v.clone());
    }
    let (name, file_name, bytes, mime) = file;
    form.part(
        name.to_owned(),
        Part::bytes(bytes)
            .file_name(file_name.to_owned())
            .mime_str(mime)
            .unwrap(),
    )
}

/// Runs `flow` against a server started with the old include_path, expects it to fail,
/// and returns the panic message and the server's stderr.
fn fails_with_old_include_path(flow: impl FnOnce()) -> String {
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(flow));
    let err = outcome.expect_err("the flow passed with include_path=.: (it should not)");
    err.downcast_ref::<String>()
        .cloned()
        .or_else(|| err.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

// ---------------------------------------------------------------------------------------
// phpMyAdmin

const PMA_USER: &str = "pma";
const PMA_PASSWORD: &str = "pma-pass ünï";

/// A private MariaDB with a user for phpMyAdmin, and a conf.d file pointing phpMyAdmin's
/// only server at its socket, as an admin would drop one into /etc/phpmyadmin/conf.d.
struct PmaSetup {
    mariadb: MariaDb,
    confd: PathBuf,
    dir: tempfile::TempDir,
}

fn pma_setup() -> PmaSetup {
    require_package("/usr/share/phpmyadmin/index.php", "phpmyadmin");
    let dir = tempfile::tempdir().unwrap();
    let mariadb = MariaDb::start(dir.path());
    mariadb.sql(&format!(
        "CREATE USER '{PMA_USER}'@'localhost' IDENTIFIED BY '{PMA_PASSWORD}'; \
         GRANT ALL ON *.* TO '{PMA_USER}'@'localhost' WITH GRANT OPTION;"
    ));
    let confd = dir.path().join("phpmyadmin-conf.d");
    std::fs::create_dir(&confd).unwrap();
    std::fs::write(
        confd.join("ferrophp-test.php"),
        std::fs::read_to_string(fixtures().join("phpmyadmin-server.php"))
            .unwrap()
            .replace("@SOCKET@", &mariadb.socket.display().to_string()),
    )
    .unwrap();
    PmaSetup {
        mariadb,
        confd,
        dir,
    }
}

fn pma_serve(setup: &PmaSetup, args: &[&str]) -> Server {
    serve_with_binds(
        setup.dir.path(),
        Path::new("/usr/share/phpmyadmin"),
        &[(&setup.confd, "/etc/phpmyadmin/conf.d")],
        args,
        &[],
    )
}

/// An ajax form post as phpMyAdmin's scripts send it; the JSON answer must say success.
fn pma_ajax(
    client: &Client,
    server: &Server,
    what: &str,
    form: &str,
    fields: &[(String, String)],
) -> Value {
    let action = form_attr(form, "action").expect("form action");
    let mut fields = fields.to_vec();
    set(&mut fields, "ajax_request", "true");
    let (status, body) = read(
        what,
        client
            .post(server.url(&format!("/{action}")))
            .form(&fields)
            .send(),
    );
    assert_eq!(status, 200, "{what}: {}", excerpt(&body));
    let v: Value = serde_json::from_str(&body)
        .unwrap_or_else(|e| panic!("{what}: not JSON ({e}): {}", excerpt(&body)));
    assert_eq!(v["success"], true, "{what}: {}", excerpt(&body));
    v
}

/// The whole phpMyAdmin flow; returns the steps it went through.
fn phpmyadmin_flow(server: &Server, mariadb: &MariaDb, db: &str) -> Vec<&'static str> {
    let client = browser();
    let mut steps = Vec::new();

    // The login page (cookie auth): its form carries the token and the session id.
    let page = get_ok(&client, &server.url("/"));
    let login = form_containing(&page, "id=\"login_form\"")
        .unwrap_or_else(|| panic!("no login form: {}", excerpt(&page)));
    let mut fields = form_fields(login);
    assert!(
        field(&fields, "token").is_some(),
        "login form without token"
    );
    set(&mut fields, "pma_username", PMA_USER);
    set(&mut fields, "pma_password", PMA_PASSWORD);
    let action = form_attr(login, "action").unwrap();
    let (status, body) = read(
        "login",
        client
            .post(server.url(&format!("/{action}")))
            .form(&fields)
            .send(),
    );
    // PHP's own rule for a bare `Location:` answering a POST over HTTP/1.1: 303 (as under
    // Apache or php-fpm; `php -S` sends 302).
    assert_eq!(status, 303, "login: {}", excerpt(&body));
    let home = get_ok(&client, &server.url("/index.php?route=/"));
    assert!(
        home.contains("Log out"),
        "not logged in: {}",
        excerpt(&home)
    );
    assert!(
        home.contains("MariaDB"),
        "no server info: {}",
        excerpt(&home)
    );
    steps.push("login");

    // A form posted with a wrong token changes nothing: phpMyAdmin drops the request's
    // data (and with it the login it would carry) and answers with its login page.
    let databases = get_ok(&client, &server.url("/index.php?route=/server/databases"));
    let create_db = form_containing(&databases, "id=\"create_database_form\"")
        .unwrap_or_else(|| panic!("no create database form: {}", excerpt(&databases)));
    let mut fields = form_fields(create_db);
    set(&mut fields, "new_db", &format!("{db}_forged"));
    set(&mut fields, "token", "0123456789abcdef0123456789abcdef");
    let action = form_attr(create_db, "action").unwrap();
    let _ = read(
        "forged create",
        client
            .post(server.url(&format!("/{action}")))
            .form(&fields)
            .send(),
    );
    let listed = mariadb.sql("SHOW DATABASES");
    assert!(!listed.contains(&format!("{db}_forged")), "{listed}");
    steps.push("CSRF token refused when wrong");

    // Create a database through the databases page's form, with its token.
    let databases = get_ok(&client, &server.url("/index.php?route=/server/databases"));
    let create_db = form_containing(&databases, "id=\"create_database_form\"").unwrap();
    let mut fields = form_fields(create_db);
    set(&mut fields, "new_db", db);
    set(&mut fields, "db_collation", "utf8mb4_unicode_ci");
    pma_ajax(&client, server, "create database", create_db, &fields);
    assert!(mariadb.sql("SHOW DATABASES").lines().any(|l| l == db));
    steps.push("create database (form + token)");

    // Create a table through the table creation form: two columns, the first the primary
    // key (the page's scripts send the index choice as JSON, so do we).
    let page = get_ok(
        &client,
        &server.url(&format!(
            "/index.php?route=/table/create&db={db}&table=notes&num_fields=2"
        )),
    );
    let create_table = form_containing(&page, "class=\"create_table_form")
        .unwrap_or_else(|| panic!("no create table form: {}", excerpt(&page)));
    let mut fields = form_fields(create_table);
    for (k, v) in [
        ("table", "notes"),
        ("orig_num_fields", "2"),
        ("num_fields", "2"),
        ("do_save_data", "1"),
        ("field_name[0]", "id"),
        ("field_type[0]", "INT"),
        ("field_length[0]", ""),
        ("field_extra[0]", "AUTO_INCREMENT"),
        ("field_name[1]", "body"),
        ("field_type[1]", "VARCHAR"),
        ("field_length[1]", "200"),
        (
            "primary_indexes",
            r#"[{"Key_name":"PRIMARY","Index_choice":"PRIMARY","Index_comment":"","Index_type":"","columns":[{"col_index":"0","size":""}]}]"#,
        ),
        ("tbl_storage_engine", "InnoDB"),
    ] {
        set(&mut fields, k, v);
    }
    pma_ajax(&client, server, "create table", create_table, &fields);
    let columns = mariadb.sql(&format!("SHOW COLUMNS FROM {db}.notes"));
    assert!(
        columns.contains("id\tint(11)\tNO\tPRI\tNULL\tauto_increment")
            && columns.contains("body\tvarchar(200)"),
        "{columns}"
    );
    steps.push("create table (form + token)");

    // Import an SQL file by upload through the database's import form.
    let sql = std::fs::read(fixtures().join("phpmyadmin-import.sql")).unwrap();
    let page = get_ok(
        &client,
        &server.url(&format!("/index.php?route=/database/import&db={db}")),
    );
    let import = form_containing(&page, "id=\"import_file_form\"")
        .unwrap_or_else(|| panic!("no import form: {}", excerpt(&page)));
    let mut fields = form_fields(import);
    set(&mut fields, "format", "sql");
    set(&mut fields, "ajax_request", "true");
    let action = form_attr(import, "action").unwrap();
    let (status, body) = read(
        "import",
        client
            .post(server.url(&format!("/{action}")))
            .multipart(multipart(
                &fields,
                ("import_file", "ferrophp-import.sql", sql, "application/sql"),
            ))
            .send(),
    );
    assert_eq!(status, 200, "import: {}", excerpt(&body));
    let v: Value = serde_json::from_str(&body).unwrap_or_else(|_| panic!("{}", excerpt(&body)));
    assert_eq!(v["success"], true, "import: {}", excerpt(&body));
    // The upload's own name comes back in the message.
    let done = v["displayMessage"].as_str().unwrap_or("");
    assert!(
        done.contains(
            "Import has been successfully finished, 5 queries executed.</em> (ferrophp-import.sql)"
        ),
        "import: {}",
        excerpt(&body)
    );
    let rows = mariadb.sql(&format!(
        "SELECT body FROM {db}.notes ORDER BY id; SELECT v FROM {db}.imported"
    ));
    assert_eq!(
        rows,
        "imported by upload: ünïcödé\nsecond row <b>&amp;</b>\nfrom the uploaded file\n"
    );
    steps.push("import SQL file (upload)");

    // Export the database as a file: the download carries both tables and every row.
    let page = get_ok(
        &client,
        &server.url(&format!("/index.php?route=/database/export&db={db}")),
    );
    let export = form_containing(&page, "action=\"index.php?route=/export\"")
        .unwrap_or_else(|| panic!("no export form: {}", excerpt(&page)));
    let fields = form_fields(export);
    assert_eq!(
        field(&fields, "output_format"),
        Some("sendit"),
        "{fields:?}"
    );
    let r = client
        .post(server.url("/index.php?route=/export"))
        .form(&fields)
        .send()
        .unwrap();
    assert_eq!(r.status(), 200);
    let disposition = r.headers()["content-disposition"]
        .to_str()
        .unwrap()
        .to_owned();
    assert_eq!(disposition, format!("attachment; filename=\"{db}.sql\""));
    let dump = r.text().unwrap();
    for needle in [
        "CREATE TABLE `notes` (".to_owned(),
        "CREATE TABLE `imported` (".to_owned(),
        "(1, 'imported by upload: ünïcödé')".to_owned(),
        "(2, 'second row <b>&amp;</b>')".to_owned(),
        "('k1', 'from the uploaded file')".to_owned(),
        format!("-- Database: `{db}`"),
    ] {
        assert!(dump.contains(&needle), "export lacks {needle:?}:\n{dump}");
    }
    steps.push("export database (download)");
    steps
}

#[test]
fn phpmyadmin_login_create_import_export() {
    let total = Instant::now();
    let setup = pma_setup();
    let server = pma_serve(&setup, &[]);
    let started = Instant::now();
    let steps = phpmyadmin_flow(&server, &setup.mariadb, "ferro_app");
    eprintln!(
        "phpmyadmin classic: {} steps in {:?}: {steps:?}",
        steps.len(),
        started.elapsed()
    );
    assert!(
        !server.stderr().contains("PHP Fatal"),
        "{}",
        server.stderr()
    );
    drop(server);

    // With the old include_path the same flow fails at its first page: Debian's autoload.php
    // requires its libraries relative to /usr/share/php.
    let old = pma_serve(&setup, &["-d", OLD_INCLUDE_PATH]);
    let msg = fails_with_old_include_path(|| {
        phpmyadmin_flow(&old, &setup.mariadb, "ferro_old");
    });
    assert!(msg.contains("GET http"), "failed elsewhere: {msg}");
    let stderr = old.stderr();
    assert!(
        stderr.contains(
            "Failed opening required 'Composer/CaBundle/autoload.php' (include_path='.:')"
        ),
        "{stderr}"
    );
    eprintln!(
        "phpmyadmin with {OLD_INCLUDE_PATH}: fails at the login page; test total {:?}",
        total.elapsed()
    );
}

// ---------------------------------------------------------------------------------------
// Roundcube

const MAIL_USER: &str = "alice";
const MAIL_PASSWORD: &str = "alice-imap-pass";

/// A private Dovecot serving IMAP on a loopback port, one user with a password from a
/// passwd-file, maildirs in the test's directory (owned by Debian's `mail` user).
struct Dovecot {
    port: u16,
    _process: DbProcess,
}

impl Dovecot {
    fn start(dir: &Path) -> Dovecot {
        require_package("/usr/sbin/dovecot", "dovecot-imapd");
        let base = dir.join("dovecot");
        std::fs::create_dir_all(base.join("mail")).unwrap();
        run(
            Command::new("chown")
                .arg("mail:mail")
                .arg(base.join("mail")),
            "chown",
        );
        std::fs::write(
            base.join("users"),
            format!("{MAIL_USER}:{{PLAIN}}{MAIL_PASSWORD}\n"),
        )
        .unwrap();
        // A free port: bound here, released, then given to dovecot.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let conf = base.join("dovecot.conf");
        std::fs::write(
            &conf,
            std::fs::read_to_string(fixtures().join("dovecot.conf"))
                .unwrap()
                .replace("@DIR@", &base.display().to_string())
                .replace("@PORT@", &port.to_string()),
        )
        .unwrap();
        let mut cmd = Command::new("dovecot");
        cmd.arg("-F").arg("-c").arg(&conf);
        let mut process = DbProcess::spawn("dovecot", "TERM", cmd, base.join("stdout.log"));
        process.wait_ready(|| imap_greets(port));
        Dovecot {
            port,
            _process: process,
        }
    }
}

/// True once an IMAP server on `port` sends its ready greeting.
fn imap_greets(port: u16) -> bool {
    use std::io::Read;
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    let mut buf = [0u8; 512];
    let mut got = Vec::new();
    while let Ok(n) = s.read(&mut buf) {
        if n == 0 {
            break;
        }
        got.extend_from_slice(&buf[..n]);
        if got.windows(5).any(|w| w == b"ready") {
            return true;
        }
    }
    false
}

struct RoundcubeSetup {
    env: Vec<(&'static str, String)>,
    _dovecot: Dovecot,
    _postgres: Postgres,
    _dir: tempfile::TempDir,
}

/// PostgreSQL with Roundcube's schema loaded from the package's SQL (what dbconfig-common
/// does when the package is installed with a database), Dovecot, and the settings a
/// container user passes Roundcube as `ROUNDCUBE_*` variables.
fn roundcube_setup() -> RoundcubeSetup {
    require_package("/var/lib/roundcube/public_html/index.php", "roundcube");
    let dir = tempfile::tempdir().unwrap();
    let postgres = Postgres::start(dir.path());
    postgres.sql("postgres", "CREATE DATABASE roundcube");
    let schema = std::fs::read_to_string("/usr/share/roundcube/SQL/postgres.initial.sql").unwrap();
    postgres.sql("roundcube", &schema);
    let dovecot = Dovecot::start(dir.path());
    for sub in ["logs", "temp"] {
        std::fs::create_dir(dir.path().join(format!("roundcube-{sub}"))).unwrap();
    }
    let env = vec![
        (
            "ROUNDCUBE_DB_DSNW",
            format!(
                "pgsql://postgres:unused@unix({})/roundcube",
                postgres.sockdir.display()
            ),
        ),
        (
            "ROUNDCUBE_IMAP_HOST",
            format!("[\"127.0.0.1:{}\"]", dovecot.port),
        ),
        (
            "ROUNDCUBE_LOG_DIR",
            dir.path().join("roundcube-logs").display().to_string(),
        ),
        (
            "ROUNDCUBE_TEMP_DIR",
            dir.path().join("roundcube-temp").display().to_string(),
        ),
    ];
    RoundcubeSetup {
        env,
        _dovecot: dovecot,
        _postgres: postgres,
        _dir: dir,
    }
}

fn roundcube_serve(setup: &RoundcubeSetup, args: &[&str]) -> Server {
    let env: Vec<(&str, &str)> = setup.env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    Server::start_with_env(Path::new("/var/lib/roundcube/public_html"), args, &env)
}

/// The request token Roundcube's scripts send with every action (`rcmail.env`).
fn roundcube_token(html: &str) -> String {
    let key = "\"request_token\":\"";
    let at = html
        .find(key)
        .unwrap_or_else(|| panic!("no request token: {}", excerpt(html)))
        + key.len();
    html[at..at + html[at..].find('"').unwrap()].to_owned()
}

const VCARDS: &str = "BEGIN:VCARD\r\nVERSION:3.0\r\nFN:Ada Lovelace\r\nN:Lovelace;Ada;;;\r\n\
EMAIL;TYPE=INTERNET:ada@example.invalid\r\nEND:VCARD\r\nBEGIN:VCARD\r\nVERSION:3.0\r\n\
FN:Grace Hopper\r\nN:Hopper;Grace;;;\r\nEMAIL;TYPE=INTERNET:grace@example.invalid\r\nEND:VCARD\r\n";

fn roundcube_flow(server: &Server, steps: &mut Vec<&'static str>) {
    let client = browser();

    // Login: the form's hidden token, then IMAP authentication behind it.
    let page = get_ok(&client, &server.url("/"));
    let login = form_containing(&page, "name=\"_user\"")
        .unwrap_or_else(|| panic!("no login form: {}", excerpt(&page)));
    let mut fields = form_fields(login);
    assert!(field(&fields, "_token").is_some(), "{fields:?}");
    set(&mut fields, "_user", MAIL_USER);
    set(&mut fields, "_pass", MAIL_PASSWORD);
    let (status, body) = read(
        "login",
        client
            .post(server.url("/?_task=login"))
            .form(&fields)
            .send(),
    );
    assert_eq!(status, 303, "login: {}", excerpt(&body));
    let mail = get_ok(&client, &server.url("/?_task=mail&_mbox=INBOX"));
    let token = roundcube_token(&mail);
    // The mail view names the IMAP user it is logged in as.
    assert!(
        mail.contains("alice@127.0.0.1</span>"),
        "not logged in: {}",
        excerpt(&mail)
    );
    steps.push("login (form + token, IMAP)");

    // Import contacts from an uploaded vCard file through the import form.
    let page = get_ok(
        &client,
        &server.url("/?_task=addressbook&_action=import&_framed=1&_target=0"),
    );
    let import = form_containing(&page, "name=\"_file[]\"")
        .unwrap_or_else(|| panic!("no import form: {}", excerpt(&page)));
    let fields = form_fields(import);
    assert_eq!(field(&fields, "_token"), Some(token.as_str()));
    // A forged token is refused before anything is imported.
    let mut forged = fields.clone();
    set(&mut forged, "_token", "forged-token");
    let (_, refused) = read(
        "forged import",
        client
            .post(server.url("/?_task=addressbook&_action=import"))
            .multipart(multipart(
                &forged,
                ("_file[]", "people.vcf", VCARDS.into(), "text/vcard"),
            ))
            .send(),
    );
    assert!(
        !refused.contains("Successfully imported") && refused.contains("REQUEST CHECK FAILED"),
        "an import with a forged token: {}",
        excerpt(&refused)
    );
    let (status, body) = read(
        "import",
        client
            .post(server.url("/?_task=addressbook&_action=import"))
            .multipart(multipart(
                &fields,
                ("_file[]", "people.vcf", VCARDS.into(), "text/vcard"),
            ))
            .send(),
    );
    assert_eq!(status, 200, "import: {}", excerpt(&body));
    assert!(
        body.contains("Successfully imported 2 contacts"),
        "import: {}",
        excerpt(&body)
    );
    steps.push("import vCard (upload + token)");

    // Export the address book: a vCard download with both contacts.
    let r = client
        .get(server.url(&format!(
            "/?_task=addressbook&_action=export&_source=0&_token={token}"
        )))
        .send()
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(
        r.headers()["content-disposition"],
        "attachment; filename=\"contacts.vcf\""
    );
    let vcf = r.text().unwrap();
    for needle in [
        "FN:Ada Lovelace",
        "EMAIL:ada@example.invalid",
        "FN:Grace Hopper",
    ] {
        assert!(vcf.contains(needle), "export lacks {needle}:\n{vcf}");
    }
    steps.push("export vCard (download)");

    // Compose: the compose page gets an id, an attachment is uploaded to it as the page's
    // script uploads (token in a header), and the draft is saved to IMAP's Drafts.
    let r = client
        .get(server.url("/?_task=mail&_action=compose"))
        .send()
        .unwrap();
    assert_eq!(r.status(), 302);
    let location = r.headers()["location"].to_str().unwrap().to_owned();
    let page = get_ok(&client, &server.url(&location));
    let compose = form_containing(&page, "name=\"_message\"")
        .unwrap_or_else(|| panic!("no compose form: {}", excerpt(&page)));
    let mut fields = form_fields(compose);
    let id = field(&fields, "_id").expect("compose id").to_owned();
    let attachment: Vec<u8> = (0..4096u32).map(|i| (i * 7 % 256) as u8).collect();
    let (status, body) = read(
        "upload",
        client
            .post(server.url(&format!(
                "/?_task=mail&_action=upload&_id={id}&_uploadid=upload1&_from=compose&_remote=1"
            )))
            .header("X-Roundcube-Request", &token)
            .multipart(multipart(
                &[("_token".into(), token.clone())],
                (
                    "_attachments[]",
                    "measurements.bin",
                    attachment.clone(),
                    "application/octet-stream",
                ),
            ))
            .send(),
    );
    assert_eq!(status, 200, "upload: {}", excerpt(&body));
    assert!(
        body.contains("add2attachment_list") && body.contains("measurements.bin"),
        "upload: {}",
        excerpt(&body)
    );
    steps.push("attach file to a draft (upload)");

    let subject = "Draft through ferrophp: ünïcödé";
    set(&mut fields, "_to", "bob@example.invalid");
    set(&mut fields, "_subject", subject);
    set(&mut fields, "_message", "The body of the draft.\n");
    set(&mut fields, "_draft", "1");
    let (status, body) = read(
        "save draft",
        client
            .post(server.url("/?_task=mail&_unlock=loading1&_framed=1"))
            .form(&fields)
            .send(),
    );
    assert_eq!(status, 200, "save draft: {}", excerpt(&body));
    assert!(
        body.contains("Message saved to Drafts"),
        "save draft: {}",
        excerpt(&body)
    );
    steps.push("save draft to IMAP (PEAR Mail_mime)");

    // The draft in the Drafts folder, and its attachment downloaded back, byte for byte.
    let (status, list) = read(
        "list drafts",
        client
            .get(server.url("/?_task=mail&_action=list&_mbox=Drafts&_remote=1"))
            .header("X-Roundcube-Request", &token)
            .send(),
    );
    assert_eq!(status, 200);
    let uid = list
        .split("add_message_row(")
        .skip(1)
        .filter_map(|s| s.split(',').next()?.parse::<u32>().ok())
        .max()
        .unwrap_or_else(|| panic!("no draft listed: {}", excerpt(&list)));
    let show = get_ok(
        &client,
        &server.url(&format!(
            "/?_task=mail&_action=show&_uid={uid}&_mbox=Drafts"
        )),
    );
    assert!(show.contains("ünïcödé"), "{}", excerpt(&show));
    let part = show
        .split("_part=")
        .nth(1)
        .and_then(|s| s.split(|c: char| !(c.is_ascii_digit() || c == '.')).next())
        .unwrap_or_else(|| panic!("no attachment part: {}", excerpt(&show)))
        .to_owned();
    let r = client
        .get(server.url(&format!(
            "/?_task=mail&_action=get&_uid={uid}&_mbox=Drafts&_part={part}&_download=1&_token={token}"
        )))
        .send()
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(
        r.headers()["content-disposition"],
        "attachment; filename=\"measurements.bin\""
    );
    assert_eq!(r.bytes().unwrap().as_ref(), attachment.as_slice());
    steps.push("download the draft's attachment");
}

#[test]
fn roundcube_login_contacts_draft_with_attachment() {
    let total = Instant::now();
    let setup = roundcube_setup();
    let server = roundcube_serve(&setup, &[]);
    let started = Instant::now();
    let mut steps = Vec::new();
    roundcube_flow(&server, &mut steps);
    eprintln!(
        "roundcube classic: {} steps in {:?}: {steps:?}",
        steps.len(),
        started.elapsed()
    );
    assert!(
        !server.stderr().contains("PHP Fatal"),
        "{}",
        server.stderr()
    );
    drop(server);

    // With the old include_path, Roundcube runs until it needs PEAR's Mail_mime from
    // /usr/share/php to build the draft.
    let old = roundcube_serve(&setup, &["-d", OLD_INCLUDE_PATH]);
    let mut reached = Vec::new();
    let msg = fails_with_old_include_path(|| roundcube_flow(&old, &mut reached));
    assert!(msg.contains("import: "), "failed elsewhere: {msg}");
    // It answers "Successfully imported 0 contacts" (and, further on, saving the draft
    // fails with `Class "Mail_mime" not found`).
    eprintln!(
        "roundcube with {OLD_INCLUDE_PATH}: passed {reached:?}, then failed at the import; \
         test total {:?}",
        total.elapsed()
    );
}

// ---------------------------------------------------------------------------------------
// PostfixAdmin

const SETUP_PASSWORD: &str = "setup-Pass-123";
const ADMIN: &str = "admin@example.org";
const ADMIN_PASSWORD: &str = "Admin-Pass-123";

#[test]
fn postfixadmin_setup_login_domain_mailbox_csv() {
    let total = Instant::now();
    require_package("/usr/share/postfixadmin/public/index.php", "postfixadmin");
    let dir = tempfile::tempdir().unwrap();
    let mariadb = MariaDb::start(dir.path());
    mariadb.sql(
        "CREATE DATABASE postfixadmin; \
         CREATE USER 'postfixadmin'@'localhost' IDENTIFIED BY 'pfa-pass'; \
         GRANT ALL ON postfixadmin.* TO 'postfixadmin'@'localhost';",
    );
    // /etc/postfixadmin as a user has it: the package's config.inc.php, the database
    // settings dbconfig-common would write, and config.local.php for local changes.
    let etc = dir.path().join("etc-postfixadmin");
    std::fs::create_dir(&etc).unwrap();
    std::fs::copy(
        "/etc/postfixadmin/config.inc.php",
        etc.join("config.inc.php"),
    )
    .unwrap();
    std::fs::copy(
        fixtures().join("postfixadmin-dbconfig.inc.php"),
        etc.join("dbconfig.inc.php"),
    )
    .unwrap();
    let local = etc.join("config.local.php");
    std::fs::write(
        &local,
        std::fs::read_to_string(fixtures().join("postfixadmin-config.local.php"))
            .unwrap()
            .replace("@SOCKET@", &mariadb.socket.display().to_string()),
    )
    .unwrap();
    let server = serve_with_binds(
        dir.path(),
        Path::new("/usr/share/postfixadmin/public"),
        &[(&etc, "/etc/postfixadmin")],
        &[],
        &[],
    );
    let started = Instant::now();
    let mut steps = Vec::new();
    let client = browser();

    // setup.php: creates the schema, then offers to hash a setup password.
    let page = get_ok(&client, &server.url("/setup.php"));
    assert!(
        page.contains("Updating database") || page.contains("Database is up to date"),
        "{}",
        excerpt(&page)
    );
    let tables = mariadb.sql("SHOW TABLES FROM postfixadmin");
    assert!(
        tables.contains("mailbox") && tables.contains("domain"),
        "{tables}"
    );
    steps.push("setup.php creates the schema");
    let form = form_containing(&page, "name=\"setuppw\"").expect("setup password form");
    let mut fields = form_fields(form);
    set(&mut fields, "setup_password", SETUP_PASSWORD);
    set(&mut fields, "setup_password2", SETUP_PASSWORD);
    set(&mut fields, "submit", "setuppw");
    let (status, body) = read(
        "setup password",
        client.post(server.url("/setup.php")).form(&fields).send(),
    );
    assert_eq!(status, 200);
    let line = body
        .split("<pre>")
        .nth(1)
        .and_then(|s| s.split("</pre>").next())
        .filter(|l| l.starts_with("$CONF['setup_password'] = '$2y$"))
        .unwrap_or_else(|| panic!("no setup_password line: {}", excerpt(&body)))
        .to_owned();
    // As the page says: add the line to the local configuration (a file config.local.php
    // includes: see test-data/debian-apps/postfixadmin-config.local.php).
    std::fs::write(
        etc.join("setup-password.inc.php"),
        format!("<?php\n{}\n", common::html_unescape(&line)),
    )
    .unwrap();
    steps.push("setup password hash generated (form)");

    let page = get_ok(&client, &server.url("/setup.php"));
    let form = form_containing(&page, "name=\"authenticate\"").expect("setup login form");
    let mut fields = form_fields(form);
    set(&mut fields, "setup_password", SETUP_PASSWORD);
    let (_, page) = read(
        "setup login",
        client.post(server.url("/setup.php")).form(&fields).send(),
    );
    let form = form_containing(&page, "name=\"create_admin\"")
        .unwrap_or_else(|| panic!("not logged in to setup: {}", excerpt(&page)));
    let mut fields = form_fields(form);
    for (k, v) in [
        ("setup_password", SETUP_PASSWORD),
        ("username", ADMIN),
        ("password", ADMIN_PASSWORD),
        ("password2", ADMIN_PASSWORD),
        ("submit", "createadmin"),
    ] {
        set(&mut fields, k, v);
    }
    let (_, page) = read(
        "create admin",
        client.post(server.url("/setup.php")).form(&fields).send(),
    );
    assert!(page.contains("added"), "create admin: {}", excerpt(&page));
    assert_eq!(
        mariadb.sql("SELECT username, superadmin FROM postfixadmin.admin"),
        format!("{ADMIN}\t1\n")
    );
    steps.push("superadmin created (setup form)");

    // Login with the form's CSRF token.
    let page = get_ok(&client, &server.url("/login.php"));
    let form = form_containing(&page, "name=\"fUsername\"").expect("login form");
    let mut fields = form_fields(form);
    assert!(field(&fields, "token").is_some_and(|t| t.len() == 32));
    set(&mut fields, "fUsername", ADMIN);
    set(&mut fields, "fPassword", ADMIN_PASSWORD);
    set(&mut fields, "submit", "Login");
    let r = client
        .post(server.url("/login.php"))
        .form(&fields)
        .send()
        .unwrap();
    assert_eq!(r.status(), 303, "login: {}", r.text().unwrap());
    steps.push("login (form + token)");

    // A domain, then a mailbox in it, through the edit forms (each with its token).
    let post_edit = |table: &str, values: &[(&str, &str)], token: Option<&str>| {
        let page = get_ok(&client, &server.url(&format!("/edit.php?table={table}")));
        let form = form_containing(&page, "name=\"table\"")
            .unwrap_or_else(|| panic!("no {table} form: {}", excerpt(&page)));
        let mut fields = form_fields(form);
        assert!(field(&fields, "token").is_some(), "{fields:?}");
        for (k, v) in values {
            set(&mut fields, k, v);
        }
        if let Some(t) = token {
            set(&mut fields, "token", t);
        }
        set(&mut fields, "submit", "Add");
        read(
            table,
            client
                .post(server.url(&format!("/edit.php?table={table}")))
                .form(&fields)
                .send(),
        )
    };
    let (status, body) = post_edit(
        "domain",
        &[
            ("value[domain]", "mail.example.org"),
            ("value[description]", "ünïcödé domain"),
        ],
        Some("0123456789abcdef0123456789abcdef"),
    );
    assert!(
        status != 200 || !body.contains("has been added"),
        "a forged token was accepted"
    );
    assert_eq!(
        mariadb.sql("SELECT COUNT(*) FROM postfixadmin.domain WHERE domain <> 'ALL'"),
        "0\n"
    );
    steps.push("CSRF token refused when wrong");
    let (status, body) = post_edit(
        "domain",
        &[
            ("value[domain]", "mail.example.org"),
            ("value[description]", "ünïcödé domain"),
        ],
        None,
    );
    assert!(
        status == 200 || status == 303,
        "{status}: {}",
        excerpt(&body)
    );
    assert_eq!(
        mariadb.sql("SELECT domain, description FROM postfixadmin.domain WHERE domain <> 'ALL'"),
        "mail.example.org\tünïcödé domain\n"
    );
    steps.push("create domain (form + token)");
    let (status, body) = post_edit(
        "mailbox",
        &[
            ("value[local_part]", "carol"),
            ("value[domain]", "mail.example.org"),
            ("value[password]", "Carol-Pass-123"),
            ("value[password2]", "Carol-Pass-123"),
            ("value[name]", "Carol Ünïcödé"),
        ],
        None,
    );
    assert!(
        status == 200 || status == 303,
        "{status}: {}",
        excerpt(&body)
    );
    let stored = mariadb.sql("SELECT username, name, maildir, password FROM postfixadmin.mailbox");
    assert!(
        stored.starts_with("carol@mail.example.org\tCarol Ünïcödé\tmail.example.org/carol/\t$1$"),
        "{stored}"
    );
    steps.push("create mailbox (form + token)");

    // The mailbox list, and the same list as a CSV download.
    let list = get_ok(
        &client,
        &server.url("/list-virtual.php?domain=mail.example.org"),
    );
    assert!(
        list.contains("carol@mail.example.org"),
        "{}",
        excerpt(&list)
    );
    let r = client
        .get(server.url("/list.php?table=mailbox&output=csv"))
        .send()
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(
        r.headers()["content-disposition"],
        "attachment;filename=mailbox.csv"
    );
    let csv = r.text().unwrap();
    assert!(
        csv.lines()
            .any(|l| l.contains("carol@mail.example.org") && l.contains("Carol Ünïcödé")),
        "{csv}"
    );
    steps.push("export mailboxes as CSV (download)");
    eprintln!(
        "postfixadmin classic: {} steps in {:?}: {steps:?}; test total {:?}",
        steps.len(),
        started.elapsed(),
        total.elapsed()
    );
    assert!(
        !server.stderr().contains("PHP Fatal"),
        "{}",
        server.stderr()
    );
}
