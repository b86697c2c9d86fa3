//! The ACME client side, over `instant-acme` (RFC 8555 and RFC 9773): the account
//! (created once under a lock and kept in the data directory), one order per name with
//! the challenge the CA offers and the listeners allow, the key and CSR (rcgen, ECDSA
//! P-256), and renewal information. Errors come back as a [`Failure`] whose reason is a
//! short, bounded label for the failures counter.
//!
//! instant-acme speaks the protocol and nothing more: storage, locking, scheduling and
//! the answers to challenges stay ours (the other candidate, rustls-acme, brings its own
//! acceptor, cache and renewal policy, which would leave us no say in any of them).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use instant_acme::{
    Account, AccountBuilder, AccountCredentials, AuthorizationStatus, CertificateIdentifier,
    ChallengeType, ExternalAccountKey, Identifier, NewAccount, NewOrder, OrderStatus, RetryPolicy,
};

use super::certs::{self, Leaf};
use super::challenge::{ChallengeGuard, Challenges};
use super::store::{self, FileLock, Store};

/// How the CA is reached and who the account is.
#[derive(Debug, Clone)]
pub struct CaSettings {
    /// The ACME directory URL (`https://`).
    pub directory_url: String,
    /// A PEM certificate to trust for the directory's HTTPS instead of the system's roots
    /// (a private or test CA).
    pub ca_root: Option<PathBuf>,
    /// Contact URIs for the account (`mailto:ops@example.com`).
    pub contact: Vec<String>,
    /// External Account Binding, where the CA asks for it (ZeroSSL, many private CAs).
    pub external_account: Option<ExternalAccount>,
}

/// An External Account Binding's key id and MAC key (RFC 8555 §7.3.4).
#[derive(Clone)]
pub struct ExternalAccount {
    /// The key id the CA gave.
    pub key_id: String,
    /// The raw HMAC key (the CA shows it base64url-encoded).
    pub hmac_key: Vec<u8>,
}

impl std::fmt::Debug for ExternalAccount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key is a secret: never in logs.
        f.debug_struct("ExternalAccount")
            .field("key_id", &self.key_id)
            .finish_non_exhaustive()
    }
}

/// A failed step, with the label it is counted under.
#[derive(Debug, Clone)]
pub(crate) struct Failure {
    pub(crate) reason: &'static str,
    pub(crate) message: String,
}

impl Failure {
    pub(crate) fn new(reason: &'static str, message: impl Into<String>) -> Failure {
        Failure {
            reason,
            message: message.into(),
        }
    }

    fn acme(context: &str, e: instant_acme::Error) -> Failure {
        let reason = match &e {
            instant_acme::Error::Api(problem) => problem_reason(problem.r#type.as_deref()),
            instant_acme::Error::Timeout(_) => "timeout",
            instant_acme::Error::Json(_) => "ca_response",
            instant_acme::Error::Unsupported(_) => "unsupported",
            instant_acme::Error::Crypto | instant_acme::Error::KeyRejected => "internal",
            _ => "ca_unreachable",
        };
        Failure::new(reason, format!("{context}: {}", error_chain(&e)))
    }
}

/// An error and its sources on one line ("connection refused" hides at the bottom).
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let more = s.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = s.source();
    }
    text
}

/// The label of an ACME problem type: the RFC 8555 §6.7 (and RFC 9773) names as they are,
/// anything else as `acme_other`, so the counter's label set stays bounded.
fn problem_reason(problem_type: Option<&str>) -> &'static str {
    const KNOWN: &[&str] = &[
        "accountDoesNotExist",
        "alreadyRevoked",
        "badCSR",
        "badNonce",
        "badPublicKey",
        "badRevocationReason",
        "badSignatureAlgorithm",
        "caa",
        "compound",
        "connection",
        "dns",
        "externalAccountRequired",
        "incorrectResponse",
        "invalidContact",
        "malformed",
        "orderNotReady",
        "rateLimited",
        "rejectedIdentifier",
        "serverInternal",
        "tls",
        "unauthorized",
        "unsupportedContact",
        "unsupportedIdentifier",
        "userActionRequired",
        "alreadyReplaced",
    ];
    let name = problem_type
        .and_then(|t| t.strip_prefix("urn:ietf:params:acme:error:"))
        .unwrap_or("");
    KNOWN
        .iter()
        .find(|k| **k == name)
        .copied()
        .unwrap_or("acme_other")
}

