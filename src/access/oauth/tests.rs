//! The verifier against an issuer served in-process (metadata, JWKS and introspection from an axum listener on 127.0.0.1), with tokens minted from the committed test keys.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};

use super::*;

const RSA1: &[u8] = include_bytes!("../../../fixtures/auth/rsa1.pem");
const RSA1_PUBLIC: &[u8] = include_bytes!("../../../fixtures/auth/rsa1.pub.pem");
const RSA2: &[u8] = include_bytes!("../../../fixtures/auth/rsa2.pem");
const EC1: &[u8] = include_bytes!("../../../fixtures/auth/ec1.pem");
const ED1: &[u8] = include_bytes!("../../../fixtures/auth/ed1.pem");

const AUD: &str = "https://backlog.example.com/mcp";
const CLIENT: &str = "orchestra-rs";
const SECRET: &str = "rs secret&=%";

/// A signing key of the test issuer and its public JWK.
struct Signer {
    kid: &'static str,
    alg: Algorithm,
    key: EncodingKey,
}

fn signer(kid: &'static str, alg: Algorithm, pem: &[u8]) -> Signer {
    let key = match alg {
        Algorithm::ES256 | Algorithm::ES384 => EncodingKey::from_ec_pem(pem),
        Algorithm::EdDSA => EncodingKey::from_ed_pem(pem),
        _ => EncodingKey::from_rsa_pem(pem),
    }
    .unwrap();
    Signer { kid, alg, key }
}

impl Signer {
    /// The public JWK, without an `alg` (which JWKS members may omit).
    fn jwk(&self) -> Value {
        let mut jwk = Jwk::from_encoding_key(&self.key, self.alg).unwrap();
        jwk.common.key_id = Some(self.kid.to_owned());
        jwk.common.key_algorithm = None;
        serde_json::to_value(jwk).unwrap()
    }

    /// An access token as oidc-provider writes one (`typ` `at+jwt`), with
    /// `patch` applied to the claims (a `null` member removes one).
    fn mint(&self, issuer: &str, patch: Value) -> String {
        self.mint_with(self.header(), &claims(issuer, patch))
    }

    fn header(&self) -> Header {
        let mut header = Header::new(self.alg);
        header.kid = Some(self.kid.to_owned());
        header.typ = Some("at+jwt".to_owned());
        header
    }

    fn mint_with(&self, header: Header, claims: &Value) -> String {
        jsonwebtoken::encode(&header, claims, &self.key).unwrap()
    }
}

fn claims(issuer: &str, patch: Value) -> Value {
    let now = now();
    let mut claims = json!({
        "iss": issuer,
        "sub": "alice",
        "aud": AUD,
        "iat": now,
        "exp": now + 300,
        "client_id": "cli",
        "scope": "orchestra:read orchestra:write",
        "jti": "j1",
    });
    for (name, value) in patch.as_object().unwrap() {
        if value.is_null() {
            claims.as_object_mut().unwrap().remove(name);
        } else {
            claims[name] = value.clone();
        }
    }
    claims
}

/// The test issuer: what it serves and how often it was asked.
struct Idp {
    issuer: String,
    state: Arc<IdpState>,
}

struct IdpState {
    issuer: String,
    /// The path of the one metadata document served (RFC 8414's or OIDC's).
    metadata_path: String,
    /// The `issuer` the metadata names.
    metadata_issuer: Mutex<String>,
    jwks: Mutex<Vec<Value>>,
    jwks_delay: Mutex<Duration>,
    /// token → RFC 7662 answer; any other token is inactive.
    answers: Mutex<HashMap<String, Value>>,
    metadata_hits: AtomicUsize,
    jwks_hits: AtomicUsize,
    introspection_hits: AtomicUsize,
}

impl Idp {
    /// An issuer at `http://127.0.0.1:PORT` serving its RFC 8414 document.
    async fn start(keys: &[&Signer]) -> Idp {
        Idp::start_at("", true, keys).await
    }

    /// An issuer whose URL has `path`, serving RFC 8414's document (`oauth`)
    /// or else only OpenID Connect's.
    async fn start_at(path: &str, oauth: bool, keys: &[&Signer]) -> Idp {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let issuer = format!("http://{}{path}", listener.local_addr().unwrap());
        let metadata_path = if oauth {
            format!("/.well-known/oauth-authorization-server{path}")
        } else {
            format!("{path}/.well-known/openid-configuration")
        };
        let state = Arc::new(IdpState {
            issuer: issuer.clone(),
            metadata_path,
            metadata_issuer: Mutex::new(issuer.clone()),
            jwks: Mutex::new(keys.iter().map(|k| k.jwk()).collect()),
            jwks_delay: Mutex::new(Duration::ZERO),
            answers: Mutex::default(),
            metadata_hits: AtomicUsize::new(0),
            jwks_hits: AtomicUsize::new(0),
            introspection_hits: AtomicUsize::new(0),
        });
        let app = Router::new().fallback(serve).with_state(state.clone());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Idp { issuer, state }
    }

