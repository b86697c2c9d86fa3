//! A real framework in worker mode: a Symfony 5.4 HttpKernel (Debian's php-symfony-*
//! packages, see scripts/install-test-deps.sh) built once per PHP thread in
//! test-data/symfony/worker.php, answering many requests over real HTTP.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use common::{KeepAlive, RawResponse, Server};
use serde_json::Value;

fn symfony_root() -> PathBuf {
    let kernel = Path::new("/usr/share/php/Symfony/Component/HttpKernel/autoload.php");
    assert!(
        kernel.is_file(),
        "Symfony is not installed: run scripts/install-test-deps.sh (php-symfony-* packages)"
    );
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../test-data/symfony")
        .canonicalize()
        .expect("test-data/symfony exists")
}

fn json(r: &RawResponse) -> Value {
    serde_json::from_slice(&r.body)
        .unwrap_or_else(|e| panic!("not JSON ({e}): status {} {:?}", r.status, r.text()))
}

/// Per boot id, the `handled` values its responses showed.
type Boots = BTreeMap<String, BTreeSet<u64>>;

fn check_greeting(r: &RawResponse, name: &str, x: &str, method: &str, boots: &mut Boots) {
    assert_eq!(r.status, 200, "{name}: {}", r.text());
    assert_eq!(r.header("content-type"), Some("application/json"));
    let v = json(r);
    assert_eq!(v["greeting"], format!("Hello, {name}!"), "{v}");
    assert_eq!(v["method"], method, "{v}");
    assert_eq!(v["query"]["x"], x, "{v}");
    assert_eq!(v["worker"], "1", "{v}");
    let handled = v["handled"].as_u64().expect("handled");
    let boot = v["boot"].as_str().unwrap().to_string();
    assert!(
        boots.entry(boot).or_default().insert(handled),
        "one kernel numbered two requests {handled}: {v}"
    );
}

/// Each kernel was built once and counted every request it handled: per boot, the
/// `handled` values are exactly 1..=k, and they add up to the requests sent.
fn check_boots(boots: &Boots, threads: usize, requests: usize) {
    assert!(
        !boots.is_empty() && boots.len() <= threads,
        "{} kernels booted for {threads} threads: {boots:?}",
        boots.len()
    );
    let mut total = 0;
    for (boot, handled) in boots {
        let max = *handled.iter().max().unwrap();
        assert_eq!(
            handled.len() as u64,
            max,
            "boot {boot} skipped numbers: {handled:?}"
        );
        total += handled.len();
    }
    assert_eq!(total, requests);
}

fn run_clients(
    server: &Server,
    clients: usize,
    per_client: usize,
    path: impl Fn(usize, usize) -> (String, String, String) + Sync,
) -> Boots {
    let boots = std::sync::Mutex::new(Boots::new());
    std::thread::scope(|scope| {
        for c in 0..clients {
            let boots = &boots;
            let path = &path;
            let addr = server.addr;
            scope.spawn(move || {
                let mut conn = KeepAlive::connect(addr).unwrap();
                for i in 0..per_client {
                    let (uri, name, x) = path(c, i);
                    let (request, method) = if i % 5 == 4 {
                        (
                            format!(
                                "POST {uri} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 3\r\n\r\na=1"
                            ),
                            "POST",
                        )
                    } else {
                        (format!("GET {uri} HTTP/1.1\r\nHost: localhost\r\n\r\n"), "GET")
                    };
                    let r = conn.send(request.as_bytes()).unwrap();
                    let mut b = boots.lock().unwrap();
                    check_greeting(&r, &name, &x, method, &mut b);
                }
            });
        }
    });
    boots.into_inner().unwrap()
}

#[test]
fn symfony_kernel_boots_once_per_thread_and_routes_path_info() {
    let root = symfony_root();
    let spec = format!("{},2", root.join("worker.php").display());
    let server = Server::start(&root, &["--threads", "1", "--worker", &spec]);
    let (clients, per_client) = (4, 20);
    let mut boots = run_clients(&server, clients, per_client, |c, i| {
        let name = format!("Alice{c}x{i}");
        (
            format!("/worker.php/hello/{name}?x={i}"),
            name,
            i.to_string(),
        )
    });
    check_boots(&boots, 2, clients * per_client);

    // The route's default, and an unknown route: the kernel throws (no exception
    // listener), the request is a 500, and the kernel goes on.
    let r = server.get("/worker.php/hello?x=d");
    check_greeting(&r, "World", "d", "GET", &mut boots);
    let r = server.get("/worker.php/no/such/route");
    assert_eq!(r.status, 500, "{}", r.text());
    for i in 0..6 {
        let r = server.get(&format!("/worker.php/hello/Zed?x={i}"));
        check_greeting(&r, "Zed", &i.to_string(), "GET", &mut boots);
    }
    // The 500 is not counted by the controller: 1 + 6 more requests.
    check_boots(&boots, 2, clients * per_client + 7);
}

#[test]
fn symfony_behind_a_catch_all_match_routes_by_request_uri() {
    let root = symfony_root();
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("ferrophp.toml");
    std::fs::write(
        &config,
        format!(
            "[[worker]]\nscript = {:?}\nthreads = 2\nmatch = \"/*\"\n",
            root.join("worker.php").to_string_lossy()
        ),
    )
    .unwrap();
    let server = Server::start(
        &root,
        &["--threads", "1", "--config", config.to_str().unwrap()],
    );
    let (clients, per_client) = (2, 15);
    let boots = run_clients(&server, clients, per_client, |c, i| {
        let name = format!("Bob{c}x{i}");
        (format!("/hello/{name}?x={i}"), name, i.to_string())
    });
    check_boots(&boots, 2, clients * per_client);
}
