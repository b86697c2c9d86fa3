//! The Mercure conformance cases as data, so the crate-level tests (here) and the HTTP
//! tests over real TCP (in `server`, later) run the same table. No dependency on any
//! crate: include it with `#[path = ".../mercure/tests/cases/mod.rs"] mod cases;`.
//!
//! The first eleven are the `conformance-tests/mercure.spec.ts` cases of the reference
//! hub's repository (their topics made concrete; `R0`..`R4` stand for its random
//! strings); the rest cover the spec's private-update rule with the claim that allows them.

#![allow(dead_code)]

/// One publish/subscribe case.
pub struct Case {
    /// A name for failure messages.
    pub name: &'static str,
    /// The update's topics (first canonical).
    pub update_topics: &'static [&'static str],
    /// The subscriber's `topic` selectors.
    pub selectors: &'static [&'static str],
    /// Whether the update is private.
    pub private: bool,
    /// The subscriber's `mercure.subscribe` claim (None: anonymous).
    pub subscribe_claim: Option<&'static [&'static str]>,
    /// Whether the subscriber must receive the update.
    pub must_receive: bool,
}

const fn public(
    name: &'static str,
    update_topics: &'static [&'static str],
    selectors: &'static [&'static str],
    must_receive: bool,
) -> Case {
    Case {
        name,
        update_topics,
        selectors,
        private: false,
        subscribe_claim: None,
        must_receive,
    }
}

const fn private(
    name: &'static str,
    update_topics: &'static [&'static str],
    selectors: &'static [&'static str],
    subscribe_claim: Option<&'static [&'static str]>,
    must_receive: bool,
) -> Case {
    Case {
        name,
        update_topics,
        selectors,
        private: true,
        subscribe_claim,
        must_receive,
    }
}

/// The table.
pub const CASES: &[Case] = &[
    public("raw string", &["R0"], &["R0"], true),
    public("multiple topics", &["other-random", "R1"], &["R1"], true),
    public("multiple topic selectors", &["R2"], &["foo", "R2"], true),
    public(
        "URI",
        &["https://example.net/foo/R3"],
        &["https://example.net/foo/R3"],
        true,
    ),
    public(
        "URI template",
        &["https://example.net/foo/R4"],
        &["https://example.net/foo/{random}"],
        true,
    ),
    public(
        "nonmatching raw string",
        &["will-not-match}"],
        &["another-name"],
        false,
    ),
    public(
        "nonmatching URI",
        &["https://example.net/foo/will-not-match}"],
        &["https://example.net/foo/another-name"],
        false,
    ),
    public(
        "nonmatching URI template",
        &["https://example.net/foo/will-not-match}"],
        &["https://example.net/bar/{var}"],
        false,
    ),
    private("private raw string", &["R0"], &["R0"], None, false),
    private(
        "private URI",
        &["https://example.net/foo/R3"],
        &["https://example.net/foo/R3"],
        None,
        false,
    ),
    private(
        "private URI template",
        &["https://example.net/foo/R4"],
        &["https://example.net/foo/{random}"],
        None,
        false,
    ),
    // The spec's rule: a topic matched by the query AND one (maybe another) matched by the claim.
    private(
        "private with the claim",
        &["https://example.com/books/1"],
        &["https://example.com/books/{id}"],
        Some(&["https://example.com/books/1"]),
        true,
    ),
    private(
        "private with a wildcard claim",
        &["a"],
        &["a"],
        Some(&["*"]),
        true,
    ),
    private(
        "private with a template claim",
        &["https://example.com/books/1"],
        &["*"],
        Some(&["https://example.com/books/{id}"]),
        true,
    ),
    private(
        "private without the right claim",
        &["https://example.com/books/1"],
        &["https://example.com/books/{id}"],
        Some(&["https://example.com/books/2"]),
        false,
    ),
    private(
        "private with an empty claim",
        &["a"],
        &["a"],
        Some(&[]),
        false,
    ),
    private(
        "private via an alternate topic (the spec's users/foo example)",
        &[
            "https://example.com/books/1",
            "https://example.com/users/foo/?topic=https%3A%2F%2Fexample.com%2Fbooks%2F1",
        ],
        &["https://example.com/books/{id}"],
        Some(&["https://example.com/users/foo/{?topic}"]),
        true,
    ),
    private(
        "private: the claim matches but the query does not",
        &["https://example.com/books/1"],
        &["https://example.com/authors/{id}"],
        Some(&["*"]),
        false,
    ),
    public("public updates need no claim", &["x"], &["*"], true),
];
