//! The certificate manager: at start-up it loads every stored certificate into the
//! resolver (a restart orders nothing), then its renewal task orders what is missing and
//! renews what is due, one name at a time, under the name's lock file, and swaps each new
//! certificate in without a restart. A failure is logged and counted, the old
//! certificate keeps serving, and the name is tried again after a backoff.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use super::acme::{lock, AcmeClient, CaSettings, ChallengeTypes, Failure};
use super::certs::{self, Loaded};
use super::challenge::Challenges;
use super::resolver::CertResolver;
use super::schedule::{self, AriWindow, Why};
use super::stats::{AcmeSnapshot, CertificateStatus, Stats};
use super::store::Store;

/// Let's Encrypt's production directory: the CA when none is named.
pub const LETS_ENCRYPT_DIRECTORY: &str = "https://acme-v02.api.letsencrypt.org/directory";

/// Everything the manager needs, resolved from the server's configuration.
#[derive(Debug, Clone)]
pub struct AcmeConfig {
    /// The names to obtain certificates for (`--domain`), lowercase DNS names.
    pub domains: Vec<String>,
    /// The CA and the account.
    pub ca: CaSettings,
    /// `--data-dir`: certificates live under its `certs/`.
    pub data_dir: PathBuf,
    /// The challenge types the listeners can answer.
    pub challenges: ChallengeTypes,
    /// `--tls-cert`/`--tls-key` pairs served beside the managed names; a name a static
    /// certificate covers is not ordered.
    pub static_certificates: Vec<(PathBuf, PathBuf)>,
    /// Retry and timeout settings.
    pub timing: Timing,
}

/// Retry and timeout settings (defaults suit a public CA; tests shorten them).
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    /// The wait after a first failure, doubled per failure in a row.
    pub retry_base: Duration,
    /// The longest wait between attempts.
    pub retry_max: Duration,
    /// The longest one order (or renewal information request) may take.
    pub order_timeout: Duration,
    /// The longest the renewal task sleeps before looking again (a suspended machine or
    /// a changed clock is noticed within it).
    pub max_sleep: Duration,
}

impl Default for Timing {
    fn default() -> Timing {
        Timing {
            // Let's Encrypt allows 5 failed validations per name and hour: 2, 4, 8, 16,
            // 32, 60 minutes stays below.
            retry_base: Duration::from_secs(120),
            retry_max: Duration::from_secs(3600),
            order_timeout: Duration::from_secs(300),
            max_sleep: Duration::from_secs(3600),
        }
    }
}

/// What is stored beside a certificate (`meta.json`).
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Meta {
    /// The serial of the certificate this describes: metadata written for another one
    /// (a process refreshing renewal information while another stored a renewal) is
    /// not taken for this one's.
    #[serde(default)]
    serial: String,
    /// Unix seconds.
    issued_at: i64,
    /// How it was validated (`http-01`, `tls-alpn-01`, or `none` when the CA reused a
    /// valid authorization).
    challenge: String,
    /// The CA's renewal window, once fetched.
    #[serde(default)]
    ari: Option<AriWindow>,
}

/// A managed name's state in this process.
struct NameState {
    current: Option<(Loaded, Meta)>,
    /// Failures in a row.
    failures: u32,
    /// When the renewal task next looks at this name.
    next_action: SystemTime,
    /// When to ask the CA for renewal information next; `None` once it said it has none.
    ari_check: Option<SystemTime>,
}

impl NameState {
    /// When the renewal task next looks: the renewal time, or the renewal information
    /// check if that comes first.
    fn schedule(&mut self) {
        let Some((loaded, meta)) = &self.current else {
            return;
        };
        let (renew_at, _) = schedule::renewal_time(&loaded.leaf, meta.ari.as_ref());
        self.next_action = match self.ari_check {
            Some(check) => renew_at.min(check),
            None => renew_at,
        };
    }
}

/// Obtains, stores, renews and serves the managed certificates.
pub struct CertManager {
    config: AcmeConfig,
    store: Store,
    client: AcmeClient,
    resolver: Arc<CertResolver>,
    challenges: Arc<Challenges>,
    stats: Stats,
    states: Mutex<HashMap<String, NameState>>,
    /// Names this manager orders (the domains no static certificate covers).
    managed: Vec<String>,
}

