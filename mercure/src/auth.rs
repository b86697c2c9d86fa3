//! Who may do what: finding the token a request presents (`Authorization: Bearer`, the
//! `authorization` query parameter, or the authorization cookie, in that order of
//! precedence), the publish origins that guard cookie-authenticated publishing against
//! CSRF, and the rules over verified claims ([`Grants`]): which topics a publisher may
//! publish to, which private updates a subscriber may receive.

use std::sync::Arc;

use crate::jwt::{AuthError, Claims, Verifier};
use crate::request::Request;
use crate::selector::{all_topics_match, any_topic_matches, Selector, SelectorCache};

/// The cookie name the reference hub uses by default.
pub const DEFAULT_COOKIE_NAME: &str = "mercureAuthorization";

/// Where a token came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenSource {
    /// `Authorization: Bearer ...`.
    Header,
    /// The `authorization` query parameter.
    Query,
    /// The authorization cookie.
    Cookie,
}

/// The token `request` presents, if any. The header wins over the query parameter, which
/// wins over the cookie. A header that is not one `Bearer` value, or a query parameter
/// given twice or too short to be a token, is an error (401), not "anonymous".
pub fn find_token<'a>(
    request: &Request<'a>,
    query_authorization: &'a [String],
    cookie_name: &str,
) -> Result<Option<(&'a str, TokenSource)>, AuthError> {
    let mut headers = request.headers_named("authorization");
    if let Some(first) = headers.next() {
        // The shortest JWT is longer than this; the reference hub's bound.
        if headers.next().is_some() || first.len() < 48 {
            return Err(AuthError::InvalidAuthorizationHeader);
        }
        return match first.strip_prefix("Bearer ") {
            Some(token) => Ok(Some((token, TokenSource::Header))),
            None => Err(AuthError::InvalidAuthorizationHeader),
        };
    }
    if !query_authorization.is_empty() {
        if query_authorization.len() != 1 || query_authorization[0].len() < 41 {
            return Err(AuthError::InvalidAuthorizationQuery);
        }
        return Ok(Some((&query_authorization[0], TokenSource::Query)));
    }
    Ok(cookie_value(request, cookie_name).map(|c| (c, TokenSource::Cookie)))
}

/// The value of cookie `name` in the request's `Cookie` headers.
pub fn cookie_value<'a>(request: &Request<'a>, name: &str) -> Option<&'a str> {
    request
        .headers_named("cookie")
        .flat_map(|h| h.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(n, _)| *n == name)
        .map(|(_, v)| {
            v.strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .unwrap_or(v)
        })
}

/// The origins allowed to publish with a cookie (`publish_origins`): exact origins,
/// `*`, and wildcards such as `https://*.example.com`, compared case-insensitively.
#[derive(Debug, Clone, Default)]
pub struct PublishOrigins {
    all: bool,
    exact: Vec<String>,
    wildcards: Vec<(String, String)>,
}

impl PublishOrigins {
    /// The allowlist; each entry must be `*`, `null`, or `scheme://host[:port]` (a `*`
    /// may stand for part of it).
    pub fn new(origins: &[String]) -> Result<PublishOrigins, String> {
        let mut p = PublishOrigins::default();
        for origin in origins {
            validate_origin(origin)?;
            let origin = origin.to_ascii_lowercase();
            if origin == "*" {
                p.all = true;
            } else if let Some((prefix, suffix)) = origin.split_once('*') {
                p.wildcards.push((prefix.to_owned(), suffix.to_owned()));
            } else {
                p.exact.push(origin);
            }
        }
        Ok(p)
    }

    /// Whether `origin` is allowed.
    pub fn allows(&self, origin: &str) -> bool {
        let origin = origin.to_ascii_lowercase();
        self.all
            || self.exact.contains(&origin)
            || self.wildcards.iter().any(|(p, s)| {
                origin.len() >= p.len() + s.len() && origin.starts_with(p) && origin.ends_with(s)
            })
    }
}

