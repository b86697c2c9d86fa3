//! Which certificate a TLS handshake gets: the TLS-ALPN-01 validation certificate for a
//! CA's `acme-tls/1` handshake, else by SNI a static certificate (`--tls-cert`, which
//! overrides per name), a managed one (ACME), a static wildcard, and finally the default
//! (the first static certificate, else the first managed name's).
//!
//! Managed certificates sit behind an [`ArcSwap`]: renewal publishes a new map and the
//! next handshake uses it, while connections already open keep the session they have. No
//! restart, no dropped connection; a handshake never waits for a lock.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use arc_swap::ArcSwap;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

use super::certs::{name_matches, Loaded};
use super::challenge::{Challenges, ACME_TLS_ALPN};

/// The server's certificate resolver: shared by the rustls `ServerConfig` and the
/// certificate manager, which swaps managed certificates in.
pub struct CertResolver {
    /// `--tls-cert` pairs by each DNS name of their leaf (wildcards kept as `*.x`).
    statics: Vec<(String, Arc<CertifiedKey>)>,
    /// The certificate for handshakes whose name nothing else matches (or without SNI).
    static_default: Option<Arc<CertifiedKey>>,
    /// ACME-managed certificates by name.
    managed: ArcSwap<HashMap<String, Arc<CertifiedKey>>>,
    /// The managed name whose certificate is the default when no static one is set.
    managed_default: Option<String>,
    challenges: Arc<Challenges>,
}

impl CertResolver {
    /// A resolver over static certificates (any number, each serving its leaf's names;
    /// the first is also the default) and the managed names to come; `managed_names`'
    /// first entry is the default when there is no static certificate.
    pub(crate) fn new(
        statics: &[Loaded],
        managed_names: &[String],
        challenges: Arc<Challenges>,
    ) -> CertResolver {
        let mut by_name = Vec::new();
        for loaded in statics {
            for name in &loaded.leaf.names {
                by_name.push((name.clone(), loaded.key.clone()));
            }
        }
        CertResolver {
            statics: by_name,
            static_default: statics.first().map(|l| l.key.clone()),
            managed: ArcSwap::from_pointee(HashMap::new()),
            managed_default: managed_names.first().cloned(),
            challenges,
        }
    }

    /// Serves `key` for `name` from the next handshake on.
    pub(crate) fn set_managed(&self, name: &str, key: Arc<CertifiedKey>) {
        self.managed.rcu(|current| {
            let mut next = HashMap::clone(current);
            next.insert(name.to_owned(), key.clone());
            next
        });
    }

    /// The certificate a handshake for `name` (SNI, lowercase) gets; `None` for a name
    /// nothing serves when there is no default either.
    pub fn certificate_for(&self, name: Option<&str>) -> Option<Arc<CertifiedKey>> {
        if let Some(name) = name {
            if let Some((_, key)) = self.statics.iter().find(|(n, _)| n == name) {
                return Some(key.clone());
            }
            if let Some(key) = self.managed.load().get(name) {
                return Some(key.clone());
            }
            if let Some((_, key)) = self
                .statics
                .iter()
                .find(|(n, _)| n.starts_with("*.") && name_matches(n, name))
            {
                return Some(key.clone());
            }
        }
        if let Some(key) = &self.static_default {
            return Some(key.clone());
        }
        let default = self.managed_default.as_deref()?;
        self.managed.load().get(default).cloned()
    }

    /// Whether a static certificate covers `name` (which then is never ordered).
    pub(crate) fn has_static(&self, name: &str) -> bool {
        self.statics.iter().any(|(n, _)| name_matches(n, name))
    }
}

impl ResolvesServerCert for CertResolver {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        // rustls hands SNI over lowercased and validated as a DNS name.
        let name = hello.server_name();
        let acme = hello
            .alpn()
            .is_some_and(|mut protocols| protocols.any(|p| p == ACME_TLS_ALPN));
        if acme {
            // RFC 8737 §3: only the validation certificate, never the real one.
            return self.challenges.tls_alpn01_certificate(name?);
        }
        self.certificate_for(name)
    }
}

impl fmt::Debug for CertResolver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CertResolver")
            .field(
                "statics",
                &self.statics.iter().map(|(n, _)| n).collect::<Vec<_>>(),
            )
            .field("managed", &self.managed.load().keys().collect::<Vec<_>>())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tls::certs::load_pem;

    fn self_signed(names: &[&str]) -> Loaded {
        let c = rcgen::generate_simple_self_signed(
            names.iter().map(|n| n.to_string()).collect::<Vec<_>>(),
        )
        .unwrap();
        load_pem(
            c.cert.pem().as_bytes(),
            c.signing_key.serialize_pem().as_bytes(),
        )
        .unwrap()
    }

    #[test]
    fn static_names_override_managed_ones_and_wildcards_come_last() {
        let fixed = self_signed(&["static.example.com", "*.example.com"]);
        let managed = self_signed(&["shop.example.com"]);
        let resolver = CertResolver::new(
            std::slice::from_ref(&fixed),
            &["shop.example.com".into()],
            Arc::new(Challenges::in_memory()),
        );
        let is = |name: &str, loaded: &Loaded| {
            Arc::ptr_eq(&resolver.certificate_for(Some(name)).unwrap(), &loaded.key)
        };
        // Before issuance the wildcard covers the managed name.
        assert!(is("shop.example.com", &fixed));
        resolver.set_managed("shop.example.com", managed.key.clone());
        assert!(is("shop.example.com", &managed));
        assert!(is("static.example.com", &fixed));
        assert!(is("other.example.com", &fixed));
        assert!(is("unknown.org", &fixed));
        assert!(resolver.has_static("static.example.com"));
        assert!(!resolver.has_static("example.org"));
    }

    #[test]
    fn the_first_managed_name_is_the_default_without_a_static_certificate() {
        let a = self_signed(&["a.example.com"]);
        let resolver = CertResolver::new(
            &[],
            &["a.example.com".into(), "b.example.com".into()],
            Arc::new(Challenges::in_memory()),
        );
        assert!(resolver.certificate_for(None).is_none());
        resolver.set_managed("a.example.com", a.key.clone());
        assert!(Arc::ptr_eq(
            &resolver.certificate_for(None).unwrap(),
            &a.key
        ));
        assert!(Arc::ptr_eq(
            &resolver.certificate_for(Some("b.example.com")).unwrap(),
            &a.key
        ));
    }
}