impl CertManager {
    /// Opens the data directory, loads the static certificates and every stored managed
    /// one into a new resolver, and schedules the rest. Nothing is ordered here: spawn
    /// [`CertManager::run`] for that. Errors: unreadable static certificates, a data
    /// directory that cannot be created.
    pub fn new(config: AcmeConfig) -> Result<Arc<CertManager>, String> {
        super::install_crypto_provider();
        for name in &config.domains {
            if !super::is_domain_name(name) {
                return Err(format!("{name:?} is not a domain name ACME can validate"));
            }
        }
        let store = Store::open(&config.data_dir, &config.ca.directory_url)?;
        let challenges = Arc::new(Challenges::shared(&config.data_dir));
        let statics = config
            .static_certificates
            .iter()
            .map(|(cert, key)| certs::load_files(cert, key))
            .collect::<Result<Vec<_>, _>>()?;
        let resolver = Arc::new(CertResolver::new(
            &statics,
            &config.domains,
            challenges.clone(),
        ));
        let stats = Stats::default();
        for loaded in &statics {
            for name in &loaded.leaf.names {
                stats.set_certificate(CertificateStatus {
                    name: name.clone(),
                    managed: false,
                    not_after: Some(loaded.leaf.not_after),
                    serial: Some(loaded.leaf.serial.clone()),
                    next_renewal: None,
                    last_error: None,
                });
            }
        }
        let mut managed = Vec::new();
        for name in &config.domains {
            if resolver.has_static(name) {
                tracing::info!(
                    name,
                    "served by a static certificate (--tls-cert): not ordered"
                );
            } else if !managed.contains(name) {
                managed.push(name.clone());
            }
        }
        let client = AcmeClient::new(
            config.ca.clone(),
            store.clone(),
            challenges.clone(),
            config.timing.order_timeout,
        );
        let manager = CertManager {
            config,
            store,
            client,
            resolver,
            challenges,
            stats,
            states: Mutex::new(HashMap::new()),
            managed,
        };
        let now = SystemTime::now();
        for name in &manager.managed {
            let current = manager.read_stored(name);
            let ari_check = current
                .as_ref()
                .and_then(|(_, meta)| meta.ari)
                .map_or(now, |w| certs::from_unix_secs(w.next_check));
            let mut state = NameState {
                next_action: now,
                current,
                failures: 0,
                ari_check: Some(ari_check),
            };
            state.schedule();
            match &state.current {
                Some((loaded, _)) => {
                    manager.serve(name, loaded, &state);
                    tracing::info!(
                        name,
                        serial = %loaded.leaf.serial,
                        expires = %httpdate::fmt_http_date(loaded.leaf.not_after),
                        "certificate loaded from the data directory"
                    );
                }
                None => manager.stats.set_certificate(CertificateStatus {
                    name: name.clone(),
                    managed: true,
                    not_after: None,
                    serial: None,
                    next_renewal: Some(now),
                    last_error: None,
                }),
            }
            manager.lock_states().insert(name.clone(), state);
        }
        Ok(Arc::new(manager))
    }

    /// The resolver to build the HTTPS listener's rustls configuration with
    /// ([`super::server_config`]).
    pub fn resolver(&self) -> Arc<CertResolver> {
        self.resolver.clone()
    }

    /// The challenge answers, for the plain listener's
    /// `GET /.well-known/acme-challenge/{token}` route
    /// ([`Challenges::http01_answer_for_path`]).
    pub fn challenges(&self) -> Arc<Challenges> {
        self.challenges.clone()
    }

    /// The names this manager orders certificates for.
    pub fn managed_names(&self) -> &[String] {
        &self.managed
    }

    /// Certificates, orders, renewals and failures now, for the metrics endpoint.
    pub fn snapshot(&self) -> AcmeSnapshot {
        self.stats.snapshot()
    }

    /// The renewal task: orders what is missing, renews what is due, forever. Spawn it
    /// on the server's runtime once the listeners that answer challenges accept
    /// connections; abort its handle at shutdown (an order cut short is harmless: the
    /// next start orders again, and the lock file is released with its descriptor).
    pub async fn run(self: Arc<Self>) {
        loop {
            let now = SystemTime::now();
            let due: Vec<String> = self
                .lock_states()
                .iter()
                .filter(|(_, s)| s.next_action <= now)
                .map(|(n, _)| n.clone())
                .collect();
            for name in due {
                self.attend(&name).await;
            }
            let next = self.lock_states().values().map(|s| s.next_action).min();
            let Some(next) = next else {
                return; // No managed names: nothing to do, ever.
            };
            let wait = next
                .duration_since(SystemTime::now())
                .unwrap_or_default()
                .min(self.config.timing.max_sleep);
            tokio::time::sleep(wait).await;
        }
    }