/// An origin as configuration may name it: `*`, `null`, or a URL of only a scheme, a host
/// and maybe a port.
pub(crate) fn validate_origin(origin: &str) -> Result<(), String> {
    if origin == "*" || origin == "null" {
        return Ok(());
    }
    let bad = || {
        Err(format!(
            "invalid origin {origin:?}: must be a URL having only a scheme, a host and optionally a port, \"*\" or \"null\""
        ))
    };
    let Some((scheme, rest)) = origin.split_once("://") else {
        return bad();
    };
    if scheme.is_empty()
        || !scheme
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
        || rest.is_empty()
        || rest.contains(['/', '?', '#', '@'])
    {
        return bad();
    }
    Ok(())
}

/// The origin of a cookie-authenticated publish request: its `Origin`, else the scheme
/// and host of its `Referer`.
pub fn request_origin(request: &Request<'_>) -> Result<String, AuthError> {
    if let Some(o) = request.header("origin").filter(|o| !o.is_empty()) {
        return Ok(o.to_owned());
    }
    let referer = request
        .header("referer")
        .filter(|r| !r.is_empty())
        .ok_or(AuthError::NoOrigin)?;
    let (scheme, rest) = referer
        .split_once("://")
        .ok_or_else(|| AuthError::OriginNotAllowed(referer.to_owned()))?;
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    Ok(format!("{scheme}://{host}"))
}

/// What a verified token grants, its selectors compiled.
#[derive(Debug, Clone, Default)]
pub struct Grants {
    /// The claims as they were.
    pub claims: Claims,
    /// `mercure.publish`, compiled (None: may not publish).
    pub publish: Option<Arc<[Arc<Selector>]>>,
    /// `mercure.subscribe`, compiled (None: no private updates).
    pub subscribe: Option<Arc<[Arc<Selector>]>>,
}

impl Grants {
    /// Compiles the selectors of `claims` through `cache`.
    pub fn new(claims: Claims, cache: &SelectorCache) -> Grants {
        let compile = |v: &Option<Vec<String>>| {
            v.as_ref()
                .map(|v| v.iter().map(|s| cache.get(s)).collect::<Arc<[_]>>())
        };
        Grants {
            publish: compile(&claims.publish),
            subscribe: compile(&claims.subscribe),
            claims,
        }
    }

    /// Whether the bearer may publish an update of `topics`: `mercure.publish` must match
    /// every one of them.
    pub fn may_publish<S: AsRef<str>>(&self, topics: &[S]) -> bool {
        self.publish
            .as_deref()
            .is_some_and(|sel| all_topics_match(topics, sel))
    }

    /// Whether the bearer may receive a private update of `topics`: one of them must
    /// match one selector of `mercure.subscribe` (the query's selectors are checked
    /// separately: both must hold).
    pub fn may_receive_private<S: AsRef<str>>(&self, topics: &[S]) -> bool {
        self.subscribe
            .as_deref()
            .is_some_and(|sel| any_topic_matches(topics, sel))
    }
}

