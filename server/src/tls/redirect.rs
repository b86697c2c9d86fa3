//! The plain listener's answer to everything but the CA's HTTP-01 requests: a permanent
//! redirect (308, which keeps the method and body, as Caddy answers) to the same host and
//! path over HTTPS.

/// The status of the redirect to HTTPS.
pub const REDIRECT_STATUS: u16 = 308;

/// The `Location` for a plain request with this `Host` and request target, when HTTPS
/// listens on `https_port`; `None` (answer 400) for a missing or malformed host, which
/// must never reach a header.
pub fn https_redirect(host: Option<&str>, path_and_query: &str, https_port: u16) -> Option<String> {
    let host = host_without_port(host?.trim())?;
    let path = if path_and_query.starts_with('/') && !path_and_query.starts_with("//") {
        path_and_query
    } else {
        "/"
    };
    if path.bytes().any(|b| b.is_ascii_control() || b == b' ') {
        return None;
    }
    Some(if https_port == 443 {
        format!("https://{host}{path}")
    } else {
        format!("https://{host}:{https_port}{path}")
    })
}

/// `shop.example.com:80` → `shop.example.com`, `[::1]:80` → `[::1]`; `None` unless what
/// is left is a DNS name, an IPv4 address or a bracketed IPv6 address.
fn host_without_port(host: &str) -> Option<&str> {
    if let Some(rest) = host.strip_prefix('[') {
        let (inside, _) = rest.split_once(']')?;
        inside.parse::<std::net::Ipv6Addr>().ok()?;
        return Some(&host[..inside.len() + 2]);
    }
    let name = host.split_once(':').map_or(host, |(name, _)| name);
    let valid = !name.is_empty()
        && name.len() <= 253
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.');
    valid.then_some(name)
}

#[cfg(test)]
mod tests {
    use super::https_redirect;

    #[test]
    fn redirects_keep_host_and_target_and_name_the_https_port() {
        assert_eq!(
            https_redirect(Some("shop.example.com"), "/cart?id=1", 443).as_deref(),
            Some("https://shop.example.com/cart?id=1")
        );
        assert_eq!(
            https_redirect(Some("shop.example.com:8080"), "/", 8443).as_deref(),
            Some("https://shop.example.com:8443/")
        );
        assert_eq!(
            https_redirect(Some("[::1]:80"), "/x", 443).as_deref(),
            Some("https://[::1]/x")
        );
        // No path of another host: `//evil.example` is a network-path reference.
        assert_eq!(
            https_redirect(Some("a.example"), "//evil.example/", 443).as_deref(),
            Some("https://a.example/")
        );
        for bad in [
            "",
            "a.example\r\nX: y",
            "user@a.example",
            "a.example/x",
            "[zz]",
        ] {
            assert_eq!(https_redirect(Some(bad), "/", 443), None, "{bad:?}");
        }
        assert_eq!(https_redirect(None, "/", 443), None);
    }
}
