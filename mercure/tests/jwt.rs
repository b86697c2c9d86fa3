//! Token verification: each accepted algorithm with a real key, and each way a token must
//! be refused (`alg: none`, expired, not yet valid, bad signature, a key of the wrong type,
//! a JWK Set key that does not fit).

mod common;

use base64::Engine;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use mercure::jwt::{AuthError, Verifier};
use serde_json::json;

use common::fixture;

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn sign(alg: Algorithm, key: &EncodingKey, kid: Option<&str>, claims: serde_json::Value) -> String {
    let mut header = Header::new(alg);
    header.kid = kid.map(str::to_owned);
    jsonwebtoken::encode(&header, &claims, key).unwrap()
}

fn rsa() -> EncodingKey {
    EncodingKey::from_rsa_pem(fixture("rs256.key").as_bytes()).unwrap()
}

fn ec() -> EncodingKey {
    EncodingKey::from_ec_pem(fixture("es256.key").as_bytes()).unwrap()
}

fn claims() -> serde_json::Value {
    json!({"mercure": {"publish": ["*"], "subscribe": ["https://example.com/{id}"], "payload": {"user": 1}}})
}

fn invalid(r: Result<mercure::Claims, AuthError>) -> bool {
    matches!(r, Err(AuthError::InvalidToken(_)))
}

#[test]
fn hs256_rs256_es256_verify_and_give_the_mercure_claims() {
    let hs = Verifier::from_key(b"secret", "HS256").unwrap();
    let token = sign(
        Algorithm::HS256,
        &EncodingKey::from_secret(b"secret").unwrap(),
        None,
        claims(),
    );
    let c = hs.verify(&token).unwrap();
    assert_eq!(c.publish, Some(vec!["*".to_string()]));
    assert_eq!(
        c.subscribe,
        Some(vec!["https://example.com/{id}".to_string()])
    );
    assert_eq!(c.payload, Some(json!({"user": 1})));
    assert_eq!(c.expires_at, None);

    let rs = Verifier::from_key(fixture("rs256.pub").as_bytes(), "RS256").unwrap();
    assert!(rs
        .verify(&sign(Algorithm::RS256, &rsa(), None, claims()))
        .is_ok());

    let es = Verifier::from_key(fixture("es256.pub").as_bytes(), "ES256").unwrap();
    assert!(es
        .verify(&sign(Algorithm::ES256, &ec(), None, claims()))
        .is_ok());

    // The default algorithm is HS256, as in the reference hub.
    assert!(Verifier::from_key(b"secret", "")
        .unwrap()
        .verify(&token)
        .is_ok());
}

#[test]
fn the_reference_hubs_sample_tokens_are_accepted() {
    // From FrankenPHP's documentation and the conformance tests (no exp, HS256).
    let v = Verifier::from_key(b"!ChangeThisMercureHubJWTSecretKey!", "HS256").unwrap();
    let c = v
        .verify("eyJhbGciOiJIUzI1NiJ9.eyJtZXJjdXJlIjp7InB1Ymxpc2giOlsiKiJdfX0.PXwpfIGng6KObfZlcOXvcnWCJOWTFLtswGI5DZuWSK4")
        .unwrap();
    assert_eq!(c.publish, Some(vec!["*".to_string()]));
    assert_eq!(c.subscribe, None);
}

#[test]
fn alg_none_is_refused() {
    let b64 = |v: serde_json::Value| {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
    };
    let token = format!(
        "{}.{}.",
        b64(json!({"alg": "none", "typ": "JWT"})),
        b64(claims())
    );
    for v in [
        Verifier::from_key(b"secret", "HS256").unwrap(),
        Verifier::from_key(fixture("rs256.pub").as_bytes(), "RS256").unwrap(),
        Verifier::from_jwks_json(&fixture("jwks.json")).unwrap(),
    ] {
        assert!(invalid(v.verify(&token)), "{v:?}");
        // Nor with a signature attached.
        assert!(invalid(v.verify(&format!("{token}c2ln"))));
    }
}

#[test]
fn expired_and_not_yet_valid_tokens_are_refused() {
    let key = EncodingKey::from_secret(b"secret").unwrap();
    let v = Verifier::from_key(b"secret", "HS256").unwrap();
    let mut c = claims();
    c["exp"] = json!(now() - 5);
    assert!(invalid(v.verify(&sign(Algorithm::HS256, &key, None, c))));
    let mut c = claims();
    c["nbf"] = json!(now() + 3600);
    assert!(invalid(v.verify(&sign(Algorithm::HS256, &key, None, c))));
    let mut c = claims();
    c["exp"] = json!(now() + 3600);
    assert_eq!(
        v.verify(&sign(Algorithm::HS256, &key, None, c))
            .unwrap()
            .expires_at,
        Some(now() + 3600)
    );
}

