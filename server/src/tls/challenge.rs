//! Answers to the CA's validation requests while an order is open: the key authorization
//! of an HTTP-01 token (`GET /.well-known/acme-challenge/{token}` on the plain listener)
//! and the self-signed certificate of a TLS-ALPN-01 handshake (RFC 8737: ALPN
//! `acme-tls/1`, the name in SNI, the key authorization's digest in a critical
//! `acmeIdentifier` extension).
//!
//! Each answer is kept in memory and in `<data-dir>/certs/challenges/`, so a process that
//! shares the data directory answers for the one that orders: behind a load balancer the
//! CA's request may reach either. The file is read only for requests on the challenge
//! path or with the `acme-tls/1` protocol, never for ordinary traffic.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

use rustls::sign::CertifiedKey;

use super::store;

/// The path prefix of HTTP-01 requests (RFC 8555 §8.3).
pub const HTTP01_PATH_PREFIX: &str = "/.well-known/acme-challenge/";

/// The ALPN protocol of TLS-ALPN-01 validation handshakes (RFC 8737 §6.2). A connection
/// that negotiated it carries no HTTP: the front end closes it after the handshake.
pub const ACME_TLS_ALPN: &[u8] = b"acme-tls/1";

/// The open challenges' answers; shared by the ACME client (which sets and clears them),
/// the TLS resolver and the plain listener's challenge route.
#[derive(Debug)]
pub struct Challenges {
    /// HTTP-01: token → key authorization.
    http01: RwLock<HashMap<String, String>>,
    /// TLS-ALPN-01: name → key authorization.
    tls_alpn01: RwLock<HashMap<String, String>>,
    /// Validation certificates made so far, by (name, key authorization): made once per
    /// challenge, whichever process set it.
    alpn_certs: Mutex<HashMap<(String, String), Arc<CertifiedKey>>>,
    /// `<data-dir>/certs/challenges`, when shared with other processes.
    shared: Option<PathBuf>,
}

impl Challenges {
    /// Answers kept in this process only.
    pub fn in_memory() -> Challenges {
        Challenges {
            http01: RwLock::default(),
            tls_alpn01: RwLock::default(),
            alpn_certs: Mutex::default(),
            shared: None,
        }
    }

    /// Answers shared through `<data_dir>/certs/challenges/` with every process using
    /// that data directory (each looks there for what it does not hold itself).
    pub fn shared(data_dir: &Path) -> Challenges {
        Challenges {
            shared: Some(data_dir.join("certs").join("challenges")),
            ..Challenges::in_memory()
        }
    }

    /// The body of the answer to `GET {HTTP01_PATH_PREFIX}{token}`: the key
    /// authorization, or `None` (404) for a token no order here has open. This is what
    /// the plain listener's route calls.
    pub fn http01_answer(&self, token: &str) -> Option<String> {
        if !is_token(token) {
            return None;
        }
        if let Some(answer) = read(&self.http01).get(token) {
            return Some(answer.clone());
        }
        let path = self.shared.as_ref()?.join("http-01").join(token);
        std::fs::read_to_string(path).ok()
    }

    /// [`Challenges::http01_answer`] for a request path: `None` unless the path is under
    /// [`HTTP01_PATH_PREFIX`].
    pub fn http01_answer_for_path(&self, path: &str) -> Option<String> {
        self.http01_answer(path.strip_prefix(HTTP01_PATH_PREFIX)?)
    }

    /// The validation certificate for a TLS-ALPN-01 handshake naming `name` in SNI.
    pub(crate) fn tls_alpn01_certificate(&self, name: &str) -> Option<Arc<CertifiedKey>> {
        let name = name.to_ascii_lowercase();
        if !super::is_domain_name(&name) {
            return None;
        }
        let key_authorization = match read(&self.tls_alpn01).get(&name) {
            Some(k) => k.clone(),
            None => {
                let path = self.shared.as_ref()?.join("tls-alpn-01").join(&name);
                std::fs::read_to_string(path).ok()?
            }
        };
        let mut certs = self.alpn_certs.lock().unwrap_or_else(|e| e.into_inner());
        let entry = (name, key_authorization);
        if let Some(cert) = certs.get(&entry) {
            return Some(cert.clone());
        }
        // A new challenge for the name ends its earlier ones (a process that only reads
        // the shared directory has no guard that would drop them).
        certs.retain(|(name, _), _| name != &entry.0);
        match validation_certificate(&entry.0, &entry.1) {
            Ok(cert) => {
                certs.insert(entry, cert.clone());
                Some(cert)
            }
            Err(e) => {
                tracing::warn!(name = %entry.0, "cannot make the TLS-ALPN-01 certificate: {e}");
                None
            }
        }
    }

    /// Opens an HTTP-01 answer until the returned guard drops.
    pub(crate) fn set_http01(
        self: &Arc<Self>,
        token: &str,
        key_authorization: &str,
    ) -> Result<ChallengeGuard, String> {
        if !is_token(token) {
            return Err(format!("the CA sent an invalid HTTP-01 token {token:?}"));
        }
        let file = self.share("http-01", token, key_authorization)?;
        write(&self.http01).insert(token.into(), key_authorization.into());
        Ok(ChallengeGuard {
            challenges: self.clone(),
            kind: Kind::Http01,
            key: token.into(),
            file,
        })
    }

