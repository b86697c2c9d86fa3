//! Certificates as rustls serves them and as renewal sees them: a PEM chain and key made
//! into a [`CertifiedKey`] (refused when the key does not match the leaf), and the facts
//! of the leaf that decide renewal (names, validity, serial).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::sign::CertifiedKey;

/// What renewal needs to know of a leaf certificate.
#[derive(Debug, Clone)]
pub(crate) struct Leaf {
    /// The DNS names of its subjectAltName, lowercase.
    pub(crate) names: Vec<String>,
    pub(crate) not_before: SystemTime,
    pub(crate) not_after: SystemTime,
    /// The serial number in hex, as logs and `openssl x509 -serial` show it.
    pub(crate) serial: String,
    /// The leaf itself, DER (the ARI certificate identifier is derived from it).
    pub(crate) der: CertificateDer<'static>,
}

impl Leaf {
    /// The whole validity period.
    pub(crate) fn lifetime(&self) -> Duration {
        self.not_after
            .duration_since(self.not_before)
            .unwrap_or_default()
    }

    /// Whether the certificate names `name` itself, or a wildcard covering it.
    pub(crate) fn covers(&self, name: &str) -> bool {
        self.names.iter().any(|n| name_matches(n, name))
    }
}

/// A certificate chain and its key ready to serve, with its leaf's facts.
#[derive(Debug, Clone)]
pub(crate) struct Loaded {
    pub(crate) key: Arc<CertifiedKey>,
    pub(crate) leaf: Leaf,
}

/// Parses a PEM chain (leaf first) and a PEM private key into a [`Loaded`]; refuses an
/// empty chain, a missing or unsupported key, and a key that is not the leaf's.
pub(crate) fn load_pem(chain_pem: &[u8], key_pem: &[u8]) -> Result<Loaded, String> {
    let chain = rustls_pemfile::certs(&mut &chain_pem[..])
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("invalid certificate PEM: {e}"))?;
    let Some(first) = chain.first() else {
        return Err("no certificate in the PEM chain".into());
    };
    let leaf = parse_leaf(first)?;
    let key: PrivateKeyDer<'static> = rustls_pemfile::private_key(&mut &key_pem[..])
        .map_err(|e| format!("invalid key PEM: {e}"))?
        .ok_or("no private key in the key PEM")?;
    let provider = rustls::crypto::ring::default_provider();
    let certified = CertifiedKey::from_der(chain, key, &provider)
        .map_err(|e| format!("certificate and key do not match: {e}"))?;
    Ok(Loaded {
        key: Arc::new(certified),
        leaf,
    })
}

/// [`load_pem`] over two files (`--tls-cert`, `--tls-key`).
pub(crate) fn load_files(cert_path: &Path, key_path: &Path) -> Result<Loaded, String> {
    let read = |p: &Path| std::fs::read(p).map_err(|e| format!("cannot read {}: {e}", p.display()));
    load_pem(&read(cert_path)?, &read(key_path)?)
        .map_err(|e| format!("{} / {}: {e}", cert_path.display(), key_path.display()))
}

/// The facts of one DER certificate.
pub(crate) fn parse_leaf(der: &CertificateDer<'_>) -> Result<Leaf, String> {
    let (_, cert) = x509_parser::parse_x509_certificate(der.as_ref())
        .map_err(|e| format!("cannot parse certificate: {e}"))?;
    let time = |t: &x509_parser::time::ASN1Time| {
        let secs = t.timestamp();
        if secs >= 0 {
            UNIX_EPOCH + Duration::from_secs(secs.unsigned_abs())
        } else {
            UNIX_EPOCH - Duration::from_secs(secs.unsigned_abs())
        }
    };
    let validity = cert.validity();
    let mut names = Vec::new();
    if let Ok(Some(san)) = cert.subject_alternative_name() {
        for general in &san.value.general_names {
            if let x509_parser::extensions::GeneralName::DNSName(n) = general {
                names.push(n.to_ascii_lowercase());
            }
        }
    }
    Ok(Leaf {
        names,
        not_before: time(&validity.not_before),
        not_after: time(&validity.not_after),
        serial: cert
            .raw_serial()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect(),
        der: der.clone().into_owned(),
    })
}

/// Whether a certificate name (`shop.example.com`, `*.example.com`) covers a host name:
/// a wildcard stands for exactly one leftmost label (RFC 6125 §6.4.3).
pub(crate) fn name_matches(cert_name: &str, host: &str) -> bool {
    match cert_name.strip_prefix("*.") {
        Some(suffix) => host
            .split_once('.')
            .is_some_and(|(label, rest)| !label.is_empty() && rest.eq_ignore_ascii_case(suffix)),
        None => cert_name.eq_ignore_ascii_case(host),
    }
}

/// Seconds since the Unix epoch (stored metadata is in these units).
pub(crate) fn unix_secs(t: SystemTime) -> i64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        Err(e) => -i64::try_from(e.duration().as_secs()).unwrap_or(i64::MAX),
    }
}

/// The inverse of [`unix_secs`].
pub(crate) fn from_unix_secs(secs: i64) -> SystemTime {
    if secs >= 0 {
        UNIX_EPOCH + Duration::from_secs(secs.unsigned_abs())
    } else {
        UNIX_EPOCH - Duration::from_secs(secs.unsigned_abs())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards_cover_one_label() {
        assert!(name_matches("*.example.com", "shop.example.com"));
        assert!(name_matches("*.example.com", "SHOP.Example.com"));
        assert!(!name_matches("*.example.com", "example.com"));
        assert!(!name_matches("*.example.com", "a.b.example.com"));
        assert!(name_matches("shop.example.com", "Shop.example.com"));
        assert!(!name_matches("shop.example.com", "other.example.com"));
    }

    #[test]
    fn a_key_of_another_certificate_is_refused() {
        let a = rcgen::generate_simple_self_signed(vec!["a.example.com".into()]).unwrap();
        let b = rcgen::generate_simple_self_signed(vec!["b.example.com".into()]).unwrap();
        let ok = load_pem(
            a.cert.pem().as_bytes(),
            a.signing_key.serialize_pem().as_bytes(),
        )
        .unwrap();
        assert_eq!(ok.leaf.names, ["a.example.com"]);
        assert!(ok.leaf.not_after > ok.leaf.not_before);
        let err = load_pem(
            a.cert.pem().as_bytes(),
            b.signing_key.serialize_pem().as_bytes(),
        )
        .unwrap_err();
        assert!(err.contains("do not match"), "{err}");
    }
}
