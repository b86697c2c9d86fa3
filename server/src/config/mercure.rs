//! The Mercure hub's settings, as FrankenPHP's `mercure` directive and its Docker image
//! name them: the hub is on when a publisher key is set (`--mercure-publisher-jwt` or a JWK Set
//! file, `--mercure-publisher-jwks`, or
//! `MERCURE_PUBLISHER_JWT_KEY` in the environment, or `[mercure] publisher_jwt` in
//! `ferrophp.toml`); flags win over the file. Checked into the core's
//! [`mercure::Config`], which `serve` starts the hub with (`mercure_mount.rs`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use super::sources::parse_duration;
use super::FileConfig;

/// The Mercure flags (flattened into `ferrophp serve`'s).
#[derive(clap::Args, Debug, Default)]
pub struct MercureArgs {
    /// Mercure hub: the publishers' JWT key (the HMAC secret, or a PEM public key with
    /// --mercure-jwt-alg RS256/ES256); setting it mounts the hub at /.well-known/mercure
    #[arg(
        long,
        env = "MERCURE_PUBLISHER_JWT_KEY",
        hide_env_values = true,
        value_name = "KEY"
    )]
    pub mercure_publisher_jwt: Option<String>,
    /// Mercure hub: the subscribers' JWT key [default: none, subscribers need
    /// --mercure-anonymous]
    #[arg(
        long,
        env = "MERCURE_SUBSCRIBER_JWT_KEY",
        hide_env_values = true,
        value_name = "KEY"
    )]
    pub mercure_subscriber_jwt: Option<String>,
    /// Mercure hub: the publishers' keys as a JWK Set (a JSON file, read at start; a
    /// token's `kid` picks the key), instead of --mercure-publisher-jwt; setting it mounts
    /// the hub too
    #[arg(long, env = "FERROPHP_MERCURE_PUBLISHER_JWKS", value_name = "FILE")]
    pub mercure_publisher_jwks: Option<PathBuf>,
    /// Mercure hub: the subscribers' keys as a JWK Set (a JSON file, read at start),
    /// instead of --mercure-subscriber-jwt
    #[arg(long, env = "FERROPHP_MERCURE_SUBSCRIBER_JWKS", value_name = "FILE")]
    pub mercure_subscriber_jwks: Option<PathBuf>,
    /// Mercure hub: the keys' algorithm: HS256, HS384, HS512, RS256, ES256, ...
    /// [default: HS256]
    #[arg(long, env = "FERROPHP_MERCURE_JWT_ALG", value_name = "ALG")]
    pub mercure_jwt_alg: Option<String>,
    /// Mercure hub: subscribers without a token may subscribe (public updates only).
    #[arg(long, env = "FERROPHP_MERCURE_ANONYMOUS")]
    pub mercure_anonymous: bool,
    /// Mercure hub: publish subscription events and serve the subscriptions API
    /// (/.well-known/mercure/subscriptions).
    #[arg(long, env = "FERROPHP_MERCURE_SUBSCRIPTIONS")]
    pub mercure_subscriptions: bool,
    /// Mercure hub: an origin allowed by CORS (`*` for any). Repeatable;
    /// FERROPHP_MERCURE_CORS_ORIGINS takes a comma-separated list.
    #[arg(
        long = "mercure-cors-origin",
        env = "FERROPHP_MERCURE_CORS_ORIGINS",
        value_name = "ORIGIN",
        value_delimiter = ','
    )]
    pub mercure_cors_origins: Vec<String>,
    /// Mercure hub: an origin allowed to publish with the authorization cookie.
    /// Repeatable; FERROPHP_MERCURE_PUBLISH_ORIGINS takes a comma-separated list.
    #[arg(
        long = "mercure-publish-origin",
        env = "FERROPHP_MERCURE_PUBLISH_ORIGINS",
        value_name = "ORIGIN",
        value_delimiter = ','
    )]
    pub mercure_publish_origins: Vec<String>,
    /// Mercure hub: share updates and history with other instances through Redis
    /// (`redis://[user:password@]host:port[/db]`); `php` CLI scripts publish through it
    /// too [default: this process only]
    #[arg(long, env = "FERROPHP_MERCURE_TRANSPORT", value_name = "URL")]
    pub mercure_transport: Option<String>,
    /// Mercure hub: the heartbeat period of idle streams (`40s`, `500ms`; 0: none)
    /// [default: 40s]
    #[arg(long, env = "FERROPHP_MERCURE_HEARTBEAT", value_name = "DURATION", value_parser = parse_duration)]
    pub mercure_heartbeat: Option<Duration>,
    /// Mercure hub: PHP's responses carry the discovery header `Link:
    /// </.well-known/mercure>; rel="mercure"`, so clients find the hub without being told
    #[arg(long, env = "FERROPHP_MERCURE_DISCOVERY")]
    pub mercure_discovery: bool,
    /// With --watch and the Mercure hub (anonymous subscribers): publish a change event
    /// on the hot-reload topic when a watched file changes; pages that load
    /// /.well-known/ferrophp/hot-reload.js reload themselves ($_SERVER
    /// ['FRANKENPHP_HOT_RELOAD'] is the URL they subscribe to)
    #[arg(long, env = "FERROPHP_HOT_RELOAD")]
    pub hot_reload: bool,
}