/// Which challenge types may be used, in order of preference.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChallengeTypes {
    /// HTTP-01: the plain listener answers `/.well-known/acme-challenge/` (the CA
    /// connects to port 80).
    pub http01: bool,
    /// TLS-ALPN-01: the HTTPS listener answers `acme-tls/1` handshakes (the CA connects
    /// to port 443).
    pub tls_alpn01: bool,
}

impl ChallengeTypes {
    /// The usable types for attempt `attempt` (0 first): TLS-ALPN-01 first, as it needs
    /// only the HTTPS listener; each retry after a failure starts with the next type, so
    /// one blocked port does not fail every attempt.
    fn preference(self, attempt: u32) -> Vec<ChallengeType> {
        let mut types = Vec::new();
        if self.tls_alpn01 {
            types.push(ChallengeType::TlsAlpn01);
        }
        if self.http01 {
            types.push(ChallengeType::Http01);
        }
        if !types.is_empty() {
            let n = types.len();
            types.rotate_left(attempt as usize % n);
        }
        types
    }
}

/// A certificate just issued: PEM chain (leaf first) and PEM private key.
pub(crate) struct Issued {
    pub(crate) chain_pem: String,
    pub(crate) key_pem: String,
    pub(crate) challenge: &'static str,
}

/// The CA's renewal window for a certificate, and when to ask again.
pub(crate) struct RenewalInfo {
    pub(crate) start: SystemTime,
    pub(crate) end: SystemTime,
    pub(crate) retry_after: Duration,
}

/// One CA, one account, the store it lives in and the challenge answers it sets.
pub(crate) struct AcmeClient {
    settings: CaSettings,
    store: Store,
    challenges: Arc<Challenges>,
    /// The account once loaded or created; dropped when the CA no longer knows it.
    account: tokio::sync::Mutex<Option<Account>>,
    /// Bounds every exchange with the CA, polling included.
    timeout: Duration,
}

impl AcmeClient {
    pub(crate) fn new(
        settings: CaSettings,
        store: Store,
        challenges: Arc<Challenges>,
        timeout: Duration,
    ) -> AcmeClient {
        AcmeClient {
            settings,
            store,
            challenges,
            account: tokio::sync::Mutex::new(None),
            timeout,
        }
    }

    fn builder(&self) -> Result<AccountBuilder, Failure> {
        let built = match &self.settings.ca_root {
            Some(root) => Account::builder_with_root(root),
            None => Account::builder(),
        };
        built.map_err(|e| Failure::new("internal", format!("ACME HTTP client: {e}")))
    }

    /// The account: the one in memory, else the stored one, else a new one (created and
    /// stored under the account lock, so processes sharing the directory share one).
    async fn account(&self) -> Result<Account, Failure> {
        let mut cached = self.account.lock().await;
        if let Some(account) = cached.as_ref() {
            return Ok(account.clone());
        }
        let lock_path = self.store.account_lock();
        let _lock = lock(lock_path).await?;
        let file = self.store.account_file();
        let account = match std::fs::read(&file) {
            Ok(json) => {
                let credentials: AccountCredentials = serde_json::from_slice(&json)
                    .map_err(|e| Failure::new("storage", format!("{}: {e}", file.display())))?;
                self.builder()?
                    .from_credentials(credentials)
                    .await
                    .map_err(|e| Failure::acme("loading the ACME account", e))?
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let contact: Vec<&str> = self.settings.contact.iter().map(String::as_str).collect();
                let eab = self
                    .settings
                    .external_account
                    .as_ref()
                    .map(|e| ExternalAccountKey::new(e.key_id.clone(), &e.hmac_key));
                let (account, credentials) = self
                    .builder()?
                    .create(
                        &NewAccount {
                            contact: &contact,
                            terms_of_service_agreed: true,
                            only_return_existing: false,
                        },
                        self.settings.directory_url.clone(),
                        eab.as_ref(),
                    )
                    .await
                    .map_err(|e| Failure::acme("creating the ACME account", e))?;
                let json = serde_json::to_vec_pretty(&credentials)
                    .map_err(|e| Failure::new("internal", e.to_string()))?;
                store::write_atomic(&file, &json)
                    .map_err(|e| Failure::new("storage", format!("{}: {e}", file.display())))?;
                tracing::info!(account = account.id(), directory = %self.settings.directory_url, "ACME account created");
                account
            }
            Err(e) => return Err(Failure::new("storage", format!("{}: {e}", file.display()))),
        };
        *cached = Some(account.clone());
        Ok(account)
    }