    fn config(&self) -> OAuthConfig {
        OAuthConfig::new(&self.issuer, AUD)
    }

    fn verifier(&self) -> Verifier {
        Verifier::new(self.config()).unwrap()
    }

    fn introspecting(&self) -> Verifier {
        Verifier::new(OAuthConfig {
            introspection: Some(Introspection {
                url: format!("{}/introspect", self.issuer),
                client_id: CLIENT.into(),
                client_secret: SECRET.into(),
            }),
            ..self.config()
        })
        .unwrap()
    }

    fn publish(&self, keys: &[&Signer]) {
        *self.state.jwks.lock().unwrap() = keys.iter().map(|k| k.jwk()).collect();
    }

    fn answer(&self, token: &str, answer: Value) {
        self.state
            .answers
            .lock()
            .unwrap()
            .insert(token.to_owned(), answer);
    }

    fn jwks_hits(&self) -> usize {
        self.state.jwks_hits.load(Ordering::SeqCst)
    }

    fn introspection_hits(&self) -> usize {
        self.state.introspection_hits.load(Ordering::SeqCst)
    }
}

async fn serve(
    State(idp): State<Arc<IdpState>>,
    uri: Uri,
    headers: HeaderMap,
    body: String,
) -> Response {
    let path = uri.path();
    if path == idp.metadata_path {
        idp.metadata_hits.fetch_add(1, Ordering::SeqCst);
        let issuer = idp.metadata_issuer.lock().unwrap().clone();
        return axum::Json(json!({
            "issuer": issuer,
            "jwks_uri": format!("{}/jwks", idp.issuer.trim_end_matches('/')),
            "introspection_endpoint": format!("{}/introspect", idp.issuer),
        }))
        .into_response();
    }
    if path.ends_with("/jwks") {
        idp.jwks_hits.fetch_add(1, Ordering::SeqCst);
        let delay = *idp.jwks_delay.lock().unwrap();
        tokio::time::sleep(delay).await;
        let keys = idp.jwks.lock().unwrap().clone();
        return axum::Json(json!({ "keys": keys })).into_response();
    }
    if path.ends_with("/introspect") {
        idp.introspection_hits.fetch_add(1, Ordering::SeqCst);
        let credentials = format!(
            "{}:{}",
            CLIENT,
            percent_encoding::utf8_percent_encode(SECRET, percent_encoding::NON_ALPHANUMERIC)
        );
        let expected = format!("Basic {}", STANDARD.encode(credentials));
        if headers.get("authorization").and_then(|v| v.to_str().ok()) != Some(&expected) {
            return StatusCode::UNAUTHORIZED.into_response();
        }
        let form: HashMap<String, String> = body
            .split('&')
            .filter_map(|pair| pair.split_once('='))
            .map(|(k, v)| {
                let decode = |s: &str| {
                    percent_encoding::percent_decode_str(&s.replace('+', " "))
                        .decode_utf8()
                        .unwrap()
                        .into_owned()
                };
                (decode(k), decode(v))
            })
            .collect();
        let token = form.get("token").cloned().unwrap_or_default();
        // As oidc-provider does for anything shaped like a JWT.
        if token.contains('.') {
            let error = json!({
                "error": "unsupported_token_type",
                "error_description": format!("{token} cannot be introspected"),
            });
            return (StatusCode::BAD_REQUEST, axum::Json(error)).into_response();
        }
        let answer = idp.answers.lock().unwrap().get(&token).cloned();
        return axum::Json(answer.unwrap_or(json!({ "active": false }))).into_response();
    }
    StatusCode::NOT_FOUND.into_response()
}

/// Verifies `token`, and checks that a rejection's reason quotes no part of
/// it.
async fn verify(verifier: &Verifier, token: &str) -> Result<Claims, Rejection> {
    let result = verifier.verify(token).await;
    if let Err(Rejection::Invalid(reason) | Rejection::Unavailable(reason)) = &result {
        for part in token.split('.').filter(|p| p.len() >= 6) {
            assert!(!reason.contains(part), "{reason:?} quotes the token");
        }
    }
    result
}

#[track_caller]
fn assert_invalid(result: Result<Claims, Rejection>, why: &str) {
    match result {
        Err(Rejection::Invalid(reason)) => {
            assert!(reason.contains(why), "{reason:?} does not say {why:?}")
        }
        other => panic!("expected Invalid({why:?}), got {other:?}"),
    }
}