#[test]
fn bad_signatures_are_refused() {
    let v = Verifier::from_key(b"secret", "HS256").unwrap();
    let other = EncodingKey::from_secret(b"other").unwrap();
    assert!(invalid(v.verify(&sign(
        Algorithm::HS256,
        &other,
        None,
        claims()
    ))));
    let rs = Verifier::from_key(fixture("rs256.pub").as_bytes(), "RS256").unwrap();
    let other_rsa = EncodingKey::from_rsa_pem(fixture("rs256-other.key").as_bytes()).unwrap();
    assert!(invalid(rs.verify(&sign(
        Algorithm::RS256,
        &other_rsa,
        None,
        claims()
    ))));
    // A tampered payload.
    let good = sign(Algorithm::RS256, &rsa(), None, claims());
    let mut parts: Vec<&str> = good.split('.').collect();
    let forged = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(json!({"mercure": {"publish": ["*"], "subscribe": ["*"]}}).to_string());
    parts[1] = &forged;
    assert!(invalid(rs.verify(&parts.join("."))));
    // Garbage.
    assert!(invalid(v.verify("not.a.jwt")));
    assert!(invalid(v.verify("")));
}

#[test]
fn keys_of_the_wrong_type_are_refused() {
    // Key confusion: an HMAC token "signed" with the RSA public key's text, sent to a hub
    // expecting RS256.
    let public_pem = fixture("rs256.pub");
    let confused = sign(
        Algorithm::HS256,
        &EncodingKey::from_secret(public_pem.as_bytes()).unwrap(),
        None,
        claims(),
    );
    let rs = Verifier::from_key(public_pem.as_bytes(), "RS256").unwrap();
    assert!(invalid(rs.verify(&confused)));
    // An ES256 token to an RS256 hub, an RS256 one to an ES256 hub.
    assert!(invalid(rs.verify(&sign(
        Algorithm::ES256,
        &ec(),
        None,
        claims()
    ))));
    let es = Verifier::from_key(fixture("es256.pub").as_bytes(), "ES256").unwrap();
    assert!(invalid(es.verify(&sign(
        Algorithm::RS256,
        &rsa(),
        None,
        claims()
    ))));
    // Configuration: a key that is not of the algorithm's type.
    assert!(Verifier::from_key(b"just a secret", "RS256").is_err());
    assert!(Verifier::from_key(fixture("es256.pub").as_bytes(), "RS256").is_err());
    assert!(Verifier::from_key(public_pem.as_bytes(), "ES256").is_err());
    assert!(Verifier::from_key(b"", "HS256").is_err());
    assert!(Verifier::from_key(b"k", "none").is_err());
    assert!(Verifier::from_key(b"k", "XS999").is_err());
}

#[test]
fn jwks_picks_the_key_by_kid_and_algorithm() {
    let v = Verifier::from_jwks_json(&fixture("jwks.json")).unwrap();
    assert!(v
        .verify(&sign(Algorithm::RS256, &rsa(), Some("rsa-1"), claims()))
        .is_ok());
    assert!(v
        .verify(&sign(Algorithm::ES256, &ec(), Some("ec-1"), claims()))
        .is_ok());
    // Without a kid, the keys that fit the algorithm are tried.
    assert!(v
        .verify(&sign(Algorithm::RS256, &rsa(), None, claims()))
        .is_ok());
    // A kid naming a key of another type, an unknown kid, an HMAC token.
    assert!(invalid(v.verify(&sign(
        Algorithm::ES256,
        &ec(),
        Some("rsa-1"),
        claims()
    ))));
    assert!(invalid(v.verify(&sign(
        Algorithm::RS256,
        &rsa(),
        Some("nope"),
        claims()
    ))));
    let hs = sign(
        Algorithm::HS256,
        &EncodingKey::from_secret(b"x").unwrap(),
        None,
        claims(),
    );
    assert!(invalid(v.verify(&hs)));
    // The JWK Set file form.
    let path = format!("{}/tests/fixtures/jwks.json", env!("CARGO_MANIFEST_DIR"));
    assert!(Verifier::from_jwks_file(std::path::Path::new(&path)).is_ok());
    assert!(Verifier::from_jwks_file(std::path::Path::new("/nonexistent.json")).is_err());
    assert!(Verifier::from_jwks_json(r#"{"keys": []}"#).is_err());
    assert!(Verifier::from_jwks_json("not json").is_err());
}

#[test]
fn claim_shapes() {
    let key = EncodingKey::from_secret(b"s").unwrap();
    let v = Verifier::from_key(b"s", "HS256").unwrap();
    // No mercure claim: nothing granted.
    let c = v
        .verify(&sign(Algorithm::HS256, &key, None, json!({"sub": "x"})))
        .unwrap();
    assert_eq!((c.publish, c.subscribe), (None, None));
    // The namespaced claim wins.
    let c = v
        .verify(&sign(
            Algorithm::HS256,
            &key,
            None,
            json!({"mercure": {"publish": ["a"]}, "https://mercure.rocks/": {"publish": ["b"]}}),
        ))
        .unwrap();
    assert_eq!(c.publish, Some(vec!["b".to_string()]));
    // Too many selectors.
    let many: Vec<String> = (0..11).map(|i| i.to_string()).collect();
    let v10 = Verifier::from_key(b"s", "HS256")
        .unwrap()
        .with_max_claim_selectors(10);
    let t = sign(
        Algorithm::HS256,
        &key,
        None,
        json!({"mercure": {"subscribe": many}}),
    );
    assert_eq!(v10.verify(&t), Err(AuthError::TooManyClaimSelectors));
}