/// Verifies the token of a request against `verifier`, or returns None for a request
/// that presents none. Publishing with a cookie also needs an allowed origin
/// (`publish_origins`; None means publishing by cookie is refused).
pub fn authenticate(
    request: &Request<'_>,
    query_authorization: &[String],
    cookie_name: &str,
    verifier: &Verifier,
    publish_origins: Option<&PublishOrigins>,
    publishing: bool,
) -> Result<Option<Claims>, AuthError> {
    let Some((token, source)) = find_token(request, query_authorization, cookie_name)? else {
        return Ok(None);
    };
    // Cookies ride along on cross-site requests: a publish (a state change) by cookie
    // must come from an allowed origin. Subscribing is safe (GET).
    if publishing && source == TokenSource::Cookie {
        let origin = request_origin(request)?;
        if !publish_origins.is_some_and(|p| p.allows(&origin)) {
            return Err(AuthError::OriginNotAllowed(origin));
        }
    }
    verifier.verify(token).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req<'a>(method: &'a str, headers: &'a [(&'a str, &'a str)]) -> Request<'a> {
        Request {
            method,
            path: "/.well-known/mercure",
            query: None,
            headers,
            trace: None,
        }
    }

    const TOKEN: &str = "eyJhbGciOiJIUzI1NiJ9.eyJtZXJjdXJlIjp7InB1Ymxpc2giOlsiKiJdfX0.PXwpfIGng6KObfZlcOXvcnWCJOWTFLtswGI5DZuWSK4";

    #[test]
    fn token_precedence() {
        let bearer = format!("Bearer {TOKEN}");
        let cookie = format!("a=b; mercureAuthorization={TOKEN}; c=d");
        let h = [
            ("Authorization", bearer.as_str()),
            ("Cookie", cookie.as_str()),
        ];
        let q = vec!["q".repeat(50)];
        let r = req("GET", &h);
        assert_eq!(
            find_token(&r, &q, DEFAULT_COOKIE_NAME).unwrap(),
            Some((TOKEN, TokenSource::Header))
        );
        let h = [("cookie", cookie.as_str())];
        let r = req("GET", &h);
        assert_eq!(
            find_token(&r, &q, DEFAULT_COOKIE_NAME).unwrap().unwrap().1,
            TokenSource::Query
        );
        assert_eq!(
            find_token(&r, &[], DEFAULT_COOKIE_NAME).unwrap(),
            Some((TOKEN, TokenSource::Cookie))
        );
        assert_eq!(find_token(&r, &[], "other").unwrap(), None);
        assert_eq!(find_token(&req("GET", &[]), &[], "x").unwrap(), None);
    }

    #[test]
    fn malformed_presentations_are_errors() {
        let basic = format!("Basic {TOKEN}");
        let bearer = format!("Bearer {TOKEN}");
        for h in [
            vec![("Authorization", basic.as_str())],
            vec![("Authorization", "Bearer short")],
            vec![
                ("Authorization", bearer.as_str()),
                ("authorization", bearer.as_str()),
            ],
        ] {
            assert_eq!(
                find_token(&req("GET", &h), &[], "c"),
                Err(AuthError::InvalidAuthorizationHeader)
            );
        }
        assert_eq!(
            find_token(&req("GET", &[]), &["short".into()], "c"),
            Err(AuthError::InvalidAuthorizationQuery)
        );
        let twice = vec![TOKEN.to_string(), TOKEN.to_string()];
        assert_eq!(
            find_token(&req("GET", &[]), &twice, "c"),
            Err(AuthError::InvalidAuthorizationQuery)
        );
    }

    #[test]
    fn publish_origins() {
        let p = PublishOrigins::new(&[
            "https://app.example.com".into(),
            "https://*.trusted.org".into(),
        ])
        .unwrap();
        assert!(p.allows("https://app.example.com"));
        assert!(p.allows("HTTPS://APP.example.com"));
        assert!(p.allows("https://a.trusted.org"));
        assert!(!p.allows("https://evil.com"));
        assert!(!p.allows("http://app.example.com"));
        assert!(PublishOrigins::new(&["*".into()])
            .unwrap()
            .allows("https://x"));
        for bad in [
            "example.com",
            "https://e.com/path",
            "https://e.com?q",
            "https://u@e.com",
        ] {
            assert!(PublishOrigins::new(&[bad.into()]).is_err(), "{bad}");
        }
        let h = [("Referer", "https://app.example.com/page?x=1")];
        assert_eq!(
            request_origin(&req("POST", &h)).unwrap(),
            "https://app.example.com"
        );
        assert_eq!(request_origin(&req("POST", &[])), Err(AuthError::NoOrigin));
    }
}
