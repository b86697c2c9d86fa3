//! Topic selectors: `*`, an exact string, or an RFC 6570 URI template, and whether a
//! concrete topic matches one.
//!
//! The rule (Mercure's "Topic Selectors", as the reference hub applies it): `*` matches
//! every topic; a selector equal to the topic matches it (so a template matches itself);
//! a selector that parses as a URI template matches the topics its expansion could
//! produce; anything else matches nothing more.
//!
//! No maintained Rust crate matches a string against a URI template (the RFC 6570 crates
//! only expand), so a template is compiled here into a regular expression: literals as
//! themselves, each expression as an optional group of the characters its operator lets
//! through unencoded (plus percent-encoded triplets), repeated with the operator's
//! separator for lists and exploded variables. `regex` runs in linear time, so a crafted
//! selector cannot make matching blow up. Compiled selectors are shared through a
//! [`SelectorCache`] with a bound.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use regex::Regex;

/// A compiled topic selector.
#[derive(Debug)]
pub enum Selector {
    /// `*`: every topic.
    Any,
    /// A string compared as it is (it is not a valid URI template).
    Exact(Box<str>),
    /// A URI template.
    Template(Template),
}

/// A URI template compiled for matching.
#[derive(Debug)]
pub struct Template {
    raw: Box<str>,
    regex: Regex,
    /// Bytes of literal text before the first expression: a topic the template matches
    /// starts with them (used to index templates by prefix).
    literal_prefix: usize,
}

impl Template {
    /// The template as written.
    pub fn raw(&self) -> &str {
        &self.raw
    }

    /// The literal text before the first expression.
    pub fn literal_prefix(&self) -> &str {
        &self.raw[..self.literal_prefix]
    }

    /// Whether `topic` matches (equal to the template, or one of its expansions).
    pub fn matches(&self, topic: &str) -> bool {
        topic == &*self.raw || self.regex.is_match(topic)
    }
}

impl Selector {
    /// Compiles `selector`: `*`, a URI template when it has an expression and parses as
    /// one, an exact string otherwise.
    pub fn parse(selector: &str) -> Selector {
        if selector == "*" {
            return Selector::Any;
        }
        if selector.contains('{') {
            if let Some(regex) = template_regex(selector) {
                if let Ok(regex) = Regex::new(&regex) {
                    return Selector::Template(Template {
                        raw: selector.into(),
                        regex,
                        literal_prefix: selector.find('{').unwrap_or(selector.len()),
                    });
                }
            }
        }
        Selector::Exact(selector.into())
    }

    /// The selector as written.
    pub fn as_str(&self) -> &str {
        match self {
            Selector::Any => "*",
            Selector::Exact(s) => s,
            Selector::Template(t) => &t.raw,
        }
    }

    /// Whether `topic` matches this selector.
    pub fn matches(&self, topic: &str) -> bool {
        match self {
            Selector::Any => true,
            Selector::Exact(s) => **s == *topic,
            Selector::Template(t) => t.matches(topic),
        }
    }

    /// Whether one of `topics` matches this selector.
    pub fn matches_any<S: AsRef<str>>(&self, topics: &[S]) -> bool {
        topics.iter().any(|t| self.matches(t.as_ref()))
    }
}

/// Whether every topic matches at least one selector (what a publisher needs for each
/// topic of its update).
pub fn all_topics_match<S: AsRef<str>>(topics: &[S], selectors: &[Arc<Selector>]) -> bool {
    topics
        .iter()
        .all(|t| selectors.iter().any(|s| s.matches(t.as_ref())))
}

/// Whether some topic matches some selector (what a subscriber needs to receive a private
/// update).
pub fn any_topic_matches<S: AsRef<str>>(topics: &[S], selectors: &[Arc<Selector>]) -> bool {
    selectors.iter().any(|s| s.matches_any(topics))
}

// Character classes, as regex class contents.
const UNRESERVED: &str = r"A-Za-z0-9\-._~";
const RESERVED: &str = r":/?#\[\]@!$&'()*+,;=";
const PCT_ENCODED: &str = "%[0-9A-Fa-f]{2}";

/// An expression's operator: what it puts first, between values, and which characters
/// its values keep unencoded.
struct Operator {
    first: &'static str,
    separator: &'static str,
    allow_reserved: bool,
    named: bool,
}

fn operator(c: char) -> Option<Operator> {
    let op = |first, separator, allow_reserved, named| Operator {
        first,
        separator,
        allow_reserved,
        named,
    };
    Some(match c {
        '+' => op("", ",", true, false),
        '#' => op("#", ",", true, false),
        '.' => op(".", ".", false, false),
        '/' => op("/", "/", false, false),
        ';' => op(";", ";", false, true),
        '?' => op("?", "&", false, true),
        '&' => op("&", "&", false, true),
        _ => return None,
    })
}

