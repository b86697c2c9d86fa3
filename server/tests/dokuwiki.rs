//! A real application nobody here wrote: DokuWiki from Debian's `dokuwiki` package, with
//! a private writable copy of its tree, configuration and data, served in classic mode.
//! Renders the start page, saves an edit through the real edit form (with its security
//! token and session cookie) and reads the saved text back.

mod common;

use std::path::Path;
use std::process::Command;

use common::{client_builder, hidden_inputs, Server};

#[test]
fn dokuwiki_renders_saves_an_edit_and_reads_it_back() {
    assert!(
        Path::new("/usr/share/dokuwiki/doku.php").exists(),
        "Debian's dokuwiki package is missing: scripts/install-test-deps.sh installs it"
    );
    let instance = tempfile::tempdir().unwrap();
    let maker =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../test-data/dokuwiki/make-instance.sh");
    let status = Command::new("bash")
        .arg(&maker)
        .arg(instance.path())
        .status()
        .unwrap();
    assert!(status.success(), "make-instance.sh failed");
    let server = Server::start(&instance.path().join("wiki"), &[]);
    let client = client_builder().cookie_store(true).build().unwrap();

    // The start page, rendered by DokuWiki's real templates.
    let start = client.get(server.url("/doku.php?id=start")).send().unwrap();
    assert_eq!(start.status(), 200);
    let html = start.text().unwrap();
    assert!(html.contains("ferrophp test wiki"), "title missing");
    assert!(
        html.contains("content=\"DokuWiki\""),
        "not rendered by DokuWiki"
    );

    // The edit form carries the hidden fields (security token, change check...).
    let page = "playground:ferrophp";
    let form = client
        .get(server.url(&format!("/doku.php?id={page}&do=edit")))
        .send()
        .unwrap();
    assert_eq!(form.status(), 200);
    let form_html = form.text().unwrap();
    assert!(form_html.contains("name=\"wikitext\""), "no edit form");
    let mut fields = hidden_inputs(&form_html);
    assert!(
        fields.iter().any(|(n, _)| n == "sectok"),
        "no security token field"
    );
    assert!(
        fields.iter().any(|(n, _)| n == "changecheck"),
        "no changecheck field"
    );
    let text = "Saved through ferrophp: ünïcödé & <markup> 42";
    fields.retain(|(n, _)| n != "do");
    fields.push(("wikitext".into(), text.into()));
    fields.push(("summary".into(), "integration test".into()));
    fields.push(("do[save]".into(), "Save".into()));
    let saved = client
        .post(server.url("/doku.php"))
        .form(&fields)
        .send()
        .unwrap();
    assert!(
        saved.status() == 303 || saved.status() == 302,
        "save answered {}",
        saved.status()
    );

    // On disk, and rendered back.
    let stored =
        std::fs::read_to_string(instance.path().join("data/pages/playground/ferrophp.txt"))
            .unwrap();
    assert_eq!(stored.trim_end(), text);
    let view = client
        .get(server.url(&format!("/doku.php?id={page}")))
        .send()
        .unwrap()
        .text()
        .unwrap();
    assert!(
        view.contains("Saved through ferrophp: ünïcödé &amp; &lt;markup&gt; 42"),
        "saved text not rendered"
    );
    // Static assets of the app come from Rust, PHP source never does.
    let css = client
        .get(server.url("/lib/tpl/dokuwiki/images/logo.png"))
        .send()
        .unwrap();
    assert_eq!(css.status(), 200);
    let src = client
        .get(server.url("/inc/init.php"))
        .send()
        .unwrap()
        .text()
        .unwrap();
    assert!(!src.contains("<?php"), "PHP source served");
    let again = client.get(server.url("/doku.php?id=start")).send().unwrap();
    assert_eq!(again.status(), 200);
}
