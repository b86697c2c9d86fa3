//! Automatic HTTPS settings: `--domain` and the `--acme-*` flags, `--data-dir` and
//! `--http-listen` (each also a `FERROPHP_*` variable and a TOML key), checked into the
//! [`AutoHttps`] the server mounts `tls::CertManager` with.

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::path::PathBuf;

use base64::Engine as _;

use super::FileConfig;
use crate::tls;

/// The automatic HTTPS flags (flattened into `ferrophp serve`'s).
#[derive(clap::Args, Debug, Default)]
pub struct AcmeArgs {
    /// Domain to obtain a certificate for from an ACME CA and serve over HTTPS (then
    /// `--listen` is the HTTPS address, default 0.0.0.0:443, and `--http-listen` the plain
    /// one). Repeatable; FERROPHP_DOMAINS takes a comma-separated list.
    #[arg(
        long = "domain",
        env = "FERROPHP_DOMAINS",
        value_name = "NAME",
        value_delimiter = ','
    )]
    pub domains: Vec<String>,
    /// With --domain: the plain HTTP address, which redirects to HTTPS and answers the
    /// CA's HTTP-01 challenges [default: 0.0.0.0:80]
    #[arg(long, env = "FERROPHP_HTTP_LISTEN", value_name = "ADDR")]
    pub http_listen: Option<SocketAddr>,
    /// ACME directory URL of the CA [default: Let's Encrypt]
    #[arg(long, env = "FERROPHP_ACME_DIRECTORY", value_name = "URL")]
    pub acme_directory: Option<String>,
    /// PEM certificate to trust for the ACME directory's HTTPS (a private or test CA)
    /// instead of the system's roots.
    #[arg(long, env = "FERROPHP_ACME_CA_ROOT", value_name = "PEM")]
    pub acme_ca_root: Option<PathBuf>,
    /// Contact e-mail for the ACME account.
    #[arg(long, env = "FERROPHP_ACME_EMAIL", value_name = "EMAIL")]
    pub acme_email: Option<String>,
    /// External Account Binding key id, for CAs that require one.
    #[arg(
        long,
        env = "FERROPHP_ACME_EAB_KID",
        value_name = "KID",
        requires = "acme_eab_hmac_key"
    )]
    pub acme_eab_kid: Option<String>,
    /// External Account Binding HMAC key, base64url as the CA shows it.
    #[arg(
        long,
        env = "FERROPHP_ACME_EAB_HMAC_KEY",
        hide_env_values = true,
        value_name = "KEY",
        requires = "acme_eab_kid"
    )]
    pub acme_eab_hmac_key: Option<String>,
    /// With --domain: the ACME challenge types the server answers, `http-01` (on
    /// --http-listen) and `tls-alpn-01` (on --listen) [default: both]. Name one when only
    /// that port reaches the server from the CA (port 80 blocked, or a TCP proxy in front
    /// of only one). Repeatable; FERROPHP_ACME_CHALLENGES takes a comma-separated list.
    #[arg(
        long = "acme-challenge",
        env = "FERROPHP_ACME_CHALLENGES",
        value_name = "TYPE",
        value_delimiter = ','
    )]
    pub acme_challenges: Vec<String>,
    /// Directory for state kept across restarts: certificates and the ACME account
    /// under certs/, the job queue under jobs/, the Mercure hub's durable history under
    /// mercure/ [default: $XDG_DATA_HOME/ferrophp, else ~/.local/share/ferrophp]
    #[arg(long, env = "FERROPHP_DATA_DIR", value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
}

/// Automatic HTTPS, resolved: what the server mounts when domains are set.
#[derive(Debug, Clone)]
pub struct AutoHttps {
    /// The plain listener: redirects to HTTPS and answers HTTP-01.
    pub http_listen: SocketAddr,
    /// The certificate manager's settings (the static `--tls-cert` pair included).
    pub acme: tls::AcmeConfig,
}

/// The HTTPS address when domains are set and `--listen` is not.
pub(super) const DEFAULT_HTTPS_LISTEN: SocketAddr =
    SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 443));
const DEFAULT_HTTP_LISTEN: SocketAddr =
    SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 80));