/// One value of an expression: a run of allowed characters and percent-encoded octets.
fn value_class(op: &Operator, with_equals: bool) -> String {
    let mut class = String::from("(?:[");
    class.push_str(UNRESERVED);
    if op.allow_reserved {
        class.push_str(RESERVED);
    } else {
        // Lists and associative arrays join their items with commas.
        class.push(',');
        if with_equals {
            class.push('=');
        }
    }
    class.push_str("]|");
    class.push_str(PCT_ENCODED);
    class.push_str(")*");
    class
}

/// A literal character RFC 6570 allows outside expressions (with the errata that admits
/// the apostrophe).
fn is_literal_char(c: char) -> bool {
    matches!(c as u32,
        0x21 | 0x23..=0x24 | 0x26..=0x3B | 0x3D | 0x3F..=0x5B | 0x5D | 0x5F | 0x61..=0x7A | 0x7E
        | 0xA0..=0xD7FF | 0xE000..=0xFDCF | 0xFDF0..=0xFFEF
        | 0x1_0000..=0x1_FFFD | 0x2_0000..=0x2_FFFD | 0x3_0000..=0x3_FFFD | 0x4_0000..=0x4_FFFD
        | 0x5_0000..=0x5_FFFD | 0x6_0000..=0x6_FFFD | 0x7_0000..=0x7_FFFD | 0x8_0000..=0x8_FFFD
        | 0x9_0000..=0x9_FFFD | 0xA_0000..=0xA_FFFD | 0xB_0000..=0xB_FFFD | 0xC_0000..=0xC_FFFD
        | 0xD_0000..=0xD_FFFD | 0xE_1000..=0xE_FFFD | 0xF_0000..=0xF_FFFD | 0x10_0000..=0x10_FFFD)
}

/// Whether `s` starts with a percent-encoded octet.
fn starts_pct_encoded(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 3 && b[0] == b'%' && b[1].is_ascii_hexdigit() && b[2].is_ascii_hexdigit()
}

/// A variable name: varchars (ALPHA, DIGIT, `_`, percent-encoded) with single dots
/// between them.
fn valid_varname(name: &str) -> bool {
    if name.is_empty() || name.starts_with('.') || name.ends_with('.') || name.contains("..") {
        return false;
    }
    let mut rest = name;
    while let Some(c) = rest.chars().next() {
        if c == '%' {
            if !starts_pct_encoded(rest) {
                return false;
            }
            rest = &rest[3..];
        } else if c.is_ascii_alphanumeric() || c == '_' || c == '.' {
            rest = &rest[1..];
        } else {
            return false;
        }
    }
    true
}

/// One varspec: its name and whether it is exploded (`*`); a prefix modifier (`:n`,
/// 1 <= n <= 9999) only shortens the value, which matching does not check.
fn parse_varspec(spec: &str) -> Option<bool> {
    if let Some(name) = spec.strip_suffix('*') {
        return valid_varname(name).then_some(true);
    }
    if let Some((name, len)) = spec.split_once(':') {
        let ok = (1..=4).contains(&len.len())
            && len.bytes().all(|b| b.is_ascii_digit())
            && !len.starts_with('0');
        return (ok && valid_varname(name)).then_some(false);
    }
    valid_varname(spec).then_some(false)
}

/// The regular expression matching the expansions of `template`, or None when it is not
/// a valid URI template.
fn template_regex(template: &str) -> Option<String> {
    let mut re = String::with_capacity(template.len() * 4);
    re.push('^');
    let mut rest = template;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('{') {
            let end = after.find('}')?;
            let body = &after[..end];
            rest = &after[end + 1..];
            let (op, vars) = match body.chars().next().and_then(operator) {
                Some(op) => (op, &body[1..]),
                None => (
                    Operator {
                        first: "",
                        separator: ",",
                        allow_reserved: false,
                        named: false,
                    },
                    body,
                ),
            };
            let mut explodes = Vec::new();
            for spec in vars.split(',') {
                explodes.push(parse_varspec(spec)?);
            }
            let any_explode = explodes.iter().any(|&e| e);
            re.push_str("(?:");
            re.push_str(&regex::escape(op.first));
            re.push_str(&value_class(&op, op.named || explodes[0]));
            if explodes.len() > 1 || any_explode {
                re.push_str("(?:");
                re.push_str(&regex::escape(op.separator));
                re.push_str(&value_class(&op, op.named || any_explode));
                re.push(')');
                if any_explode {
                    re.push('*');
                } else {
                    re.push_str(&format!("{{0,{}}}", explodes.len() - 1));
                }
            }
            re.push_str(")?");
        } else {
            let end = rest.find('{').unwrap_or(rest.len());
            let literal = &rest[..end];
            // Validate the literal text: allowed characters and well-formed `%XX`.
            let mut l = literal;
            while let Some(c) = l.chars().next() {
                if c == '%' {
                    if !starts_pct_encoded(l) {
                        return None;
                    }
                    l = &l[3..];
                } else if is_literal_char(c) {
                    l = &l[c.len_utf8()..];
                } else {
                    return None;
                }
            }
            re.push_str(&regex::escape(literal));
            rest = &rest[end..];
        }
    }
    re.push('$');
    Some(re)
}