    /// The CA said it does not know our account (its database was reset, or the account
    /// was deactivated): set the stored credentials aside so the next attempt makes a
    /// new account.
    async fn forget_account(&self) {
        let mut cached = self.account.lock().await;
        *cached = None;
        let file = self.store.account_file();
        let aside = file.with_extension(format!(
            "json.unknown-{}",
            certs::unix_secs(SystemTime::now())
        ));
        if std::fs::rename(&file, &aside).is_ok() {
            tracing::warn!(file = %aside.display(), "the CA does not know the stored ACME account: set aside, a new one will be created");
        }
    }

    /// Orders a certificate for `name`, answering its challenge; `attempt` rotates the
    /// challenge preference. Bounded by the client's timeout.
    pub(crate) async fn issue(
        &self,
        name: &str,
        types: ChallengeTypes,
        replaces: Option<&Leaf>,
        attempt: u32,
        on_order: impl FnOnce(),
    ) -> Result<Issued, Failure> {
        let work = self.issue_unbounded(name, types, replaces, attempt, on_order);
        let result = match tokio::time::timeout(self.timeout, work).await {
            Ok(result) => result,
            Err(_) => Err(Failure::new(
                "timeout",
                format!("no certificate within {:?}", self.timeout),
            )),
        };
        if let Err(f) = &result {
            if f.reason == "accountDoesNotExist" {
                self.forget_account().await;
            }
        }
        result
    }