    /// Looks at one due name: refreshes its renewal information, or orders and stores a
    /// new certificate, or adopts the one another process stored meanwhile.
    async fn attend(&self, name: &str) {
        let now = SystemTime::now();
        let (current, ari_check) = {
            let states = self.lock_states();
            let Some(state) = states.get(name) else {
                return;
            };
            (state.current.clone(), state.ari_check)
        };
        // Renewal information first: it may move the renewal time either way.
        if let Some((loaded, meta)) = &current {
            if ari_check.is_some_and(|at| at <= now) {
                self.refresh_renewal_info(name, loaded, meta).await;
            }
            let mut states = self.lock_states();
            if let Some(state) = states.get_mut(name) {
                state.schedule();
                if state.next_action > now {
                    self.stats.set_next_renewal(name, state.next_action);
                    return;
                }
            }
        }
        self.renew(name).await;
    }

    /// Orders `name` under its lock, unless the store already has a certificate that is
    /// not due (another process renewed it, or the lock was held by a sibling).
    async fn renew(&self, name: &str) {
        let lock = lock(self.store.name_dir(name).join("lock")).await;
        let _lock = match lock {
            Ok(lock) => lock,
            Err(f) => return self.failed(name, f),
        };
        if let Some((loaded, meta)) = self.read_stored(name) {
            let (renew_at, _) = schedule::renewal_time(&loaded.leaf, meta.ari.as_ref());
            if renew_at > SystemTime::now() {
                let adopted = self.adopt(name, loaded, meta);
                if adopted {
                    tracing::info!(name, "certificate stored by another process: taken over");
                }
                return;
            }
        }
        let (replaces, why, attempt) = {
            let states = self.lock_states();
            let state = states.get(name);
            let current = state.and_then(|s| s.current.as_ref());
            let why = match current {
                None => Why::Initial,
                Some((loaded, meta)) => schedule::renewal_time(&loaded.leaf, meta.ari.as_ref()).1,
            };
            (
                current.map(|(l, _)| l.leaf.clone()),
                why,
                state.map_or(0, |s| s.failures),
            )
        };
        tracing::info!(name, reason = why.label(), "ordering a certificate");
        let issued = self
            .client
            .issue(
                name,
                self.config.challenges,
                replaces.as_ref(),
                attempt,
                || self.stats.order_placed(),
            )
            .await;
        let issued = match issued {
            Ok(issued) => issued,
            Err(f) => return self.failed(name, f),
        };
        let loaded = match certs::load_pem(issued.chain_pem.as_bytes(), issued.key_pem.as_bytes()) {
            Ok(loaded) if loaded.leaf.covers(name) => loaded,
            Ok(loaded) => {
                let names = loaded.leaf.names.join(", ");
                return self.failed(
                    name,
                    Failure::new(
                        "ca_response",
                        format!("the CA issued a certificate for {names}"),
                    ),
                );
            }
            Err(e) => return self.failed(name, Failure::new("ca_response", e)),
        };
        let meta = Meta {
            serial: loaded.leaf.serial.clone(),
            issued_at: certs::unix_secs(SystemTime::now()),
            challenge: issued.challenge.to_owned(),
            ari: None,
        };
        let meta_json = serde_json::to_vec_pretty(&meta).unwrap_or_default();
        if let Err(e) = self.store.write_certificate(
            name,
            issued.chain_pem.as_bytes(),
            issued.key_pem.as_bytes(),
            &meta_json,
        ) {
            // Served anyway: losing it only costs an order at the next start.
            self.failed(
                name,
                Failure::new("storage", format!("cannot store the certificate: {e}")),
            );
        }
        tracing::info!(
            name,
            serial = %loaded.leaf.serial,
            expires = %httpdate::fmt_http_date(loaded.leaf.not_after),
            challenge = issued.challenge,
            reason = why.label(),
            "certificate obtained"
        );
        self.adopt(name, loaded, meta);
        self.stats.renewed(name, why.label());
        if let Some(state) = self.lock_states().get_mut(name) {
            state.failures = 0;
        }
    }