/// Compiled selectors shared by every subscriber and publisher that names them, so a
/// template is compiled once however many connections use it. Bounded: two generations
/// of at most `capacity / 2` entries each; when the current one is full it becomes the
/// previous one and the oldest generation is dropped (entries still in use live on in
/// their holders). A hit in the previous generation moves the entry forward, so what is
/// used stays.
#[derive(Debug)]
pub struct SelectorCache {
    generations: Mutex<Generations>,
    half: usize,
    any: Arc<Selector>,
}

#[derive(Debug, Default)]
struct Generations {
    current: HashMap<Box<str>, Arc<Selector>>,
    previous: HashMap<Box<str>, Arc<Selector>>,
}

impl SelectorCache {
    /// A cache keeping at most `capacity` selectors (at least 2).
    pub fn new(capacity: usize) -> SelectorCache {
        SelectorCache {
            generations: Mutex::new(Generations::default()),
            half: (capacity / 2).max(1),
            any: Arc::new(Selector::Any),
        }
    }

    /// The compiled form of `selector`.
    pub fn get(&self, selector: &str) -> Arc<Selector> {
        if selector == "*" {
            return self.any.clone();
        }
        {
            let mut g = self.generations.lock().unwrap();
            if let Some(s) = g.current.get(selector) {
                return s.clone();
            }
            if let Some((k, s)) = g.previous.remove_entry(selector) {
                self.insert(&mut g, k, s.clone());
                return s;
            }
        }
        // Compiled outside the lock: a template takes microseconds.
        let compiled = Arc::new(Selector::parse(selector));
        let mut g = self.generations.lock().unwrap();
        // Another thread may have compiled it meanwhile: keep one.
        if let Some(s) = g.current.get(selector) {
            return s.clone();
        }
        self.insert(&mut g, selector.into(), compiled.clone());
        compiled
    }

    fn insert(&self, g: &mut Generations, key: Box<str>, s: Arc<Selector>) {
        if g.current.len() >= self.half {
            g.previous = std::mem::take(&mut g.current);
        }
        g.current.insert(key, s);
    }

    /// Selectors held now.
    pub fn len(&self) -> usize {
        let g = self.generations.lock().unwrap();
        g.current.len() + g.previous.len()
    }

