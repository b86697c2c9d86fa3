//! The demo app that `scripts/demo.sh` serves: both pages answer, and the hit counter in
//! UserCache\Cache is shared by the classic page and the worker.

mod common;

use std::path::Path;

use common::{client, Server};

#[test]
fn demo_app_serves_classic_and_worker_pages() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../test-data/demo/public")
        .canonicalize()
        .unwrap();
    let worker = root.join("worker.php");
    let server = Server::start(&root, &["--worker", worker.to_str().unwrap()]);
    let c = client();
    let page = c.get(server.url("/")).send().unwrap();
    assert_eq!(page.status(), 200);
    let html = page.text().unwrap();
    assert!(html.contains("SAPI <code>ferrophp</code>"), "{html}");
    assert!(html.contains("OPcache: on"), "{html}");
    assert!(html.contains("shared by all PHP threads: 1"), "{html}");
    let text = c
        .get(server.url("/worker.php"))
        .send()
        .unwrap()
        .text()
        .unwrap();
    assert!(text.contains("ferrophp worker mode"), "{text}");
    assert!(
        text.contains("shared hits: 2"),
        "the counter is not shared: {text}"
    );
}
