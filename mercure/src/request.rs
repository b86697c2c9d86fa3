//! Reading the hub's requests without an HTTP library: the request head as plain data
//! ([`Request`]), `application/x-www-form-urlencoded` decoding (Go's `url.ParseQuery`
//! rules, which the reference hub answers with), the publish form
//! ([`parse_publish_form`]) and the subscribe query ([`parse_subscribe_query`]), each with
//! the status the protocol gives its errors.

use crate::update::{Update, UpdateError};

/// The head of a request to the hub, as the HTTP layer hands it over: method, path and
/// query as received (still percent-encoded), and the headers whose values are text.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// `GET`, `POST`, `OPTIONS`, ...
    pub method: &'a str,
    /// The path, percent-encoded as received (`/.well-known/mercure/subscriptions/...`).
    pub path: &'a str,
    /// The query without its `?`, if there is one.
    pub query: Option<&'a str>,
    /// Header names (any case) and values.
    pub headers: &'a [(&'a str, &'a str)],
    /// The request's span, when it is traced (a publish records its span under it).
    pub trace: Option<ferrophp_trace::SpanContext>,
}

impl<'a> Request<'a> {
    /// The first value of header `name` (names compare case-insensitively).
    pub fn header(&self, name: &str) -> Option<&'a str> {
        self.headers_named(name).next()
    }

    /// Every value of header `name`.
    pub fn headers_named<'s>(&'s self, name: &'s str) -> impl Iterator<Item = &'a str> + 's {
        self.headers
            .iter()
            .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| *v)
    }

    /// The path and query, as `RequestURI` gives them (the subscriptions API names its
    /// documents by it).
    pub fn request_uri(&self) -> String {
        match self.query {
            Some(q) => format!("{}?{}", self.path, q),
            None => self.path.to_owned(),
        }
    }
}

/// A malformed form or query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FormError {
    /// A `;` used as a separator (Go refuses it since 1.17).
    Semicolon,
    /// A `%` not followed by two hex digits.
    BadEscape,
    /// A decoded name or value that is not UTF-8.
    NotUtf8,
}

impl std::fmt::Display for FormError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            FormError::Semicolon => "invalid semicolon separator in query",
            FormError::BadEscape => "invalid URL escape",
            FormError::NotUtf8 => "a name or value is not UTF-8",
        })
    }
}

impl std::error::Error for FormError {}

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Decodes one form component: `+` is a space, `%XX` an octet.
pub fn unescape_component(s: &[u8]) -> Result<String, FormError> {
    if !s.iter().any(|&b| b == b'%' || b == b'+') {
        return String::from_utf8(s.to_vec()).map_err(|_| FormError::NotUtf8);
    }
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        match s[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let (Some(h), Some(l)) = (
                    s.get(i + 1).copied().and_then(hex),
                    s.get(i + 2).copied().and_then(hex),
                ) else {
                    return Err(FormError::BadEscape);
                };
                out.push(h << 4 | l);
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).map_err(|_| FormError::NotUtf8)
}

/// Decodes `application/x-www-form-urlencoded` text into its pairs, in order. Like Go's
/// `url.ParseQuery`, a bad pair does not stop decoding: the good pairs are returned along
/// with the first error.
pub fn parse_form(input: &[u8]) -> (Vec<(String, String)>, Option<FormError>) {
    let mut pairs = Vec::new();
    let mut error = None;
    for segment in input.split(|&b| b == b'&') {
        if segment.contains(&b';') {
            error.get_or_insert(FormError::Semicolon);
            continue;
        }
        if segment.is_empty() {
            continue;
        }
        let (k, v) = match segment.iter().position(|&b| b == b'=') {
            Some(i) => (&segment[..i], &segment[i + 1..]),
            None => (segment, &[][..]),
        };
        match (unescape_component(k), unescape_component(v)) {
            (Ok(k), Ok(v)) => pairs.push((k, v)),
            (Err(e), _) | (_, Err(e)) => {
                error.get_or_insert(e);
            }
        }
    }
    (pairs, error)
}

/// A publish request's status and message, for the HTTP layer's error answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpError {
    /// The status code.
    pub status: u16,
    /// A one-line reason (the body).
    pub message: String,
}

