//! JWT verification for publishers and subscribers: a [`Verifier`] built from the
//! configured key (an HMAC secret, or an RSA/EC/Ed25519 public key in PEM) or from a JWK
//! Set file, and the Mercure claims of a token it accepts ([`Claims`]).
//!
//! `jsonwebtoken` does the cryptography. A token is accepted only if its header's `alg`
//! is the configured one (or, with a JWK Set, the one of the key it names), so `alg: none`
//! (which the crate cannot even parse) and a token of another family (an HMAC token
//! against an RSA key: the key-confusion attack) are refused. `exp` and `nbf` are checked
//! when present, without leeway; neither is required, as the reference hub does not
//! require them.

use std::collections::HashSet;
use std::path::Path;
use std::str::FromStr;

use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;

/// The Mercure claims of a verified token.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Claims {
    /// `mercure.publish`: selectors of the topics the bearer may publish to (None when the
    /// claim is absent: no publishing at all).
    pub publish: Option<Vec<String>>,
    /// `mercure.subscribe`: selectors of the topics whose private updates the bearer may
    /// receive.
    pub subscribe: Option<Vec<String>>,
    /// `mercure.payload`: data attached to the bearer's subscriptions.
    pub payload: Option<serde_json::Value>,
    /// `exp` (seconds since the Unix epoch): a subscription ends then.
    pub expires_at: Option<u64>,
}

/// Why a token (or the way it was presented) was refused. Each answers 401.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthError {
    /// The `Authorization` header is not `Bearer <token>` (or was sent twice).
    InvalidAuthorizationHeader,
    /// The `authorization` query parameter is malformed.
    InvalidAuthorizationQuery,
    /// A cookie was used to publish without an `Origin` or `Referer`.
    NoOrigin,
    /// A cookie was used to publish from an origin not in the publish origins.
    OriginNotAllowed(String),
    /// The token did not verify; the reason, for logs.
    InvalidToken(String),
    /// More selectors in a claim than allowed.
    TooManyClaimSelectors,
    /// No token where one is needed, or claims that do not allow the operation.
    Unauthorized,
}

impl std::fmt::Display for AuthError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AuthError::InvalidAuthorizationHeader => f.write_str(r#"invalid "Authorization" HTTP header"#),
            AuthError::InvalidAuthorizationQuery => f.write_str(r#"invalid "authorization" Query parameter"#),
            AuthError::NoOrigin => f.write_str(r#"an "Origin" or a "Referer" HTTP header must be present to use the cookie-based authorization mechanism"#),
            AuthError::OriginNotAllowed(o) => write!(f, "{o:?}: origin not allowed to post updates"),
            AuthError::InvalidToken(why) => write!(f, "unable to parse JWT: {why}"),
            AuthError::TooManyClaimSelectors => f.write_str("too many matchers in mercure claim"),
            AuthError::Unauthorized => f.write_str("unauthorized"),
        }
    }
}

impl std::error::Error for AuthError {}

/// A key that cannot be used with its algorithm (a configuration error).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyError(pub String);

impl std::fmt::Display for KeyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for KeyError {}

/// Checks tokens of one role (publishers or subscribers).
pub struct Verifier {
    keys: Keys,
    max_claim_selectors: usize,
}

enum Keys {
    /// One key, one algorithm.
    Single(DecodingKey, Algorithm),
    /// A JWK Set: the token's `kid` picks the key (or, without one, each key that fits
    /// the token's algorithm is tried).
    Set(Vec<SetKey>),
}

struct SetKey {
    kid: Option<String>,
    /// The algorithm the JWK names, if it does.
    alg: Option<Algorithm>,
    key: DecodingKey,
}

impl std::fmt::Debug for Verifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.keys {
            Keys::Single(_, alg) => write!(f, "Verifier({alg:?})"),
            Keys::Set(keys) => write!(f, "Verifier(JWK Set of {})", keys.len()),
        }
    }
}

/// The default maximum of selectors in `mercure.publish` or `mercure.subscribe`.
pub const MAX_CLAIM_SELECTORS: usize = 1000;

impl Verifier {
    /// A verifier for `alg` (`HS256`, `RS256`, `ES256`, ... as `--mercure-jwt-alg` names
    /// them; empty means `HS256`) with `key`: the secret itself for HMAC, a PEM public
    /// key (or certificate-free `PUBLIC KEY` block) otherwise.
    pub fn from_key(key: &[u8], alg: &str) -> Result<Verifier, KeyError> {
        let alg_name = if alg.is_empty() { "HS256" } else { alg };
        let alg = Algorithm::from_str(alg_name)
            .map_err(|_| KeyError(format!("unsupported JWT algorithm {alg_name:?}")))?;
        let bad = |e: jsonwebtoken::errors::Error| {
            KeyError(format!("the key is not usable with {alg_name}: {e}"))
        };
        let key = match alg {
            Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512 => {
                if key.is_empty() {
                    return Err(KeyError("an empty HMAC secret".into()));
                }
                DecodingKey::from_secret(key).map_err(bad)?
            }
            Algorithm::RS256
            | Algorithm::RS384
            | Algorithm::RS512
            | Algorithm::PS256
            | Algorithm::PS384
            | Algorithm::PS512 => DecodingKey::from_rsa_pem(key).map_err(bad)?,
            Algorithm::ES256 | Algorithm::ES384 => DecodingKey::from_ec_pem(key).map_err(bad)?,
            Algorithm::EdDSA => DecodingKey::from_ed_pem(key).map_err(bad)?,
            _ => return Err(KeyError(format!("unsupported JWT algorithm {alg_name:?}"))),
        };
        Ok(Verifier {
            keys: Keys::Single(key, alg),
            max_claim_selectors: MAX_CLAIM_SELECTORS,
        })
    }