    async fn issue_unbounded(
        &self,
        name: &str,
        types: ChallengeTypes,
        replaces: Option<&Leaf>,
        attempt: u32,
        on_order: impl FnOnce(),
    ) -> Result<Issued, Failure> {
        let account = self.account().await?;
        let identifiers = [Identifier::Dns(name.to_owned())];
        let replaced = replaces.and_then(|leaf| certificate_id(&leaf.der));
        let mut new_order = NewOrder::new(&identifiers);
        if let Some(id) = replaced.clone() {
            new_order = new_order.replaces(id);
        }
        let mut order = match account.new_order(&new_order).await {
            // A CA without ARI refuses `replaces` before anything is sent: order plainly.
            Err(instant_acme::Error::Unsupported(_)) if replaced.is_some() => account
                .new_order(&NewOrder::new(&identifiers))
                .await
                .map_err(|e| Failure::acme("new order", e))?,
            other => other.map_err(|e| Failure::acme("new order", e))?,
        };
        on_order();

        // The answers stay open until the order is ready (or has failed).
        let mut guards: Vec<ChallengeGuard> = Vec::new();
        let mut used = "none";
        let preference = types.preference(attempt);
        let mut authorizations = order.authorizations();
        while let Some(authz) = authorizations.next().await {
            let mut authz = authz.map_err(|e| Failure::acme("authorization", e))?;
            match authz.status {
                AuthorizationStatus::Valid => continue,
                AuthorizationStatus::Pending => {}
                status => {
                    return Err(Failure::new(
                        "challenge_failed",
                        format!("authorization for {name} is {status:?}"),
                    ))
                }
            }
            let offered: Vec<ChallengeType> =
                authz.challenges.iter().map(|c| c.r#type.clone()).collect();
            let Some(kind) = preference.iter().find(|t| offered.contains(t)).cloned() else {
                return Err(Failure::new(
                    "no_usable_challenge",
                    format!(
                        "the CA offers {offered:?} for {name}, the listeners allow {preference:?}"
                    ),
                ));
            };
            let mut challenge = authz
                .challenge(kind.clone())
                .ok_or_else(|| Failure::new("internal", "offered challenge vanished"))?;
            let key_authorization = challenge.key_authorization();
            let guard = match kind {
                ChallengeType::Http01 => {
                    used = "http-01";
                    self.challenges
                        .set_http01(&challenge.token, key_authorization.as_str())
                }
                _ => {
                    used = "tls-alpn-01";
                    self.challenges
                        .set_tls_alpn01(name, key_authorization.as_str())
                }
            }
            .map_err(|e| Failure::new("storage", e))?;
            guards.push(guard);
            challenge
                .set_ready()
                .await
                .map_err(|e| Failure::acme("challenge ready", e))?;
        }

        let polling = RetryPolicy::new()
            .initial_delay(Duration::from_millis(250))
            .backoff(1.5)
            .timeout(self.timeout);
        let status = order
            .poll_ready(&polling)
            .await
            .map_err(|e| Failure::acme("waiting for validation", e))?;
        if status != OrderStatus::Ready {
            return Err(self.challenge_failure(&mut order, name, used).await);
        }
        drop(guards);

        let key =
            rcgen::KeyPair::generate().map_err(|e| Failure::new("internal", e.to_string()))?;
        let mut params = rcgen::CertificateParams::new(vec![name.to_owned()])
            .map_err(|e| Failure::new("internal", e.to_string()))?;
        params.distinguished_name = rcgen::DistinguishedName::new();
        let csr = params
            .serialize_request(&key)
            .map_err(|e| Failure::new("internal", e.to_string()))?;
        order
            .finalize_csr(csr.der())
            .await
            .map_err(|e| Failure::acme("finalize", e))?;
        let chain_pem = order
            .poll_certificate(&polling)
            .await
            .map_err(|e| Failure::acme("certificate download", e))?;
        Ok(Issued {
            chain_pem,
            key_pem: key.serialize_pem(),
            challenge: used,
        })
    }

    /// What the CA said about the challenge of an order that turned invalid.
    async fn challenge_failure(
        &self,
        order: &mut instant_acme::Order,
        name: &str,
        used: &str,
    ) -> Failure {
        let mut details = Vec::new();
        let mut authorizations = order.authorizations();
        while let Some(Ok(mut authz)) = authorizations.next().await {
            if let Ok(state) = authz.refresh().await {
                for c in &state.challenges {
                    if let Some(problem) = &c.error {
                        details.push(format!("{:?}: {problem}", c.r#type));
                    }
                }
            }
        }
        Failure::new(
            "challenge_failed",
            format!(
                "{used} validation of {name} failed: {}",
                if details.is_empty() {
                    "the order became invalid".to_owned()
                } else {
                    details.join("; ")
                }
            ),
        )
    }

    /// The CA's renewal window for `leaf`, or `None` when the CA has no ARI.
    pub(crate) async fn renewal_info(&self, leaf: &Leaf) -> Result<Option<RenewalInfo>, Failure> {
        let Some(id) = certificate_id(&leaf.der) else {
            return Ok(None);
        };
        let work = async {
            let account = self.account().await?;
            match account.renewal_info(&id).await {
                Ok((info, retry_after)) => Ok(Some(RenewalInfo {
                    start: info.suggested_window.start.into(),
                    end: info.suggested_window.end.into(),
                    retry_after,
                })),
                Err(instant_acme::Error::Unsupported(_)) => Ok(None),
                Err(e) => Err(Failure::acme("renewal information", e)),
            }
        };
        tokio::time::timeout(self.timeout, work)
            .await
            .unwrap_or_else(|_| Err(Failure::new("timeout", "renewal information timed out")))
    }
}

/// RFC 9773 §4.1's identifier of a certificate (its issuer's key id and its serial);
/// `None` for a certificate without an Authority Key Identifier.
fn certificate_id(
    der: &rustls::pki_types::CertificateDer<'_>,
) -> Option<CertificateIdentifier<'static>> {
    CertificateIdentifier::try_from(der)
        .ok()
        .map(CertificateIdentifier::into_owned)
}

/// Waits for a lock file (another process may be ordering) and holds it.
pub(crate) async fn lock(path: PathBuf) -> Result<FileLock, Failure> {
    FileLock::wait(&path)
        .await
        .map_err(|e| Failure::new("storage", format!("lock {}: {e}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn problem_types_become_bounded_labels() {
        assert_eq!(
            problem_reason(Some("urn:ietf:params:acme:error:rateLimited")),
            "rateLimited"
        );
        assert_eq!(
            problem_reason(Some("urn:ietf:params:acme:error:somethingNew")),
            "acme_other"
        );
        assert_eq!(problem_reason(Some("about:blank")), "acme_other");
        assert_eq!(problem_reason(None), "acme_other");
    }

    #[test]
    fn each_retry_leads_with_the_next_challenge_type() {
        let both = ChallengeTypes {
            http01: true,
            tls_alpn01: true,
        };
        assert_eq!(
            both.preference(0),
            [ChallengeType::TlsAlpn01, ChallengeType::Http01]
        );
        assert_eq!(
            both.preference(1),
            [ChallengeType::Http01, ChallengeType::TlsAlpn01]
        );
        let http = ChallengeTypes {
            http01: true,
            tls_alpn01: false,
        };
        assert_eq!(http.preference(3), [ChallengeType::Http01]);
    }
}
