//! The hub's configuration, mirroring FrankenPHP's `mercure` directive and its Docker
//! image's variables (`--mercure-publisher-jwt`, `--mercure-subscriber-jwt`,
//! `--mercure-jwt-alg`, `--mercure-anonymous`, `--mercure-cors-origin`,
//! `--mercure-transport`, `MERCURE_PUBLISHER_JWT_KEY`, ...). Reading flags, the
//! environment and `ferrophp.toml` is the server's job; this is the result.

use std::path::PathBuf;
use std::time::Duration;

use crate::auth::DEFAULT_COOKIE_NAME;
use crate::history::HistoryLimits;

/// Where a role's token keys come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JwtKey {
    /// A key and its algorithm: the HMAC secret itself, or a PEM public key. An empty
    /// algorithm means `HS256`.
    Key {
        /// The secret or PEM text.
        key: String,
        /// `HS256`, `RS256`, `ES256`, ...
        alg: String,
    },
    /// A JWK Set in a JSON file, read at start.
    JwksFile(PathBuf),
}

/// Where the history lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HistoryConfig {
    /// In memory (the default): lost on restart.
    Memory(HistoryLimits),
    /// In fjall under `path` (the server passes `<data-dir>/mercure`), surviving a restart;
    /// at most `max_updates` kept.
    Durable {
        /// The database directory.
        path: PathBuf,
        /// Entries kept.
        max_updates: usize,
    },
}

impl Default for HistoryConfig {
    fn default() -> HistoryConfig {
        HistoryConfig::Memory(HistoryLimits::default())
    }
}

/// How updates travel between hubs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum TransportConfig {
    /// Within this process only.
    #[default]
    Local,
    /// Through a Redis stream shared by every instance (`--mercure-transport
    /// redis://...`): each publishes to it and reads everything from it, so an update
    /// published on one instance reaches the subscribers of all, and the stream (trimmed to
    /// the history bound) is the shared history. The durable history setting is not used.
    Redis {
        /// `redis://[user:password@]host:port[/db]`.
        url: String,
        /// The stream's key.
        stream: String,
    },
}

impl TransportConfig {
    /// The Redis transport on `url` with the default stream key.
    pub fn redis(url: impl Into<String>) -> TransportConfig {
        TransportConfig::Redis {
            url: url.into(),
            stream: DEFAULT_REDIS_STREAM.to_owned(),
        }
    }
}

/// The default key of the Redis stream.
pub const DEFAULT_REDIS_STREAM: &str = "ferrophp:mercure";

/// The hub's configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// Publishers' keys. The hub is on when this is set; without it the publish endpoint
    /// is off (updates can still come from `mercure_publish()`).
    pub publisher_jwt: Option<JwtKey>,
    /// Subscribers' keys. Without them subscribers can only be anonymous.
    pub subscriber_jwt: Option<JwtKey>,
    /// Subscribers without a token are allowed (they receive public updates only).
    pub anonymous: bool,
    /// Publish subscription events and serve the subscriptions API.
    pub subscriptions: bool,
    /// Origins allowed by CORS.
    pub cors_origins: Vec<String>,
    /// Origins allowed to publish with the authorization cookie.
    pub publish_origins: Vec<String>,
    /// The authorization cookie's name.
    pub cookie_name: String,
    /// Heartbeat period of idle streams (None: none).
    pub heartbeat: Option<Duration>,
    /// A stream ends after this (80-100% of it, randomized; the client reconnects with
    /// `Last-Event-ID`). None: never.
    pub write_timeout: Option<Duration>,
    /// Events a subscriber's buffer holds (not yet taken by its stream) before the
    /// subscriber is closed as too slow.
    pub subscriber_buffer: usize,
    /// The history.
    pub history: HistoryConfig,
    /// The transport.
    pub transport: TransportConfig,
    /// Topics per update, and selectors per subscription, at most.
    pub max_topics: usize,
    /// Selectors in `mercure.publish` / `mercure.subscribe` at most.
    pub max_claim_selectors: usize,
    /// Compiled selectors cached.
    pub selector_cache: usize,
    /// The hub's URL for discovery (`Link: <...>; rel="mercure"`).
    pub hub_url: String,
}

/// The hub's path.
pub const HUB_PATH: &str = "/.well-known/mercure";

impl Default for Config {
    fn default() -> Config {
        Config {
            publisher_jwt: None,
            subscriber_jwt: None,
            anonymous: false,
            subscriptions: false,
            cors_origins: Vec::new(),
            publish_origins: Vec::new(),
            cookie_name: DEFAULT_COOKIE_NAME.to_owned(),
            heartbeat: Some(Duration::from_secs(40)),
            write_timeout: Some(Duration::from_secs(600)),
            subscriber_buffer: 1000,
            history: HistoryConfig::default(),
            transport: TransportConfig::Local,
            max_topics: 1000,
            max_claim_selectors: crate::jwt::MAX_CLAIM_SELECTORS,
            selector_cache: 10_000,
            hub_url: HUB_PATH.to_owned(),
        }
    }
}

impl Config {
    /// A configuration with HMAC keys for both roles (what most apps use).
    pub fn with_hmac(publisher: &str, subscriber: &str) -> Config {
        Config {
            publisher_jwt: Some(JwtKey::Key {
                key: publisher.to_owned(),
                alg: "HS256".to_owned(),
            }),
            subscriber_jwt: Some(JwtKey::Key {
                key: subscriber.to_owned(),
                alg: "HS256".to_owned(),
            }),
            ..Config::default()
        }
    }

    /// Whether the hub is on (a publisher key is set).
    pub fn enabled(&self) -> bool {
        self.publisher_jwt.is_some()
    }
}
