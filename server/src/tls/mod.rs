//! TLS: the rustls server configuration, which certificate each handshake gets, and
//! automatic HTTPS (certificates obtained and renewed from an ACME CA). This room knows
//! neither hyper nor PHP; the server mounts it:
//!
//! - [`CertManager::new`] loads what the data directory holds; [`CertManager::resolver`]
//!   goes into [`server_config`] for the HTTPS listener; [`CertManager::run`] is the
//!   renewal task to spawn; [`CertManager::snapshot`] feeds `/metrics`.
//! - The plain listener answers `GET /.well-known/acme-challenge/{token}` with
//!   [`Challenges::http01_answer_for_path`] (from [`CertManager::challenges`]) and every
//!   other request with a [`REDIRECT_STATUS`] to [`https_redirect`]; a TLS connection that
//!   negotiated [`ACME_TLS_ALPN`] is closed after its handshake.
//! - With static certificates only, [`static_server_config`].
//!
//! The protocol floor and the suites are rustls's and stay that way on purpose: rustls
//! implements neither TLS 1.0/1.1 nor SSLv3, and its TLS 1.2 suites are all ECDHE key
//! exchange with AEAD ciphers (AES-GCM, ChaCha20-Poly1305): no CBC, RC4, 3DES, static RSA
//! key exchange or export suites exist to be turned on. `server/tests/security_defaults.rs`
//! checks this against an OpenSSL client offering the old versions and suites.

mod acme;
mod certs;
mod challenge;
mod manager;
mod redirect;
mod resolver;
mod schedule;
mod stats;
mod store;

use std::path::Path;
use std::sync::Arc;

pub use acme::{CaSettings, ChallengeTypes, ExternalAccount};
pub use challenge::{Challenges, ACME_TLS_ALPN, HTTP01_PATH_PREFIX};
pub use manager::{AcmeConfig, CertManager, Timing, LETS_ENCRYPT_DIRECTORY};
pub use redirect::{https_redirect, REDIRECT_STATUS};
pub use resolver::CertResolver;
pub use stats::{
    AcmeSnapshot, CertificateStatus, EXPIRY_METRIC, FAILURES_METRIC, ORDERS_METRIC, RENEWALS_METRIC,
};

/// The HTTPS listener's rustls configuration for one certificate chain and key
/// (`--tls-cert`, `--tls-key`), offering HTTP/2 and HTTP/1.1.
pub(crate) fn static_server_config(
    cert_path: &Path,
    key_path: &Path,
) -> Result<Arc<rustls::ServerConfig>, String> {
    let loaded = certs::load_files(cert_path, key_path)?;
    let mut config = config_builder()?
        .with_no_client_auth()
        .with_cert_resolver(Arc::new(rustls::sign::SingleCertAndKey::from(loaded.key)));
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// The HTTPS listener's rustls configuration over a [`CertResolver`]: HTTP/2 and
/// HTTP/1.1, plus `acme-tls/1` for the CA's TLS-ALPN-01 handshakes (which only a CA
/// offers, and alone).
pub fn server_config(resolver: Arc<CertResolver>) -> Result<Arc<rustls::ServerConfig>, String> {
    let mut config = config_builder()?
        .with_no_client_auth()
        .with_cert_resolver(resolver);
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec(), ACME_TLS_ALPN.to_vec()];
    Ok(Arc::new(config))
}

/// TLS 1.3 and 1.2 with ring, named rather than "safe defaults" so a rustls upgrade
/// cannot widen the set silently.
fn config_builder(
) -> Result<rustls::ConfigBuilder<rustls::ServerConfig, rustls::WantsVerifier>, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .map_err(|e| e.to_string())
}

/// Makes ring the process's rustls provider, for the ACME client's HTTPS (which asks
/// rustls for the process default); harmless when one is installed already.
fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// Whether `name` is a DNS name an ACME CA can validate with HTTP-01 or TLS-ALPN-01, and
/// safe as a file name: lowercase LDH labels of 1 to 63 characters, at least two, no
/// wildcard (that takes DNS-01), 253 characters at most.
pub(crate) fn is_domain_name(name: &str) -> bool {
    let labels: Vec<&str> = name.split('.').collect();
    name.len() <= 253
        && labels.len() >= 2
        && labels.iter().all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        })
        // An IP address is no DNS name (and needs an IP identifier).
        && name.parse::<std::net::IpAddr>().is_err()
}

#[cfg(test)]
mod tests {
    use super::is_domain_name;

    #[test]
    fn domain_names_are_checked_before_they_become_paths() {
        for ok in ["shop.example.com", "a-b.example", "xn--bcher-kva.example"] {
            assert!(is_domain_name(ok), "{ok}");
        }
        for bad in [
            "localhost",
            "*.example.com",
            "Shop.example.com",
            "../example.com",
            "a..b",
            "-a.example",
            "127.0.0.1",
            "",
            "a/b.example",
        ] {
            assert!(!is_domain_name(bad), "{bad}");
        }
    }
}