#[track_caller]
fn assert_unavailable(result: Result<Claims, Rejection>, why: &str) {
    match result {
        Err(Rejection::Unavailable(reason)) => {
            assert!(reason.contains(why), "{reason:?} does not say {why:?}")
        }
        other => panic!("expected Unavailable({why:?}), got {other:?}"),
    }
}

/// A JWS with the given header and claims and a junk signature.
fn forged(header: Value, claims: &Value) -> String {
    let part = |v: &Value| URL_SAFE_NO_PAD.encode(serde_json::to_vec(v).unwrap());
    format!(
        "{}.{}.{}",
        part(&header),
        part(claims),
        URL_SAFE_NO_PAD.encode(b"sig")
    )
}

#[tokio::test]
async fn valid_tokens_of_every_key_type_pass() {
    let rsa = signer("rsa1", Algorithm::RS256, RSA1);
    let ec = signer("ec1", Algorithm::ES256, EC1);
    let ed = signer("ed1", Algorithm::EdDSA, ED1);
    let idp = Idp::start(&[&rsa, &ec, &ed]).await;
    let verifier = idp.verifier();
    for key in [&rsa, &ec, &ed] {
        let claims = verify(&verifier, &key.mint(&idp.issuer, json!({})))
            .await
            .unwrap_or_else(|e| panic!("{:?}: {e}", key.alg));
        assert_eq!(
            claims,
            Claims {
                issuer: idp.issuer.clone(),
                subject: Some("alice".into()),
                client_id: Some("cli".into()),
                scopes: vec!["orchestra:read".into(), "orchestra:write".into()],
                expires_at: claims.expires_at,
            }
        );
        assert!(claims.expires_at > now() + 200);
    }
    // RSA-PSS with the same RSA key, which names no `alg` of its own.
    let pss = signer("rsa1", Algorithm::PS256, RSA1);
    assert!(
        verify(&verifier, &pss.mint(&idp.issuer, json!({})))
            .await
            .is_ok()
    );
    // One fetch of the metadata and of the keys served all of them.
    assert_eq!(idp.state.metadata_hits.load(Ordering::SeqCst), 1);
    assert_eq!(idp.jwks_hits(), 1);
}

#[tokio::test]
async fn claims_rules() {
    let rsa = signer("rsa1", Algorithm::RS256, RSA1);
    let idp = Idp::start(&[&rsa]).await;
    let verifier = idp.verifier();
    let now = now();
    // (claims patch, Ok(()) or the reason's words)
    let cases: Vec<(Value, Result<(), &str>)> = vec![
        (json!({ "exp": now - 120 }), Err("expired")),
        (json!({ "exp": now - 30 }), Ok(())),
        (json!({ "exp": null }), Err("no exp claim")),
        (json!({ "exp": "tomorrow" }), Err("malformed")),
        (json!({ "nbf": now + 120 }), Err("not valid yet")),
        (json!({ "nbf": now + 30 }), Ok(())),
        (
            json!({ "aud": "https://other.example.com/mcp" }),
            Err("aud"),
        ),
        (
            json!({ "aud": ["https://other.example.com/mcp", AUD] }),
            Ok(()),
        ),
        (
            json!({ "aud": ["https://other.example.com/mcp"] }),
            Err("aud"),
        ),
        (
            json!({ "aud": "https://backlog.example.com/mcp/" }),
            Err("aud"),
        ),
        (json!({ "aud": null }), Err("no aud claim")),
        (json!({ "iss": "http://127.0.0.1:1" }), Err("wrong issuer")),
        (json!({ "iss": null }), Err("no iss claim")),
        (json!({ "sub": null }), Err("no sub claim")),
        (json!({ "scope": 7 }), Err("malformed")),
    ];
    for (patch, expected) in cases {
        let result = verify(&verifier, &rsa.mint(&idp.issuer, patch.clone())).await;
        match expected {
            Ok(()) => assert!(result.is_ok(), "{patch}: {result:?}"),
            Err(why) => assert_invalid(result, why),
        }
    }
}