impl HttpError {
    pub(crate) fn new(status: u16, message: impl Into<String>) -> HttpError {
        HttpError {
            status,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for HttpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.status, self.message)
    }
}

impl std::error::Error for HttpError {}

impl From<UpdateError> for HttpError {
    fn from(e: UpdateError) -> HttpError {
        HttpError::new(e.status(), e.to_string())
    }
}

/// Reads a publish request's form body into an update (not yet validated: see
/// [`Update::validate`]). Fields: `topic` (repeatable; required), `data`, `private`
/// (present means private, whatever its value), `id`, `type`, `retry` (decimal). Unknown
/// fields are ignored. A malformed body answers 400, as does a missing topic or a retry
/// that is not a number.
pub fn parse_publish_form(body: &[u8]) -> Result<Update, HttpError> {
    let (pairs, error) = parse_form(body);
    if let Some(e) = error {
        return Err(HttpError::new(400, e.to_string()));
    }
    let mut update = Update::default();
    let mut data = None;
    let mut retry = None;
    for (k, v) in pairs {
        match k.as_str() {
            "topic" => update.topics.push(v),
            "data" => {
                data.get_or_insert(v);
            }
            "private" => update.private = true,
            "id" => {
                update.id.get_or_insert(v);
            }
            "type" => {
                update.event_type.get_or_insert(v);
            }
            "retry" => {
                retry.get_or_insert(v);
            }
            _ => {}
        }
    }
    if update.topics.is_empty() {
        return Err(UpdateError::MissingTopic.into());
    }
    update.data = data.unwrap_or_default();
    if let Some(r) = retry.filter(|r| !r.is_empty()) {
        update.retry = Some(r.parse().map_err(|_| UpdateError::InvalidRetry)?);
    }
    if update.event_type.as_deref() == Some("") {
        update.event_type = None;
    }
    Ok(update)
}

/// What a subscribe request asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SubscribeQuery {
    /// The topic selectors (`topic`, repeatable).
    pub topics: Vec<String>,
    /// The `lastEventID` parameter (the `Last-Event-ID` header wins over it: see
    /// [`last_event_id`]).
    pub last_event_id: Option<String>,
    /// The values of the `authorization` parameter (a token; valid only once).
    pub authorization: Vec<String>,
}