/// Automatic HTTPS when domains are set (flags, else the file's), `None` otherwise.
pub(super) fn auto_https(
    args: &mut AcmeArgs,
    file: &mut FileConfig,
    static_tls: Option<&(PathBuf, PathBuf)>,
    data_dir: Option<&std::path::Path>,
) -> Result<Option<AutoHttps>, String> {
    let domains = if args.domains.is_empty() {
        file.domains.take().unwrap_or_default()
    } else {
        std::mem::take(&mut args.domains)
    };
    let mut names: Vec<String> = Vec::new();
    for domain in domains {
        let name = domain.trim().trim_end_matches('.').to_ascii_lowercase();
        if name.is_empty() {
            continue;
        }
        if !tls::is_domain_name(&name) {
            return Err(format!(
                "domain {domain:?} is not a DNS name an ACME CA can validate over HTTP or \
                 TLS (wildcards and IP addresses are not supported)"
            ));
        }
        if !names.contains(&name) {
            names.push(name);
        }
    }
    if names.is_empty() {
        return Ok(None);
    }
    let directory_url = args
        .acme_directory
        .take()
        .or(file.acme_directory.take())
        .unwrap_or_else(|| tls::LETS_ENCRYPT_DIRECTORY.into());
    if !directory_url.starts_with("https://") {
        return Err(format!(
            "ACME directory must be an https:// URL, got {directory_url:?}"
        ));
    }
    let ca_root = args.acme_ca_root.take().or(file.acme_ca_root.take());
    if let Some(root) = &ca_root {
        if !root.is_file() {
            return Err(format!("ACME CA root {} is not a file", root.display()));
        }
    }
    let contact = match args.acme_email.take().or(file.acme_email.take()) {
        Some(email) if !email.contains('@') || email.contains(char::is_whitespace) => {
            return Err(format!("ACME e-mail {email:?} is not an e-mail address"))
        }
        Some(email) => vec![format!("mailto:{email}")],
        None => Vec::new(),
    };
    let external_account = match (
        args.acme_eab_kid.take().or(file.acme_eab_kid.take()),
        args.acme_eab_hmac_key
            .take()
            .or(file.acme_eab_hmac_key.take()),
    ) {
        (Some(key_id), Some(key)) => Some(tls::ExternalAccount {
            key_id,
            hmac_key: base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(key.trim().trim_end_matches('='))
                .map_err(|e| format!("ACME EAB HMAC key is not base64url: {e}"))?,
        }),
        (None, None) => None,
        _ => return Err("External Account Binding needs both a key id and an HMAC key".into()),
    };
    let challenges = challenge_types(if args.acme_challenges.is_empty() {
        file.acme_challenges.take().unwrap_or_default()
    } else {
        std::mem::take(&mut args.acme_challenges)
    })?;
    let data_dir = data_dir
        .ok_or("no data directory: set --data-dir (FERROPHP_DATA_DIR)")?
        .to_path_buf();
    Ok(Some(AutoHttps {
        http_listen: args
            .http_listen
            .or(file.http_listen)
            .unwrap_or(DEFAULT_HTTP_LISTEN),
        acme: tls::AcmeConfig {
            domains: names,
            ca: tls::CaSettings {
                directory_url,
                ca_root,
                contact,
                external_account,
            },
            data_dir,
            challenges,
            static_certificates: static_tls.cloned().into_iter().collect(),
            timing: tls::Timing::default(),
        },
    }))
}

/// `--acme-challenge` values: both types when none is named (both listeners run with
/// automatic HTTPS, so the CA may use either).
fn challenge_types(named: Vec<String>) -> Result<tls::ChallengeTypes, String> {
    if named.is_empty() {
        return Ok(tls::ChallengeTypes {
            http01: true,
            tls_alpn01: true,
        });
    }
    let mut types = tls::ChallengeTypes {
        http01: false,
        tls_alpn01: false,
    };
    for name in named {
        match name.trim().to_ascii_lowercase().as_str() {
            "http-01" => types.http01 = true,
            "tls-alpn-01" => types.tls_alpn01 = true,
            _ => {
                return Err(format!(
                    "ACME challenge {name:?} is not one the server answers: http-01 or \
                     tls-alpn-01 (DNS-01 needs a DNS provider)"
                ))
            }
        }
    }
    Ok(types)
}

/// The directory for state kept across restarts, shared by everything that keeps some
/// (certificates under `certs/`, the job queue under `jobs/`, the Mercure hub's durable
/// history under `mercure/`): `--data-dir`, else the file's `data_dir`, else
/// `$XDG_DATA_HOME/ferrophp`, else `$HOME/.local/share/ferrophp`; `None` when none of
/// them is set (only an error for a feature that needs one).
pub(super) fn data_dir(args: &mut AcmeArgs, file: &mut FileConfig) -> Option<PathBuf> {
    args.data_dir
        .take()
        .or(file.data_dir.take())
        .or_else(default_data_dir)
}

/// `$XDG_DATA_HOME/ferrophp`, else `$HOME/.local/share/ferrophp`.
fn default_data_dir() -> Option<PathBuf> {
    let absolute = |v: std::ffi::OsString| Some(PathBuf::from(v)).filter(|p| p.is_absolute());
    if let Some(dir) = std::env::var_os("XDG_DATA_HOME").and_then(absolute) {
        return Some(dir.join("ferrophp"));
    }
    std::env::var_os("HOME")
        .and_then(absolute)
        .map(|home| home.join(".local/share/ferrophp"))
}