/// `[mercure]` in the TOML file; every key optional.
#[derive(Deserialize, Debug, Default)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub(super) struct MercureFile {
    publisher_jwt: Option<String>,
    subscriber_jwt: Option<String>,
    publisher_jwks: Option<PathBuf>,
    subscriber_jwks: Option<PathBuf>,
    jwt_alg: Option<String>,
    anonymous: Option<bool>,
    subscriptions: Option<bool>,
    cors_origins: Option<Vec<String>>,
    publish_origins: Option<Vec<String>>,
    transport: Option<String>,
    heartbeat: Option<String>,
    hot_reload: Option<bool>,
    discovery: Option<bool>,
}

/// The hub's topic of file-change events (`--hot-reload`).
pub const HOT_RELOAD_TOPIC: &str = "urn:ferrophp:hot-reload";

/// What pages subscribe to for hot reload, `$_SERVER['FRANKENPHP_HOT_RELOAD']`.
pub(super) const HOT_RELOAD_URL: &str = "/.well-known/mercure?topic=urn%3Aferrophp%3Ahot-reload";

/// `--hot-reload`, checked against the rest: it needs `--watch` (something to watch) and
/// the hub with anonymous subscribers (pages subscribe without a token).
pub(super) fn hot_reload(
    args: &MercureArgs,
    file: &FileConfig,
    hub: Option<&mercure::Config>,
    watching: bool,
) -> Result<bool, String> {
    let table = file.mercure.as_ref().and_then(|m| m.hot_reload);
    if !(args.hot_reload || table.unwrap_or(false)) {
        return Ok(false);
    }
    if !watching {
        return Err("--hot-reload needs --watch (the files whose changes it announces)".into());
    }
    match hub {
        Some(hub) if hub.anonymous => Ok(true),
        _ => Err(
            "--hot-reload needs the Mercure hub with anonymous subscribers \
                  (--mercure-publisher-jwt KEY --mercure-anonymous)"
                .into(),
        ),
    }
}

/// `--mercure-discovery` (or `[mercure] discovery`): the discovery header's value for PHP's
/// responses, checked against the rest (it needs the hub).
pub(super) fn discovery(
    args: &MercureArgs,
    file: &FileConfig,
    hub: Option<&mercure::Config>,
) -> Result<Option<String>, String> {
    let table = file.mercure.as_ref().and_then(|m| m.discovery);
    if !(args.mercure_discovery || table.unwrap_or(false)) {
        return Ok(None);
    }
    match hub {
        Some(hub) => Ok(Some(mercure::link_header(&hub.hub_url))),
        None => Err("--mercure-discovery needs the Mercure hub \
                     (--mercure-publisher-jwt or --mercure-publisher-jwks)"
            .into()),
    }
}