#[tokio::test]
async fn scopes_and_client_id_come_from_their_alternatives() {
    let rsa = signer("rsa1", Algorithm::RS256, RSA1);
    let idp = Idp::start(&[&rsa]).await;
    let verifier = idp.verifier();
    let cases: Vec<(Value, &[&str], Option<&str>)> = vec![
        (json!({ "scope": null }), &[], Some("cli")),
        (
            json!({ "scope": null, "scp": ["a", "b"] }),
            &["a", "b"],
            Some("cli"),
        ),
        (
            json!({ "scope": null, "scp": "a b" }),
            &["a", "b"],
            Some("cli"),
        ),
        (
            json!({ "scope": "a  b a", "scp": ["b", "c"] }),
            &["a", "b", "c"],
            Some("cli"),
        ),
        (
            json!({ "client_id": null, "azp": "web" }),
            &["orchestra:read", "orchestra:write"],
            Some("web"),
        ),
        (
            json!({ "client_id": null }),
            &["orchestra:read", "orchestra:write"],
            None,
        ),
    ];
    for (patch, scopes, client_id) in cases {
        let claims = verify(&verifier, &rsa.mint(&idp.issuer, patch.clone()))
            .await
            .unwrap();
        assert_eq!(claims.scopes, scopes, "{patch}");
        assert_eq!(claims.client_id.as_deref(), client_id, "{patch}");
    }
}

#[tokio::test]
async fn extra_audiences_are_accepted() {
    let rsa = signer("rsa1", Algorithm::RS256, RSA1);
    let idp = Idp::start(&[&rsa]).await;
    let verifier = Verifier::new(OAuthConfig {
        audiences: vec!["api://orchestra".into()],
        ..idp.config()
    })
    .unwrap();
    let token = rsa.mint(&idp.issuer, json!({ "aud": "api://orchestra" }));
    assert!(verify(&verifier, &token).await.is_ok());
    let token = rsa.mint(&idp.issuer, json!({ "aud": AUD }));
    assert!(verify(&verifier, &token).await.is_ok());
}

#[tokio::test]
async fn typ_must_be_an_access_token_or_plain_jwt() {
    let rsa = signer("rsa1", Algorithm::RS256, RSA1);
    let idp = Idp::start(&[&rsa]).await;
    let verifier = idp.verifier();
    let claims = claims(&idp.issuer, json!({}));
    let cases = [
        (Some("at+jwt"), true),
        (Some("application/at+jwt"), true),
        (Some("AT+JWT"), true),
        (Some("JWT"), true),
        (Some("jwt"), true),
        (None, true),
        (Some("id+jwt"), false),
        (Some("logout+jwt"), false),
        (Some("dpop+jwt"), false),
        (Some("JOSE"), false),
    ];
    for (typ, accepted) in cases {
        let mut header = rsa.header();
        header.typ = typ.map(str::to_owned);
        let result = verify(&verifier, &rsa.mint_with(header, &claims)).await;
        if accepted {
            assert!(result.is_ok(), "{typ:?}: {result:?}");
        } else {
            assert_invalid(result, "typ");
        }
    }
}

#[tokio::test]
async fn header_rules() {
    let rsa = signer("rsa1", Algorithm::RS256, RSA1);
    let ec = signer("ec1", Algorithm::ES256, EC1);
    let idp = Idp::start(&[&rsa, &ec]).await;
    let verifier = idp.verifier();
    let claims = claims(&idp.issuer, json!({}));

    // No kid.
    let mut header = rsa.header();
    header.kid = None;
    assert_invalid(
        verify(&verifier, &rsa.mint_with(header, &claims)).await,
        "no kid",
    );

    // alg none, with and without a signature.
    let none = forged(
        json!({ "alg": "none", "typ": "JWT", "kid": "rsa1" }),
        &claims,
    );
    assert_invalid(verify(&verifier, &none).await, "alg unknown");
    let unsigned = none.rsplit_once('.').unwrap().0.to_owned() + ".";
    assert_invalid(verify(&verifier, &unsigned).await, "introspection");

    // Algorithm confusion: HS256 keyed with the RSA public key's PEM bytes.
    let hmac = Signer {
        kid: "rsa1",
        alg: Algorithm::HS256,
        key: EncodingKey::from_secret(RSA1_PUBLIC).unwrap(),
    };
    assert_invalid(
        verify(&verifier, &hmac.mint_with(hmac.header(), &claims)).await,
        "HS256",
    );

    // ES256 naming the RSA key, RS256 naming the EC key.
    let mut header = ec.header();
    header.kid = Some("rsa1".into());
    assert_invalid(
        verify(&verifier, &ec.mint_with(header, &claims)).await,
        "does not fit",
    );
    let mut header = rsa.header();
    header.kid = Some("ec1".into());
    assert_invalid(
        verify(&verifier, &rsa.mint_with(header, &claims)).await,
        "does not fit",
    );

    // Signed by a key the issuer does not publish, naming one it does.
    let other = signer("rsa1", Algorithm::RS256, RSA2);
    assert_invalid(
        verify(&verifier, &other.mint(&idp.issuer, json!({}))).await,
        "bad signature",
    );

    // A tampered payload.
    let token = rsa.mint(&idp.issuer, json!({}));
    let mut parts: Vec<String> = token.split('.').map(str::to_owned).collect();
    let mut raw = claims.clone();
    raw["sub"] = json!("mallory");
    parts[1] = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&raw).unwrap());
    assert_invalid(verify(&verifier, &parts.join(".")).await, "bad signature");

    // An unknown `crit` extension.
    let mut header = rsa.header();
    header.crit = Some(vec!["exp".into()]);
    assert_invalid(
        verify(&verifier, &rsa.mint_with(header, &claims)).await,
        "malformed",
    );
}