    /// Fetches the CA's renewal window for the current certificate and stores it.
    async fn refresh_renewal_info(&self, name: &str, loaded: &Loaded, meta: &Meta) {
        let now = SystemTime::now();
        let (ari, check) = match self.client.renewal_info(&loaded.leaf).await {
            Ok(Some(info)) => {
                let window = AriWindow::new(info.start, info.end, info.retry_after, now)
                    .keep_pick_of(meta.ari.as_ref());
                let meta = Meta {
                    ari: Some(window),
                    ..meta.clone()
                };
                if let Ok(json) = serde_json::to_vec_pretty(&meta) {
                    if let Err(e) = self.store.write_meta(name, &json) {
                        tracing::warn!(name, "cannot store renewal information: {e}");
                    }
                }
                (Some(window), Some(certs::from_unix_secs(window.next_check)))
            }
            // The CA has no ARI: the lifetime rule decides from now on.
            Ok(None) => (meta.ari, None),
            // Not a renewal failure: the lifetime rule or the last window still holds.
            Err(f) => {
                tracing::warn!(
                    name,
                    reason = f.reason,
                    "renewal information: {}",
                    f.message
                );
                let t = &self.config.timing;
                (
                    meta.ari,
                    Some(now + schedule::backoff(1, t.retry_base, t.retry_max)),
                )
            }
        };
        let mut states = self.lock_states();
        if let Some(state) = states.get_mut(name) {
            state.ari_check = check;
            if let Some((current, m)) = &mut state.current {
                if current.leaf.serial == loaded.leaf.serial {
                    m.ari = ari;
                }
            }
        }
    }

    /// Serves a certificate (from this process's order or another's) and schedules its
    /// renewal; false when it is the one already served.
    fn adopt(&self, name: &str, loaded: Loaded, meta: Meta) -> bool {
        let mut states = self.lock_states();
        let Some(state) = states.get_mut(name) else {
            return false;
        };
        let same = state
            .current
            .as_ref()
            .is_some_and(|(l, _)| l.leaf.serial == loaded.leaf.serial);
        if !same {
            // A new certificate has its own window: ask for it (unless the CA has no ARI).
            let check = meta
                .ari
                .map_or(SystemTime::now(), |w| certs::from_unix_secs(w.next_check));
            state.ari_check = state.ari_check.map(|_| check);
        }
        state.current = Some((loaded, meta));
        state.schedule();
        if let Some((loaded, _)) = &state.current {
            self.serve(name, loaded, state);
        }
        !same
    }

    /// Puts `loaded` into the resolver and the stats.
    fn serve(&self, name: &str, loaded: &Loaded, state: &NameState) {
        self.resolver.set_managed(name, loaded.key.clone());
        self.stats.set_certificate(CertificateStatus {
            name: name.to_owned(),
            managed: true,
            not_after: Some(loaded.leaf.not_after),
            serial: Some(loaded.leaf.serial.clone()),
            next_renewal: Some(state.next_action),
            last_error: None,
        });
    }

    /// Logs and counts a failure and schedules the retry.
    fn failed(&self, name: &str, failure: Failure) {
        let mut states = self.lock_states();
        let Some(state) = states.get_mut(name) else {
            return;
        };
        state.failures += 1;
        let t = &self.config.timing;
        let delay = schedule::backoff(state.failures, t.retry_base, t.retry_max);
        state.next_action = SystemTime::now() + delay;
        let serving = state.current.as_ref().map_or_else(
            || "nothing yet".to_owned(),
            |(l, _)| format!("serial {}", l.leaf.serial),
        );
        tracing::warn!(
            name,
            reason = failure.reason,
            failures = state.failures,
            retry_in = ?Duration::from_secs(delay.as_secs()),
            serving = %serving,
            "certificate order failed: {}",
            failure.message
        );
        self.stats.failed(name, failure.reason, &failure.message);
        self.stats.set_next_renewal(name, state.next_action);
    }

    /// The stored certificate of `name`, if it is whole, matches its key and covers the
    /// name; anything else is logged and treated as absent (then ordered anew).
    fn read_stored(&self, name: &str) -> Option<(Loaded, Meta)> {
        let stored = match self.store.read_certificate(name) {
            Ok(stored) => stored?,
            Err(e) => {
                tracing::warn!(name, "cannot read the stored certificate: {e}");
                return None;
            }
        };
        let loaded = match certs::load_pem(&stored.chain_pem, &stored.key_pem) {
            Ok(loaded) if loaded.leaf.covers(name) => loaded,
            Ok(_) => {
                tracing::warn!(
                    name,
                    "the stored certificate does not name it: ordering anew"
                );
                return None;
            }
            Err(e) => {
                tracing::warn!(
                    name,
                    "the stored certificate is unusable ({e}): ordering anew"
                );
                return None;
            }
        };
        let meta = serde_json::from_slice::<Meta>(&stored.meta_json)
            .ok()
            .filter(|meta| meta.serial == loaded.leaf.serial)
            .unwrap_or_else(|| Meta {
                serial: loaded.leaf.serial.clone(),
                issued_at: certs::unix_secs(loaded.leaf.not_before),
                challenge: "unknown".into(),
                ari: None,
            });
        Some((loaded, meta))
    }

    fn lock_states(&self) -> std::sync::MutexGuard<'_, HashMap<String, NameState>> {
        self.states.lock().unwrap_or_else(|e| e.into_inner())
    }
}
