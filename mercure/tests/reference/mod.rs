//! The randomised entitlement tests' reference: a table of selectors, each with the rule
//! it stands for written here independently of the crate's matcher and index, random
//! topics that exercise them, and who is entitled to an update. Shared by the core's test
//! (`entitlement.rs`) and the server's over real TCP (`server/tests/mercure.rs`); no
//! dependency but `fastrand`: include it with
//! `#[path = ".../mercure/tests/reference/mod.rs"] mod reference;`.

#![allow(dead_code)]

/// A selector and the reference rule for it.
pub struct Sel {
    pub text: &'static str,
    pub matches: fn(&str) -> bool,
}

fn seg_ok(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b))
}

/// `https://ex.com/r/<a>/i/<b>` split into (a, b).
fn parts(topic: &str) -> Option<(&str, &str)> {
    let rest = topic.strip_prefix("https://ex.com/r/")?;
    let (a, b) = rest.split_once("/i/")?;
    Some((a, b))
}

pub const SELECTORS: &[Sel] = &[
    Sel {
        text: "*",
        matches: |_| true,
    },
    Sel {
        text: "t0",
        matches: |t| t == "t0",
    },
    Sel {
        text: "t1",
        matches: |t| t == "t1",
    },
    Sel {
        text: "https://ex.com/r/1/i/2",
        matches: |t| t == "https://ex.com/r/1/i/2",
    },
    Sel {
        text: "https://ex.com/r/{r}/i/{i}",
        matches: |t| {
            parts(t)
                .is_some_and(|(a, b)| (a.is_empty() || seg_ok(a)) && (b.is_empty() || seg_ok(b)))
        },
    },
    Sel {
        text: "https://ex.com/r/1/i/{i}",
        matches: |t| parts(t).is_some_and(|(a, b)| a == "1" && (b.is_empty() || seg_ok(b))),
    },
    Sel {
        text: "https://ex.com/r/{r}/i/3",
        matches: |t| parts(t).is_some_and(|(a, b)| (a.is_empty() || seg_ok(a)) && b == "3"),
    },
    Sel {
        text: "https://ex.com/{+rest}",
        matches: |t| t.starts_with("https://ex.com/"),
    },
    Sel {
        text: "nothing-{x}-here",
        matches: |t| t.starts_with("nothing-") && t.ends_with("-here"),
    },
];

pub fn random_topic(rng: &mut fastrand::Rng) -> String {
    match rng.u8(0..5) {
        0 => "t0".into(),
        1 => "t1".into(),
        2 => "t2".into(),
        _ => format!("https://ex.com/r/{}/i/{}", rng.u8(0..4), rng.u8(0..5)),
    }
}

/// Whether a subscriber with `selectors` (indexes into [`SELECTORS`]) and `claim` (its
/// `mercure.subscribe`, None: anonymous) is entitled to an update of `topics`: one of its
/// selectors matches one topic, and a private update also needs its claim to match one.
pub fn entitled(
    selectors: &[usize],
    claim: Option<&[usize]>,
    topics: &[String],
    private: bool,
) -> bool {
    let any = |sels: &[usize]| {
        sels.iter()
            .any(|&s| topics.iter().any(|t| (SELECTORS[s].matches)(t)))
    };
    any(selectors) && (!private || claim.is_some_and(any))
}

/// 1..=`max` random selector indexes.
pub fn pick(rng: &mut fastrand::Rng, max: usize) -> Vec<usize> {
    (0..rng.usize(1..=max))
        .map(|_| rng.usize(0..SELECTORS.len()))
        .collect()
}

/// The texts of selector indexes.
pub fn texts(sels: &[usize]) -> Vec<&'static str> {
    sels.iter().map(|&s| SELECTORS[s].text).collect()
}