#[tokio::test]
async fn a_key_published_for_one_algorithm_checks_only_that_one() {
    let rsa = signer("rsa1", Algorithm::RS256, RSA1);
    let idp = Idp::start(&[]).await;
    let mut jwk = rsa.jwk();
    jwk["alg"] = json!("RS256");
    let mut encryption = signer("enc", Algorithm::RS256, RSA2).jwk();
    encryption["use"] = json!("enc");
    let hmac = json!({ "kty": "oct", "kid": "oct", "k": URL_SAFE_NO_PAD.encode(RSA1_PUBLIC) });
    *idp.state.jwks.lock().unwrap() = vec![
        jwk,
        encryption,
        hmac,
        json!({ "kty": "EC", "crv": "secp256k1", "kid": "k1", "x": "AA", "y": "AA" }),
    ];
    let verifier = idp.verifier();
    assert!(
        verify(&verifier, &rsa.mint(&idp.issuer, json!({})))
            .await
            .is_ok()
    );
    let pss = signer("rsa1", Algorithm::PS256, RSA1);
    assert_invalid(
        verify(&verifier, &pss.mint(&idp.issuer, json!({}))).await,
        "does not fit",
    );
    // The encryption key and the symmetric key are not in the set.
    let enc = signer("enc", Algorithm::RS256, RSA2);
    assert_invalid(
        verify(&verifier, &enc.mint(&idp.issuer, json!({}))).await,
        "kid",
    );
    let oct = Signer {
        kid: "oct",
        alg: Algorithm::HS256,
        key: EncodingKey::from_secret(RSA1_PUBLIC).unwrap(),
    };
    assert_invalid(
        verify(&verifier, &oct.mint(&idp.issuer, json!({}))).await,
        "HS256",
    );
}

#[tokio::test]
async fn an_unknown_kid_fetches_the_rotated_set_which_replaces_the_old() {
    let old = signer("rsa1", Algorithm::RS256, RSA1);
    let new = signer("rsa2", Algorithm::RS256, RSA2);
    let idp = Idp::start(&[&old]).await;
    let verifier = Verifier::new(OAuthConfig {
        jwks_min_refresh: Duration::ZERO,
        ..idp.config()
    })
    .unwrap();
    let old_token = old.mint(&idp.issuer, json!({}));
    assert!(verify(&verifier, &old_token).await.is_ok());
    assert_eq!(idp.jwks_hits(), 1);

    idp.publish(&[&new]);
    assert!(
        verify(&verifier, &new.mint(&idp.issuer, json!({})))
            .await
            .is_ok()
    );
    assert_eq!(idp.jwks_hits(), 2);
    // The old key is no longer published: its tokens fail, though the set
    // they were checked against is fresh.
    assert_invalid(verify(&verifier, &old_token).await, "no key for its kid");
}

#[tokio::test]
async fn a_verified_token_is_checked_again_when_its_kid_names_another_key() {
    // The same kid, first for rsa1's key, then for rsa2's: a token signed
    // by rsa1 and verified (and remembered) before fails after the set is
    // fetched again, as a token never seen would.
    let first = signer("k", Algorithm::RS256, RSA1);
    let second = signer("k", Algorithm::RS256, RSA2);
    let idp = Idp::start(&[&first]).await;
    let verifier = Verifier::new(OAuthConfig {
        jwks_max_age: Duration::from_secs(1),
        jwks_min_refresh: Duration::ZERO,
        ..idp.config()
    })
    .unwrap();
    let token = first.mint(&idp.issuer, json!({}));
    for _ in 0..3 {
        assert!(verify(&verifier, &token).await.is_ok());
    }
    assert_eq!(idp.jwks_hits(), 1);
    idp.publish(&[&second]);
    tokio::time::sleep(Duration::from_millis(1050)).await;
    assert_invalid(verify(&verifier, &token).await, "signature");
    assert_eq!(idp.jwks_hits(), 2);
    assert!(
        verify(&verifier, &second.mint(&idp.issuer, json!({})))
            .await
            .is_ok()
    );
}