    /// A verifier for the keys of a JWK Set (JSON text).
    pub fn from_jwks_json(json: &str) -> Result<Verifier, KeyError> {
        let set: JwkSet =
            serde_json::from_str(json).map_err(|e| KeyError(format!("invalid JWK Set: {e}")))?;
        let mut keys = Vec::new();
        for jwk in &set.keys {
            keys.push(set_key(jwk)?);
        }
        if keys.is_empty() {
            return Err(KeyError("the JWK Set has no key".into()));
        }
        Ok(Verifier {
            keys: Keys::Set(keys),
            max_claim_selectors: MAX_CLAIM_SELECTORS,
        })
    }

    /// A verifier for the JWK Set in the file at `path`, read once.
    pub fn from_jwks_file(path: &Path) -> Result<Verifier, KeyError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| KeyError(format!("cannot read the JWK Set {}: {e}", path.display())))?;
        Verifier::from_jwks_json(&text)
    }

    /// Changes the maximum of selectors a claim may hold.
    pub fn with_max_claim_selectors(mut self, max: usize) -> Verifier {
        self.max_claim_selectors = max;
        self
    }

    /// Verifies `token` and returns its Mercure claims.
    pub fn verify(&self, token: &str) -> Result<Claims, AuthError> {
        let invalid = |e: jsonwebtoken::errors::Error| AuthError::InvalidToken(e.to_string());
        let data = match &self.keys {
            Keys::Single(key, alg) => {
                jsonwebtoken::decode::<RawClaims>(token, key, &validation(*alg)).map_err(invalid)?
            }
            Keys::Set(keys) => {
                let header = jsonwebtoken::decode_header(token).map_err(invalid)?;
                let candidates = keys.iter().filter(|k| {
                    let kid_fits = match (&header.kid, &k.kid) {
                        (Some(want), Some(have)) => want == have,
                        (Some(_), None) => false,
                        (None, _) => true,
                    };
                    kid_fits
                        && k.alg.is_none_or(|a| a == header.alg)
                        && k.key.family() == header.alg.family()
                });
                let mut last =
                    AuthError::InvalidToken("no key of the JWK Set fits the token".into());
                let mut found = None;
                for k in candidates {
                    match jsonwebtoken::decode::<RawClaims>(token, &k.key, &validation(header.alg))
                    {
                        Ok(d) => {
                            found = Some(d);
                            break;
                        }
                        Err(e) => last = invalid(e),
                    }
                }
                found.ok_or(last)?
            }
        };
        let raw = data.claims;
        let mercure = raw.namespaced.or(raw.mercure).unwrap_or_default();
        let too_many = |v: &Option<Vec<String>>| {
            v.as_ref()
                .is_some_and(|v| v.len() > self.max_claim_selectors)
        };
        if too_many(&mercure.publish) || too_many(&mercure.subscribe) {
            return Err(AuthError::TooManyClaimSelectors);
        }
        Ok(Claims {
            publish: mercure.publish,
            subscribe: mercure.subscribe,
            payload: mercure.payload.filter(|p| !p.is_null()),
            expires_at: raw
                .exp
                .and_then(|e| e.as_u64().or_else(|| e.as_f64().map(|f| f as u64))),
        })
    }
}

fn set_key(jwk: &Jwk) -> Result<SetKey, KeyError> {
    let key = DecodingKey::from_jwk(jwk).map_err(|e| KeyError(format!("unusable JWK: {e}")))?;
    let alg = match &jwk.common.key_algorithm {
        Some(ka) => Some(
            Algorithm::from_str(&ka.to_string())
                .map_err(|_| KeyError(format!("the JWK algorithm {ka} cannot sign JWTs")))?,
        ),
        None => None,
    };
    Ok(SetKey {
        kid: jwk.common.key_id.clone(),
        alg,
        key,
    })
}

/// What a token must satisfy: exactly `alg`; `exp` and `nbf` valid when present; no
/// claim required; the audience not checked (Mercure 0.x tokens carry none).
fn validation(alg: Algorithm) -> Validation {
    let mut v = Validation::new(alg);
    v.required_spec_claims = HashSet::new();
    v.leeway = 0;
    v.validate_exp = true;
    v.validate_nbf = true;
    v.validate_aud = false;
    v
}

#[derive(Deserialize)]
struct RawClaims {
    #[serde(default)]
    mercure: Option<MercureClaim>,
    /// The namespaced form some issuers use; it wins when present, as in the reference hub.
    #[serde(default, rename = "https://mercure.rocks/")]
    namespaced: Option<MercureClaim>,
    #[serde(default)]
    exp: Option<serde_json::Number>,
}

#[derive(Deserialize, Default)]
struct MercureClaim {
    #[serde(default)]
    publish: Option<Vec<String>>,
    #[serde(default)]
    subscribe: Option<Vec<String>>,
    #[serde(default)]
    payload: Option<serde_json::Value>,
}