    /// Whether the cache holds nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(selector: &str, topic: &str) -> bool {
        Selector::parse(selector).matches(topic)
    }

    #[test]
    fn any_and_exact() {
        assert!(m("*", "anything"));
        assert!(m("*", ""));
        assert!(m("foo", "foo"));
        assert!(!m("foo", "foo2"));
        assert!(!m("foo", "Foo"));
        assert!(m(
            "https://example.com/books/1",
            "https://example.com/books/1"
        ));
        // Not a template (unbalanced): a plain string.
        assert!(matches!(Selector::parse("a{b"), Selector::Exact(_)));
        assert!(m("a{b", "a{b"));
        assert!(!m("a{b", "ab"));
    }

    #[test]
    fn simple_expansion() {
        let t = "https://example.com/books/{id}";
        assert!(matches!(Selector::parse(t), Selector::Template(_)));
        assert!(m(t, "https://example.com/books/1"));
        assert!(m(t, "https://example.com/books/abc-DEF_.~"));
        assert!(m(t, "https://example.com/books/a%2Fb"));
        assert!(m(t, "https://example.com/books/a,b"));
        // Empty values are expansions too.
        assert!(m(t, "https://example.com/books/"));
        // The template itself.
        assert!(m(t, t));
        // Reserved characters are encoded by simple expansion: never raw.
        assert!(!m(t, "https://example.com/books/1/2"));
        assert!(!m(t, "https://example.com/books/1?x"));
        assert!(!m(t, "https://example.com/books"));
        assert!(!m(t, "https://example.com/authors/1"));
        assert!(!m(t, "xhttps://example.com/books/1"));
        // Regex metacharacters in literals are literals.
        assert!(m("a.b/{x}", "a.b/1"));
        assert!(!m("a.b/{x}", "aXb/1"));
        assert!(m(
            "https://example.net/foo/{random}",
            "https://example.net/foo/abc123"
        ));
        assert!(!m(
            "https://example.net/bar/{var}",
            "https://example.net/foo/will-not-match}"
        ));
    }

    #[test]
    fn operators() {
        assert!(m("/files{+path}", "/files/a/b/c.txt"));
        assert!(!m("/files{path}", "/files/a/b"));
        assert!(m("/page{#section}", "/page#intro"));
        assert!(m("/page{#section}", "/page"));
        assert!(m("X{.ext}", "X.json"));
        assert!(m("X{.a,b}", "X.one.two"));
        // `.` is unreserved: a value may hold dots (as in the reference hub's matching).
        assert!(m("X{.a,b}", "X.one.two.three"));
        assert!(!m("X{.a,b}", "X/one"));
        assert!(!m("/m{;x,y}", "/m;x=1;y=2;z=3;w=4"));
        assert!(m("{/seg*}", "/a/b/c"));
        assert!(m("/m{;x,y}", "/m;x=1;y=2"));
        assert!(m(
            "https://example.com/users/foo/{?topic}",
            "https://example.com/users/foo/?topic=https%3A%2F%2Fexample.com%2Fbooks%2F1"
        ));
        assert!(!m(
            "https://example.com/users/foo/{?topic}",
            "https://example.com/users/bar/?topic=x"
        ));
        assert!(m("/s{?q,lang}", "/s?q=a&lang=fr"));
        assert!(m("/s?fixed=1{&x}", "/s?fixed=1&x=2"));
        assert!(m("{var:3}", "abc"));
        assert!(m("/a/{x}/b/{y}", "/a/1/b/2"));
        assert!(!m("/a/{x}/b/{y}", "/a/1/c/2"));
    }

    #[test]
    fn invalid_templates_are_plain_strings() {
        for s in [
            "{}",
            "{a b}",
            "{=x}",
            "{!x}",
            "{|x}",
            "{a..b}",
            "{.a.}",
            "{a:0}",
            "{a:10000}",
            "{a",
            "a}b{c",
            "x y{a}",
            "%zz{a}",
            "{a%g1}",
            "<{a}>",
        ] {
            assert!(matches!(Selector::parse(s), Selector::Exact(_)), "{s}");
            assert!(m(s, s));
        }
        for s in [
            "{a.b}",
            "{a_1,%41}",
            "{a:9999}",
            "{x*}",
            "caf\u{e9}/{id}",
            "%41{a}",
        ] {
            assert!(matches!(Selector::parse(s), Selector::Template(_)), "{s}");
        }
    }

    #[test]
    fn prefixes() {
        match Selector::parse("https://e.com/a/{id}/b") {
            Selector::Template(t) => assert_eq!(t.literal_prefix(), "https://e.com/a/"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn helpers_for_publish_and_private_rules() {
        let sel = |v: &[&str]| {
            v.iter()
                .map(|s| Arc::new(Selector::parse(s)))
                .collect::<Vec<_>>()
        };
        assert!(all_topics_match(&["a", "b/1"], &sel(&["a", "b/{x}"])));
        assert!(!all_topics_match(&["a", "c"], &sel(&["a", "b/{x}"])));
        assert!(all_topics_match(&["a", "c"], &sel(&["*"])));
        assert!(!all_topics_match(&["a"], &sel(&[])));
        assert!(any_topic_matches(&["a", "c"], &sel(&["c"])));
        assert!(!any_topic_matches(&["a", "c"], &sel(&["d"])));
    }

    #[test]
    fn cache_shares_and_stays_bounded() {
        let cache = SelectorCache::new(8);
        let a = cache.get("t/{x}");
        let b = cache.get("t/{x}");
        assert!(Arc::ptr_eq(&a, &b));
        for i in 0..100 {
            cache.get(&format!("s/{i}/{{x}}"));
            assert!(cache.len() <= 8);
        }
        // Still usable after eviction: a fresh compile, same behaviour.
        let c = cache.get("t/{x}");
        assert!(c.matches("t/1"));
        assert!(Arc::ptr_eq(&cache.get("*"), &cache.get("*")));
    }

    proptest::proptest! {
        // Expanding a template with simple values gives topics it matches; changing the
        // literal part gives topics it does not.
        #[test]
        fn expansions_match(
            lit in "[a-z/]{0,8}",
            val in "[A-Za-z0-9._~-]{0,12}",
            enc in proptest::collection::vec(0u8..=255, 0..4),
        ) {
            let template = format!("https://h/{lit}{{v}}/end");
            let mut value = val.clone();
            for b in enc { value.push_str(&format!("%{b:02X}")); }
            let topic = format!("https://h/{lit}{value}/end");
            proptest::prop_assert!(m(&template, &topic));
            let other = format!("https://h/{lit}{value}/end2");
            proptest::prop_assert!(!m(&template, &other));
        }
    }
}