#[tokio::test]
async fn unknown_kids_fetch_at_most_once_per_interval() {
    let rsa = signer("rsa1", Algorithm::RS256, RSA1);
    let idp = Idp::start(&[&rsa]).await;
    let verifier = Verifier::new(OAuthConfig {
        jwks_min_refresh: Duration::from_secs(1),
        ..idp.config()
    })
    .unwrap();
    // Minted beforehand (RSA signing is slow in a debug build); the kid is
    // looked up before the signature is checked, so junk ones need none.
    let token = rsa.mint(&idp.issuer, json!({}));
    let claims = claims(&idp.issuer, json!({}));
    let junk = |n: usize| {
        forged(
            json!({ "alg": "RS256", "kid": format!("junk{n}") }),
            &claims,
        )
    };
    assert!(verify(&verifier, &token).await.is_ok());
    assert_eq!(idp.jwks_hits(), 1);
    for n in 0..20 {
        assert_invalid(verify(&verifier, &junk(n)).await, "no key for its kid");
    }
    assert_eq!(idp.jwks_hits(), 1);
    tokio::time::sleep(Duration::from_millis(1050)).await;
    for n in 20..40 {
        assert_invalid(verify(&verifier, &junk(n)).await, "no key for its kid");
    }
    assert_eq!(idp.jwks_hits(), 2);
    // Known keys are served from the cache meanwhile.
    assert!(verify(&verifier, &token).await.is_ok());
    assert_eq!(idp.jwks_hits(), 2);
}

#[tokio::test]
async fn the_default_interval_is_thirty_seconds() {
    let rsa = signer("rsa1", Algorithm::RS256, RSA1);
    let idp = Idp::start(&[&rsa]).await;
    let verifier = idp.verifier();
    assert!(
        verify(&verifier, &rsa.mint(&idp.issuer, json!({})))
            .await
            .is_ok()
    );
    let mut header = rsa.header();
    header.kid = Some("junk".into());
    let junk = rsa.mint_with(header, &claims(&idp.issuer, json!({})));
    assert_invalid(verify(&verifier, &junk).await, "less than 30s ago");
    assert_eq!(idp.jwks_hits(), 1);
}

#[tokio::test]
async fn concurrent_verifications_share_one_fetch() {
    let rsa = signer("rsa1", Algorithm::RS256, RSA1);
    let idp = Idp::start(&[&rsa]).await;
    *idp.state.jwks_delay.lock().unwrap() = Duration::from_millis(200);
    let verifier = idp.verifier();
    let token = rsa.mint(&idp.issuer, json!({}));
    let tasks: Vec<_> = (0..16)
        .map(|_| {
            let verifier = verifier.clone();
            let token = token.clone();
            tokio::spawn(async move { verifier.verify(&token).await })
        })
        .collect();
    for task in tasks {
        assert!(task.await.unwrap().is_ok());
    }
    assert_eq!(idp.state.metadata_hits.load(Ordering::SeqCst), 1);
    assert_eq!(idp.jwks_hits(), 1);
}

#[tokio::test]
async fn the_set_is_fetched_again_after_its_max_age() {
    let rsa = signer("rsa1", Algorithm::RS256, RSA1);
    let idp = Idp::start(&[&rsa]).await;
    let verifier = Verifier::new(OAuthConfig {
        jwks_max_age: Duration::from_secs(1),
        jwks_min_refresh: Duration::ZERO,
        ..idp.config()
    })
    .unwrap();
    let token = rsa.mint(&idp.issuer, json!({}));
    assert!(verify(&verifier, &token).await.is_ok());
    assert!(verify(&verifier, &token).await.is_ok());
    assert_eq!(idp.jwks_hits(), 1);
    tokio::time::sleep(Duration::from_millis(1050)).await;
    // The issuer withdrew the key meanwhile: the stale set is not used.
    idp.publish(&[]);
    assert_invalid(verify(&verifier, &token).await, "no key for its kid");
    assert_eq!(idp.jwks_hits(), 2);
}

#[tokio::test]
async fn metadata_for_another_issuer_is_refused() {
    let rsa = signer("rsa1", Algorithm::RS256, RSA1);
    let idp = Idp::start(&[&rsa]).await;
    *idp.state.metadata_issuer.lock().unwrap() = format!("{}/", idp.issuer);
    let verifier = idp.verifier();
    let result = verify(&verifier, &rsa.mint(&idp.issuer, json!({}))).await;
    assert_unavailable(result, "is for issuer");
    assert_eq!(idp.jwks_hits(), 0);
}

