//! CORS for the hub (`--mercure-cors-origin`), as the reference hub configures it:
//! credentials allowed (the authorization cookie), methods GET, POST and HEAD, request
//! headers `Authorization`, `Cache-Control`, `Last-Event-ID` (and `Origin`). The decisions
//! come back as headers to add; the HTTP layer writes them.

use crate::auth::validate_origin;

/// The CORS policy: which origins may read the hub's responses.
#[derive(Debug, Clone, Default)]
pub struct Cors {
    all: bool,
    exact: Vec<String>,
    wildcards: Vec<(String, String)>,
}

const ALLOWED_METHODS: [&str; 3] = ["GET", "POST", "HEAD"];
const ALLOWED_HEADERS: [&str; 4] = ["authorization", "cache-control", "last-event-id", "origin"];

/// Response headers a CORS decision adds.
pub type CorsHeaders = Vec<(&'static str, String)>;

impl Cors {
    /// The policy for `origins` (empty: CORS off, no header is ever added).
    pub fn new(origins: &[String]) -> Result<Cors, String> {
        let mut c = Cors::default();
        for origin in origins {
            validate_origin(origin)?;
            let origin = origin.to_ascii_lowercase();
            if origin == "*" {
                c.all = true;
            } else if let Some((p, s)) = origin.split_once('*') {
                c.wildcards.push((p.to_owned(), s.to_owned()));
            } else {
                c.exact.push(origin);
            }
        }
        Ok(c)
    }

    /// Whether any origin is configured.
    pub fn enabled(&self) -> bool {
        self.all || !self.exact.is_empty() || !self.wildcards.is_empty()
    }

    fn allows(&self, origin: &str) -> bool {
        let origin = origin.to_ascii_lowercase();
        self.all
            || self.exact.contains(&origin)
            || self.wildcards.iter().any(|(p, s)| {
                origin.len() >= p.len() + s.len() && origin.starts_with(p) && origin.ends_with(s)
            })
    }

    fn allow_origin(&self, origin: &str) -> String {
        if self.all {
            "*".to_owned()
        } else {
            origin.to_owned()
        }
    }

    /// Whether a request is a preflight: `OPTIONS` with `Access-Control-Request-Method`.
    pub fn is_preflight(method: &str, request_method: Option<&str>) -> bool {
        method.eq_ignore_ascii_case("OPTIONS") && request_method.is_some_and(|m| !m.is_empty())
    }

    /// The headers answering a preflight (with status 204). Nothing but `Vary` when the
    /// origin, the method or one of the headers is not allowed: the browser then refuses
    /// the request.
    pub fn preflight(
        &self,
        origin: Option<&str>,
        request_method: Option<&str>,
        request_headers: Option<&str>,
    ) -> CorsHeaders {
        let mut out = vec![(
            "vary",
            "Origin, Access-Control-Request-Method, Access-Control-Request-Headers".to_owned(),
        )];
        let Some(origin) = origin.filter(|o| !o.is_empty()) else {
            return out;
        };
        let method = request_method.unwrap_or("").to_ascii_uppercase();
        if !self.allows(origin) || !ALLOWED_METHODS.contains(&method.as_str()) {
            return out;
        }
        let requested = request_headers.unwrap_or("");
        let headers_ok = requested
            .split(',')
            .map(|h| h.trim())
            .filter(|h| !h.is_empty())
            .all(|h| ALLOWED_HEADERS.iter().any(|a| a.eq_ignore_ascii_case(h)));
        if !headers_ok {
            return out;
        }
        out.push(("access-control-allow-origin", self.allow_origin(origin)));
        out.push(("access-control-allow-methods", method));
        if !requested.trim().is_empty() {
            out.push(("access-control-allow-headers", requested.to_owned()));
        }
        out.push(("access-control-allow-credentials", "true".to_owned()));
        out
    }

    /// The headers an actual (non-preflight) response carries.
    pub fn actual(&self, method: &str, origin: Option<&str>) -> CorsHeaders {
        let mut out = vec![("vary", "Origin".to_owned())];
        let Some(origin) = origin.filter(|o| !o.is_empty()) else {
            return out;
        };
        if self.allows(origin) && ALLOWED_METHODS.contains(&method.to_ascii_uppercase().as_str()) {
            out.push(("access-control-allow-origin", self.allow_origin(origin)));
            out.push(("access-control-allow-credentials", "true".to_owned()));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get<'a>(h: &'a CorsHeaders, name: &str) -> Option<&'a str> {
        h.iter().find(|(n, _)| *n == name).map(|(_, v)| v.as_str())
    }

    #[test]
    fn preflight_for_an_allowed_origin() {
        let c = Cors::new(&["https://app.example.com".into()]).unwrap();
        let h = c.preflight(
            Some("https://app.example.com"),
            Some("GET"),
            Some("last-event-id, authorization"),
        );
        assert_eq!(
            get(&h, "access-control-allow-origin"),
            Some("https://app.example.com")
        );
        assert_eq!(get(&h, "access-control-allow-methods"), Some("GET"));
        assert_eq!(
            get(&h, "access-control-allow-headers"),
            Some("last-event-id, authorization")
        );
        assert_eq!(get(&h, "access-control-allow-credentials"), Some("true"));
    }

    #[test]
    fn preflight_refusals_carry_no_allow_header() {
        let c = Cors::new(&["https://app.example.com".into()]).unwrap();
        for (origin, method, headers) in [
            (Some("https://evil.example"), Some("GET"), None),
            (Some("https://app.example.com"), Some("DELETE"), None),
            (
                Some("https://app.example.com"),
                Some("GET"),
                Some("x-custom"),
            ),
            (None, Some("GET"), None),
        ] {
            let h = c.preflight(origin, method, headers);
            assert_eq!(
                get(&h, "access-control-allow-origin"),
                None,
                "{origin:?} {method:?}"
            );
            assert!(get(&h, "vary").is_some());
        }
    }

    #[test]
    fn actual_and_wildcards() {
        let c = Cors::new(&["https://*.example.com".into()]).unwrap();
        let h = c.actual("GET", Some("https://a.example.com"));
        assert_eq!(
            get(&h, "access-control-allow-origin"),
            Some("https://a.example.com")
        );
        assert_eq!(
            get(
                &c.actual("GET", Some("https://x.org")),
                "access-control-allow-origin"
            ),
            None
        );
        let any = Cors::new(&["*".into()]).unwrap();
        assert_eq!(
            get(
                &any.actual("POST", Some("https://x.org")),
                "access-control-allow-origin"
            ),
            Some("*")
        );
        assert!(!Cors::new(&[]).unwrap().enabled());
        assert!(Cors::new(&["not an origin".into()]).is_err());
        assert!(Cors::is_preflight("OPTIONS", Some("GET")));
        assert!(!Cors::is_preflight("OPTIONS", None));
    }
}