impl SubscribeQuery {
    /// The protocol's checks on the selectors: at least one, at most `max_topics`
    /// (400 otherwise).
    pub fn check(&self, max_topics: usize) -> Result<(), HttpError> {
        if self.topics.is_empty() {
            return Err(HttpError::new(400, r#"Missing "topic" parameter."#));
        }
        if self.topics.len() > max_topics {
            return Err(HttpError::new(400, r#"Too many "topic" parameters."#));
        }
        Ok(())
    }
}

/// Reads a subscribe request's query. Malformed pairs are skipped, as Go's
/// `URL.Query()` does. The selectors are checked by [`SubscribeQuery::check`] (after
/// authorization, as the reference hub orders it).
pub fn parse_subscribe_query(query: Option<&str>) -> SubscribeQuery {
    let mut q = SubscribeQuery::default();
    if let Some(query) = query {
        let (pairs, _) = parse_form(query.as_bytes());
        for (k, v) in pairs {
            match k.as_str() {
                "topic" => q.topics.push(v),
                "lastEventID" if q.last_event_id.is_none() && !v.is_empty() => {
                    q.last_event_id = Some(v);
                }
                "authorization" => q.authorization.push(v),
                _ => {}
            }
        }
    }
    q
}

/// The id to resume after: the `Last-Event-ID` header when present and not empty, else
/// the `lastEventID` query parameter.
pub fn last_event_id(header: Option<&str>, query: Option<&str>) -> Option<String> {
    header
        .filter(|h| !h.is_empty())
        .or(query.filter(|q| !q.is_empty()))
        .map(str::to_owned)
}

/// Whether a `Content-Type` is the form encoding (parameters allowed).
pub fn is_form_content_type(content_type: Option<&str>) -> bool {
    content_type.is_some_and(|ct| {
        ct.split(';')
            .next()
            .unwrap_or("")
            .trim()
            .eq_ignore_ascii_case("application/x-www-form-urlencoded")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn form_decoding_follows_go() {
        let (p, e) = parse_form(b"a=1&b=x+y%2Bz&&c&d=");
        assert_eq!(e, None);
        assert_eq!(
            p,
            vec![
                ("a".into(), "1".into()),
                ("b".into(), "x y+z".into()),
                ("c".into(), "".into()),
                ("d".into(), "".into())
            ]
        );
        let (p, e) = parse_form(b"a=1;b=2&c=3");
        assert_eq!(e, Some(FormError::Semicolon));
        assert_eq!(p, vec![("c".into(), "3".into())]);
        assert_eq!(parse_form(b"a=%zz").1, Some(FormError::BadEscape));
        assert_eq!(parse_form(b"a=%4").1, Some(FormError::BadEscape));
        assert_eq!(parse_form(b"a=%ff").1, Some(FormError::NotUtf8));
        assert_eq!(parse_form("t=caf%C3%A9".as_bytes()).0[0].1, "caf\u{e9}");
    }

    #[test]
    fn publish_form() {
        let u = parse_publish_form(
            b"topic=https%3A%2F%2Fexample.com%2Fa&topic=b&data=hello%0Aworld&private=&id=x&type=t&retry=10&unknown=1",
        )
        .unwrap();
        assert_eq!(u.topics, vec!["https://example.com/a", "b"]);
        assert_eq!(u.data, "hello\nworld");
        assert!(u.private);
        assert_eq!(u.id.as_deref(), Some("x"));
        assert_eq!(u.event_type.as_deref(), Some("t"));
        assert_eq!(u.retry, Some(10));

        let plain = parse_publish_form(b"topic=a").unwrap();
        assert!(!plain.private);
        assert_eq!(plain.data, "");
        assert_eq!(plain.retry, None);

        assert_eq!(parse_publish_form(b"data=x").unwrap_err().status, 400);
        assert_eq!(parse_publish_form(b"").unwrap_err().status, 400);
        assert_eq!(
            parse_publish_form(b"topic=a&retry=x").unwrap_err().status,
            400
        );
        assert_eq!(
            parse_publish_form(b"topic=a&retry=-1").unwrap_err().status,
            400
        );
        assert_eq!(
            parse_publish_form(b"topic=a&data=%").unwrap_err().status,
            400
        );
        // The first data wins, like Go's PostForm.Get.
        assert_eq!(
            parse_publish_form(b"topic=a&data=1&data=2").unwrap().data,
            "1"
        );
    }

    #[test]
    fn subscribe_query() {
        let q = parse_subscribe_query(Some(
            "topic=a&topic=https%3A%2F%2Fe.com%2F%7Bid%7D&lastEventID=urn%3Ax&x=%zz",
        ));
        assert_eq!(q.topics, vec!["a", "https://e.com/{id}"]);
        assert_eq!(q.last_event_id.as_deref(), Some("urn:x"));
        assert_eq!(q.check(10), Ok(()));
        assert_eq!(
            parse_subscribe_query(None).check(10).unwrap_err().status,
            400
        );
        let only_id = parse_subscribe_query(Some("lastEventID=a"));
        assert_eq!(only_id.check(10).unwrap_err().status, 400);
        let two = parse_subscribe_query(Some("topic=a&topic=b"));
        assert_eq!(two.check(1).unwrap_err().status, 400);
        assert_eq!(last_event_id(Some("h"), Some("q")).as_deref(), Some("h"));
        assert_eq!(last_event_id(Some(""), Some("q")).as_deref(), Some("q"));
        assert_eq!(last_event_id(None, None), None);
    }

    #[test]
    fn content_types() {
        assert!(is_form_content_type(Some(
            "application/x-www-form-urlencoded"
        )));
        assert!(is_form_content_type(Some(
            "Application/X-WWW-Form-Urlencoded; charset=UTF-8"
        )));
        assert!(!is_form_content_type(Some(
            "multipart/form-data; boundary=x"
        )));
        assert!(!is_form_content_type(None));
    }
}