    /// Opens a TLS-ALPN-01 answer for `name` until the returned guard drops.
    pub(crate) fn set_tls_alpn01(
        self: &Arc<Self>,
        name: &str,
        key_authorization: &str,
    ) -> Result<ChallengeGuard, String> {
        // Made now, so a problem shows up as this order's error, not as a failed
        // handshake the CA reports vaguely.
        validation_certificate(name, key_authorization)?;
        let file = self.share("tls-alpn-01", name, key_authorization)?;
        write(&self.tls_alpn01).insert(name.into(), key_authorization.into());
        Ok(ChallengeGuard {
            challenges: self.clone(),
            kind: Kind::TlsAlpn01,
            key: name.into(),
            file,
        })
    }

    /// Writes the answer where other processes look, when shared.
    fn share(&self, kind: &str, key: &str, value: &str) -> Result<Option<PathBuf>, String> {
        let Some(dir) = &self.shared else {
            return Ok(None);
        };
        let dir = dir.join(kind);
        let path = dir.join(key);
        store::create_private_dir(&dir)
            .and_then(|()| store::write_atomic(&path, value.as_bytes()))
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        Ok(Some(path))
    }
}

#[derive(Debug, Clone, Copy)]
enum Kind {
    Http01,
    TlsAlpn01,
}

/// Keeps one challenge answer open; dropping it withdraws the answer (memory and file).
pub(crate) struct ChallengeGuard {
    challenges: Arc<Challenges>,
    kind: Kind,
    key: String,
    file: Option<PathBuf>,
}

impl Drop for ChallengeGuard {
    fn drop(&mut self) {
        match self.kind {
            Kind::Http01 => {
                write(&self.challenges.http01).remove(&self.key);
            }
            Kind::TlsAlpn01 => {
                write(&self.challenges.tls_alpn01).remove(&self.key);
                let mut certs = self
                    .challenges
                    .alpn_certs
                    .lock()
                    .unwrap_or_else(|e| e.into_inner());
                certs.retain(|(name, _), _| name != &self.key);
            }
        }
        if let Some(file) = &self.file {
            let _ = store::remove_if_present(file);
        }
    }
}

/// The RFC 8737 §3 certificate: self-signed, for `name` only, with the SHA-256 digest of
/// the key authorization in a critical `id-pe-acmeIdentifier` extension.
fn validation_certificate(
    name: &str,
    key_authorization: &str,
) -> Result<Arc<CertifiedKey>, String> {
    let digest = ring::digest::digest(&ring::digest::SHA256, key_authorization.as_bytes());
    let mut params =
        rcgen::CertificateParams::new(vec![name.to_owned()]).map_err(|e| e.to_string())?;
    params.custom_extensions = vec![rcgen::CustomExtension::new_acme_identifier(digest.as_ref())];
    let key = rcgen::KeyPair::generate().map_err(|e| e.to_string())?;
    let cert = params.self_signed(&key).map_err(|e| e.to_string())?;
    let key_der = rustls::pki_types::PrivatePkcs8KeyDer::from(key.serialize_der());
    let provider = rustls::crypto::ring::default_provider();
    // Not `CertifiedKey::from_der`: its key check parses the certificate with webpki,
    // which refuses the critical acmeIdentifier extension. The key is ours, just made.
    let signing_key = provider
        .key_provider
        .load_private_key(key_der.into())
        .map_err(|e| e.to_string())?;
    Ok(Arc::new(CertifiedKey::new(
        vec![cert.der().clone()],
        signing_key,
    )))
}

/// An ACME token is base64url (RFC 8555 §8.3): anything else is no token of ours, and
/// never becomes a file name.
fn is_token(token: &str) -> bool {
    !token.is_empty()
        && token.len() <= 256
        && token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|e| e.into_inner())
}

fn write<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http01_answers_only_open_tokens_and_only_on_the_challenge_path() {
        let challenges = Arc::new(Challenges::in_memory());
        let guard = challenges.set_http01("tok_en-1", "tok_en-1.thumb").unwrap();
        assert_eq!(
            challenges
                .http01_answer_for_path("/.well-known/acme-challenge/tok_en-1")
                .as_deref(),
            Some("tok_en-1.thumb")
        );
        assert_eq!(challenges.http01_answer_for_path("/tok_en-1"), None);
        assert_eq!(challenges.http01_answer("../tok_en-1"), None);
        assert!(challenges.set_http01("../etc", "x").is_err());
        drop(guard);
        assert_eq!(challenges.http01_answer("tok_en-1"), None);
    }

    #[test]
    fn another_process_answers_through_the_data_directory() {
        let dir = tempfile::tempdir().unwrap();
        store::create_private_dir(&dir.path().join("certs/challenges")).unwrap();
        let ordering = Arc::new(Challenges::shared(dir.path()));
        let other = Challenges::shared(dir.path());
        let http = ordering.set_http01("abc", "abc.thumb").unwrap();
        let alpn = ordering
            .set_tls_alpn01("shop.example.com", "xyz.thumb")
            .unwrap();
        assert_eq!(other.http01_answer("abc").as_deref(), Some("abc.thumb"));
        let cert = other.tls_alpn01_certificate("shop.example.com").unwrap();
        let leaf = super::super::certs::parse_leaf(&cert.cert[0]).unwrap();
        assert_eq!(leaf.names, ["shop.example.com"]);
        drop((http, alpn));
        assert_eq!(other.http01_answer("abc"), None);
        // The other process's cache of the certificate is keyed by the key
        // authorization it read, which is gone now.
        assert!(Challenges::shared(dir.path())
            .tls_alpn01_certificate("shop.example.com")
            .is_none());
    }
}