/// The hub's configuration when a publisher key is set (flags, else the file), `None`
/// otherwise. `durable_dir`: the data directory when one was configured explicitly; the
/// history then survives restarts under its `mercure/` (the Redis transport keeps its
/// history in Redis instead).
pub(super) fn hub_config(
    args: &mut MercureArgs,
    file: &mut FileConfig,
    durable_dir: Option<&Path>,
) -> Result<Option<mercure::Config>, String> {
    let mut table = std::mem::take(file.mercure.get_or_insert_with(MercureFile::default));
    // What hot_reload() and discovery() read after us stays in the file's table.
    let kept = file.mercure.as_mut().expect("just set");
    kept.hot_reload = table.hot_reload;
    kept.discovery = table.discovery;
    let alg = args
        .mercure_jwt_alg
        .take()
        .or(table.jwt_alg.take())
        .unwrap_or_else(|| "HS256".into());
    // A role's keys: one key (with the algorithm) or a JWK Set file, not both.
    let role = |role: &str,
                key: Option<String>,
                jwks: Option<PathBuf>|
     -> Result<Option<mercure::JwtKey>, String> {
        match (key.filter(|k| !k.is_empty()), jwks) {
            (Some(_), Some(_)) => Err(format!(
                "Mercure: set either --mercure-{role}-jwt or --mercure-{role}-jwks, not both"
            )),
            (Some(key), None) => Ok(Some(mercure::JwtKey::Key {
                key,
                alg: alg.clone(),
            })),
            (None, Some(path)) => Ok(Some(mercure::JwtKey::JwksFile(path))),
            (None, None) => Ok(None),
        }
    };
    let publisher = role(
        "publisher",
        args.mercure_publisher_jwt
            .take()
            .or(table.publisher_jwt.take()),
        args.mercure_publisher_jwks
            .take()
            .or(table.publisher_jwks.take()),
    )?;
    let Some(publisher) = publisher else {
        return Ok(None);
    };
    let subscriber = role(
        "subscriber",
        args.mercure_subscriber_jwt
            .take()
            .or(table.subscriber_jwt.take()),
        args.mercure_subscriber_jwks
            .take()
            .or(table.subscriber_jwks.take()),
    )?;
    let anonymous = args.mercure_anonymous || table.anonymous.unwrap_or(false);
    if subscriber.is_none() && !anonymous {
        return Err("Mercure: set a subscriber key (--mercure-subscriber-jwt, \
                    MERCURE_SUBSCRIBER_JWT_KEY, --mercure-subscriber-jwks) or allow \
                    anonymous subscribers (--mercure-anonymous)"
            .into());
    }
    let heartbeat = match args.mercure_heartbeat {
        Some(d) => d,
        None => match table.heartbeat.as_deref() {
            Some(text) => parse_duration(text).map_err(|e| format!("[mercure] heartbeat: {e}"))?,
            None => Duration::from_secs(40),
        },
    };
    let transport = match args.mercure_transport.take().or(table.transport.take()) {
        Some(url) if url.starts_with("redis://") || url.starts_with("rediss://") => {
            mercure::TransportConfig::redis(url)
        }
        Some(url) if url.is_empty() || url == "local" => mercure::TransportConfig::Local,
        Some(url) => {
            return Err(format!(
                "--mercure-transport must be a redis:// URL, got {url:?}"
            ))
        }
        None => mercure::TransportConfig::Local,
    };
    let history = match durable_dir {
        Some(dir) => mercure::HistoryConfig::Durable {
            path: dir.join("mercure"),
            max_updates: mercure::HistoryLimits::default().max_updates,
        },
        None => mercure::HistoryConfig::default(),
    };
    let list = |flags: &mut Vec<String>, file: Option<Vec<String>>| {
        if flags.is_empty() {
            file.unwrap_or_default()
        } else {
            std::mem::take(flags)
        }
    };
    Ok(Some(mercure::Config {
        publisher_jwt: Some(publisher),
        subscriber_jwt: subscriber,
        anonymous,
        subscriptions: args.mercure_subscriptions || table.subscriptions.unwrap_or(false),
        cors_origins: list(&mut args.mercure_cors_origins, table.cors_origins.take()),
        publish_origins: list(
            &mut args.mercure_publish_origins,
            table.publish_origins.take(),
        ),
        heartbeat: (!heartbeat.is_zero()).then_some(heartbeat),
        history,
        transport,
        ..mercure::Config::default()
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(toml: &str, mut args: MercureArgs) -> Result<Option<mercure::Config>, String> {
        let mut file = FileConfig::parse(toml).map_err(|e| e.to_string())?;
        hub_config(&mut args, &mut file, None)
    }

    #[test]
    fn the_hub_is_on_with_a_publisher_key_from_flags_or_file() {
        assert_eq!(resolve("", MercureArgs::default()).unwrap(), None);
        let c = resolve(
            "[mercure]\npublisher_jwt = \"p\"\nsubscriber_jwt = \"s\"\n\
             cors_origins = [\"https://a.test\"]\nheartbeat = \"2s\"\n",
            MercureArgs::default(),
        )
        .unwrap()
        .unwrap();
        assert!(c.enabled());
        assert_eq!(
            c.subscriber_jwt,
            Some(mercure::JwtKey::Key {
                key: "s".into(),
                alg: "HS256".into()
            })
        );
        assert_eq!(c.cors_origins, ["https://a.test"]);
        assert_eq!(c.heartbeat, Some(Duration::from_secs(2)));
        // Flags win over the file.
        let c = resolve(
            "[mercure]\npublisher_jwt = \"p\"\nanonymous = true\n",
            MercureArgs {
                mercure_publisher_jwt: Some("flag".into()),
                mercure_jwt_alg: Some("HS512".into()),
                mercure_transport: Some("redis://127.0.0.1:6379".into()),
                ..MercureArgs::default()
            },
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            c.publisher_jwt,
            Some(mercure::JwtKey::Key {
                key: "flag".into(),
                alg: "HS512".into()
            })
        );
        assert!(c.anonymous);
        assert_eq!(
            c.transport,
            mercure::TransportConfig::redis("redis://127.0.0.1:6379")
        );
    }

    #[test]
    fn bad_settings_are_refused_with_the_setting_named() {
        let e = resolve("[mercure]\npublisher_jwt = \"p\"\n", MercureArgs::default());
        assert!(e.unwrap_err().contains("subscriber key"));
        let e = resolve(
            "[mercure]\npublisher_jwt = \"p\"\nanonymous = true\ntransport = \"nats://x\"\n",
            MercureArgs::default(),
        );
        assert!(e.unwrap_err().contains("--mercure-transport"));
        assert!(resolve("[mercure]\nbogus = 1\n", MercureArgs::default()).is_err());
        let e = resolve(
            "[mercure]\npublisher_jwt = \"p\"\npublisher_jwks = \"/k.json\"\nanonymous = true\n",
            MercureArgs::default(),
        );
        assert!(e.unwrap_err().contains("not both"));
    }

    #[test]
    fn jwk_sets_stand_for_keys_and_mount_the_hub() {
        let c = resolve(
            "[mercure]\npublisher_jwks = \"/p.json\"\nsubscriber_jwks = \"/s.json\"\n",
            MercureArgs::default(),
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            c.publisher_jwt,
            Some(mercure::JwtKey::JwksFile("/p.json".into()))
        );
        assert_eq!(
            c.subscriber_jwt,
            Some(mercure::JwtKey::JwksFile("/s.json".into()))
        );
        // A flag wins over the file.
        let c = resolve(
            "[mercure]\npublisher_jwks = \"/p.json\"\nanonymous = true\n",
            MercureArgs {
                mercure_publisher_jwks: Some("/flag.json".into()),
                ..MercureArgs::default()
            },
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            c.publisher_jwt,
            Some(mercure::JwtKey::JwksFile("/flag.json".into()))
        );
    }
}
