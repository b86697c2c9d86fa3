//! TLS with rustls: loads a PEM certificate chain and key, offers HTTP/2 and HTTP/1.1
//! over ALPN, TLS 1.2 and 1.3 only.
//!
//! The protocol floor and the suites are rustls's and stay that way on purpose: rustls
//! implements neither TLS 1.0/1.1 nor SSLv3, and its TLS 1.2 suites are all ECDHE key
//! exchange with AEAD ciphers (AES-GCM, ChaCha20-Poly1305): no CBC, RC4, 3DES, static RSA
//! key exchange or export suites exist to be turned on. `server/tests/security_defaults.rs`
//! checks this against an OpenSSL client offering the old versions and suites.

use std::path::Path;
use std::sync::Arc;

use tokio_rustls::TlsAcceptor;

pub(crate) fn acceptor(cert_path: &Path, key_path: &Path) -> Result<TlsAcceptor, String> {
    let read = |p: &Path| std::fs::read(p).map_err(|e| format!("cannot read {}: {e}", p.display()));
    let cert_pem = read(cert_path)?;
    let key_pem = read(key_path)?;
    let certs = rustls_pemfile::certs(&mut cert_pem.as_slice())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("invalid certificate {}: {e}", cert_path.display()))?;
    if certs.is_empty() {
        return Err(format!("no certificate in {}", cert_path.display()));
    }
    let key = rustls_pemfile::private_key(&mut key_pem.as_slice())
        .map_err(|e| format!("invalid key {}: {e}", key_path.display()))?
        .ok_or_else(|| format!("no private key in {}", key_path.display()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    // Named rather than "safe defaults" so a rustls upgrade cannot widen the set silently.
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| format!("certificate and key do not match: {e}"))?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}