#[tokio::test]
async fn an_issuer_with_a_path_is_found_through_openid_configuration() {
    let rsa = signer("rsa1", Algorithm::RS256, RSA1);
    let idp = Idp::start_at("/realms/team", false, &[&rsa]).await;
    let verifier = idp.verifier();
    assert!(
        verify(&verifier, &rsa.mint(&idp.issuer, json!({})))
            .await
            .is_ok()
    );

    let idp = Idp::start_at("/realms/team", true, &[&rsa]).await;
    let verifier = idp.verifier();
    assert!(
        verify(&verifier, &rsa.mint(&idp.issuer, json!({})))
            .await
            .is_ok()
    );
    assert_eq!(idp.state.metadata_hits.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn an_unreachable_issuer_is_unavailable_and_not_hammered() {
    let rsa = signer("rsa1", Algorithm::RS256, RSA1);
    // A port nobody listens on.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let issuer = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let verifier = Verifier::new(OAuthConfig::new(&issuer, AUD)).unwrap();
    let token = rsa.mint(&issuer, json!({}));
    assert_unavailable(verify(&verifier, &token).await, "no metadata");
    // Within the interval the failure is answered without calling again.
    assert_unavailable(verify(&verifier, &token).await, "not retried before 30s");
}

#[test]
fn plain_http_is_for_loopback_issuers_only() {
    let cases = [
        ("https://idp.example.com", true),
        ("https://idp.example.com/realms/team", true),
        ("http://127.0.0.1:9000", true),
        ("http://127.1.2.3", true),
        ("http://localhost:9000", true),
        ("http://[::1]:9000", true),
        ("http://idp.example.com", false),
        ("http://10.0.0.1", false),
        ("http://localhost.example.com", false),
        ("ftp://idp.example.com", false),
        ("idp.example.com", false),
        ("https://user@idp.example.com", false),
        ("https://idp.example.com?tenant=1", false),
        ("https://idp.example.com#x", false),
    ];
    for (issuer, accepted) in cases {
        let result = Verifier::new(OAuthConfig::new(issuer, AUD));
        assert_eq!(result.is_ok(), accepted, "{issuer}: {result:?}");
    }
    let error = Verifier::new(OAuthConfig::new("http://idp.example.com", AUD)).unwrap_err();
    assert!(format!("{error:#}").contains("use https"), "{error:#}");

    let introspecting = |url: &str| {
        Verifier::new(OAuthConfig {
            introspection: Some(Introspection {
                url: url.into(),
                client_id: CLIENT.into(),
                client_secret: SECRET.into(),
            }),
            ..OAuthConfig::new("https://idp.example.com", AUD)
        })
    };
    assert!(introspecting("https://idp.example.com/introspect").is_ok());
    assert!(introspecting("http://idp.example.com/introspect").is_err());
}

#[test]
fn no_secret_in_debug_output() {
    let config = OAuthConfig {
        introspection: Some(Introspection {
            url: "https://idp.example.com/introspect".into(),
            client_id: CLIENT.into(),
            client_secret: SECRET.into(),
        }),
        ..OAuthConfig::new("https://idp.example.com", AUD)
    };
    assert!(!format!("{config:?}").contains(SECRET));
    let verifier = Verifier::new(config).unwrap();
    assert!(!format!("{verifier:?}").contains(SECRET));
}

#[tokio::test]
async fn opaque_tokens_without_introspection_are_invalid() {
    let idp = Idp::start(&[]).await;
    let verifier = idp.verifier();
    for token in ["opaque-token-1", "a.b", "a.b.c.d.e", "a.b.c!", ""] {
        assert_invalid(verify(&verifier, token).await, "");
    }
    assert_eq!(idp.introspection_hits(), 0);
    assert_eq!(idp.jwks_hits(), 0);
}

#[tokio::test]
async fn introspection_answers_are_checked() {
    let idp = Idp::start(&[]).await;
    let verifier = idp.introspecting();
    let now = now();
    let active = json!({
        "active": true, "client_id": "writer", "scope": "orchestra:read orchestra:search",
        "iss": idp.issuer, "aud": AUD, "exp": now + 300, "token_type": "Bearer",
    });
    let with = |patch: Value| {
        let mut answer = active.clone();
        for (name, value) in patch.as_object().unwrap() {
            if value.is_null() {
                answer.as_object_mut().unwrap().remove(name);
            } else {
                answer[name] = value.clone();
            }
        }
        answer
    };
    // (token, answer, Ok(()) or the reason's words)
    let cases: Vec<(&str, Value, Result<(), &str>)> = vec![
        ("opaque-active", active.clone(), Ok(())),
        (
            "opaque-bare",
            json!({ "active": true, "sub": "bob", "aud": AUD }),
            Ok(()),
        ),
        (
            "opaque-no-aud",
            json!({ "active": true, "sub": "bob" }),
            Err("no audience"),
        ),
        (
            "opaque-aud-list",
            with(json!({ "aud": ["x", AUD] })),
            Ok(()),
        ),
        (
            "opaque-inactive",
            json!({ "active": false }),
            Err("inactive"),
        ),
        (
            "opaque-no-active",
            json!({ "client_id": "writer" }),
            Err("inactive"),
        ),
        (
            "opaque-expired",
            with(json!({ "exp": now - 5 })),
            Err("expired"),
        ),
        (
            "opaque-aud",
            with(json!({ "aud": "https://other.example.com/mcp" })),
            Err("aud"),
        ),
        (
            "opaque-aud-list-wrong",
            with(json!({ "aud": ["x", "y"] })),
            Err("aud"),
        ),
        (
            "opaque-iss",
            with(json!({ "iss": "https://idp.example.com" })),
            Err("wrong issuer"),
        ),
        (
            "opaque-nbf",
            with(json!({ "nbf": now + 600 })),
            Err("not valid yet"),
        ),
        (
            "opaque-nobody",
            json!({ "active": true, "aud": AUD }),
            Err("neither sub nor client_id"),
        ),
    ];
    for (token, answer, _) in &cases {
        idp.answer(token, answer.clone());
    }
    for (token, _, expected) in &cases {
        let result = verify(&verifier, token).await;
        match expected {
            Ok(()) => assert!(result.is_ok(), "{token}: {result:?}"),
            Err(why) => assert_invalid(result, why),
        }
    }
    let claims = verify(&verifier, "opaque-active").await.unwrap();
    assert_eq!(
        claims,
        Claims {
            issuer: idp.issuer.clone(),
            // No `sub`: a client's own token, named by its client id.
            subject: None,
            client_id: Some("writer".into()),
            scopes: vec!["orchestra:read".into(), "orchestra:search".into()],
            expires_at: now + 300,
        }
    );
    let bare = verify(&verifier, "opaque-bare").await.unwrap();
    assert_eq!(
        (bare.issuer.as_str(), bare.subject.as_deref()),
        (idp.issuer.as_str(), Some("bob"))
    );
    assert!(bare.scopes.is_empty());
    // A token the server does not know is inactive.
    assert_invalid(verify(&verifier, "opaque-unknown").await, "inactive");
    // One it refuses to introspect (400) is invalid, the refusal cached.
    let hits = idp.introspection_hits();
    for _ in 0..2 {
        let result = verify(&verifier, "five.base64url.parts.make.a-JWE").await;
        assert_invalid(result, "status 400 (unsupported_token_type)");
    }
    assert_eq!(idp.introspection_hits(), hits + 1);
}

#[tokio::test]
async fn introspection_answers_are_cached_by_the_token_hash() {
    let idp = Idp::start(&[]).await;
    let verifier = idp.introspecting();
    let now = now();
    idp.answer(
        "opaque-active",
        json!({ "active": true, "client_id": "writer", "aud": AUD, "exp": now + 300 }),
    );
    for _ in 0..3 {
        assert!(verify(&verifier, "opaque-active").await.is_ok());
    }
    assert_eq!(idp.introspection_hits(), 1);
    // A refusal is cached too.
    for _ in 0..3 {
        assert_invalid(verify(&verifier, "opaque-unknown").await, "inactive");
    }
    assert_eq!(idp.introspection_hits(), 2);
    // Not beyond the token's `exp`: an answer that expires at once is asked
    // again, and then refused.
    idp.answer(
        "opaque-short",
        json!({ "active": true, "client_id": "writer", "aud": AUD, "exp": now + 1 }),
    );
    assert!(verify(&verifier, "opaque-short").await.is_ok());
    tokio::time::sleep(Duration::from_millis(2100)).await;
    assert_invalid(verify(&verifier, "opaque-short").await, "expired");
    assert_eq!(idp.introspection_hits(), 4);
    // The clones of a verifier share the cache.
    assert!(verify(&verifier.clone(), "opaque-active").await.is_ok());
    assert_eq!(idp.introspection_hits(), 4);
}

#[tokio::test]
async fn introspection_that_refuses_our_credentials_is_unavailable() {
    let idp = Idp::start(&[]).await;
    let verifier = Verifier::new(OAuthConfig {
        introspection: Some(Introspection {
            url: format!("{}/introspect", idp.issuer),
            client_id: CLIENT.into(),
            client_secret: "wrong".into(),
        }),
        ..idp.config()
    })
    .unwrap();
    assert_unavailable(verify(&verifier, "opaque-active").await, "401");
    // Not cached: the next call asks again.
    assert_unavailable(verify(&verifier, "opaque-active").await, "401");
    assert_eq!(idp.introspection_hits(), 2);
}
