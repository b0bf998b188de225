//! The issuer's signing keys: `jwks_uri` discovered from its metadata, the key set cached for at most a max age, refetched for an unknown `kid` at most once per interval, one fetch at a time.
//!
//! A fetched set replaces the cached one whole, so a key the issuer no
//! longer publishes stops working at the next fetch. Verifications that
//! find what they need in a fresh set never wait; the others queue on one
//! lock, and the first fetches while the rest find its result when their
//! turn comes. A failed fetch is not retried before the interval either, so
//! neither a flood of made-up `kid`s nor an unreachable issuer makes more
//! than one call per interval.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey};
use serde::Deserialize;
use ureq::http::Uri;

use super::Rejection;
use super::fetch::{self, Fetcher};

/// One usable signing key of the issuer's set.
pub(super) struct Key {
    pub decoding: DecodingKey,
    kind: Kind,
    /// The JWK's `alg`, when it names one: then the only algorithm it signs.
    alg: Option<Algorithm>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Rsa,
    P256,
    P384,
    Ed25519,
}

impl Key {
    /// Whether a token signed with `alg` may be checked with this key: RS*
    /// and PS* with RSA, ES256 with P-256, ES384 with P-384, EdDSA with
    /// Ed25519, and only the JWK's own `alg` when it has one.
    pub(super) fn fits(&self, alg: Algorithm) -> bool {
        use Algorithm::*;
        let kind_fits = match self.kind {
            Kind::Rsa => matches!(alg, RS256 | RS384 | RS512 | PS256 | PS384 | PS512),
            Kind::P256 => alg == ES256,
            Kind::P384 => alg == ES384,
            Kind::Ed25519 => alg == EdDSA,
        };
        kind_fits && self.alg.is_none_or(|own| own == alg)
    }
}

/// The cached set and when it was fetched.
#[derive(Default)]
struct KeySet {
    keys: HashMap<String, Arc<Key>>,
    fetched_at: Option<Instant>,
}

impl KeySet {
    fn is_fresh(&self, max_age: Duration) -> bool {
        self.fetched_at.is_some_and(|at| at.elapsed() < max_age)
    }
}

/// What the fetches so far left behind; behind the one lock every fetch
/// holds.
#[derive(Default)]
struct Attempts {
    jwks_uri: Option<String>,
    last: Option<Instant>,
    /// Why the last attempt failed, when it did.
    failure: Option<String>,
}

pub(super) struct Jwks {
    issuer: String,
    max_age: Duration,
    min_refresh: Duration,
    current: RwLock<Arc<KeySet>>,
    attempts: tokio::sync::Mutex<Attempts>,
}

impl Jwks {
    pub(super) fn new(issuer: &str, max_age: Duration, min_refresh: Duration) -> Jwks {
        Jwks {
            issuer: issuer.to_owned(),
            max_age,
            min_refresh,
            current: RwLock::default(),
            attempts: tokio::sync::Mutex::default(),
        }
    }

    fn current(&self) -> Arc<KeySet> {
        self.current
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    /// The key `kid` names, from a fresh set, fetching the set when it is
    /// stale or lacks `kid` (within the limits above).
    pub(super) async fn key(&self, fetcher: &Fetcher, kid: &str) -> Result<Arc<Key>, Rejection> {
        let set = self.current();
        if set.is_fresh(self.max_age)
            && let Some(key) = set.keys.get(kid)
        {
            return Ok(key.clone());
        }
        let mut attempts = self.attempts.lock().await;
        // Another verification may have fetched while this one waited.
        let set = self.current();
        let fresh = set.is_fresh(self.max_age);
        if fresh && let Some(key) = set.keys.get(kid) {
            return Ok(key.clone());
        }
        if let Some(last) = attempts.last
            && last.elapsed() < self.min_refresh
        {
            if let Some(failure) = &attempts.failure {
                return Err(Rejection::Unavailable(format!(
                    "{failure} (not retried before {}s)",
                    self.min_refresh.as_secs()
                )));
            }
            if fresh {
                return Err(Rejection::Invalid(format!(
                    "no key for its kid (the keys were fetched less than {}s ago)",
                    self.min_refresh.as_secs()
                )));
            }
        }
        let why = match (set.fetched_at, fresh) {
            (None, _) => "first use",
            (Some(_), true) => "a kid the cached set lacks",
            (Some(_), false) => "max age reached",
        };
        // Recorded once the fetch ends: a fetch dropped half-way (its
        // request gone) leaves the next one free to try at once.
        let started = Instant::now();
        let fetched = self.fetch(fetcher, &mut attempts).await;
        attempts.last = Some(started);
        match fetched {
            Ok((jwks_uri, keys, skipped)) => {
                tracing::info!(
                    issuer = %self.issuer,
                    %jwks_uri,
                    keys = keys.len(),
                    skipped,
                    why,
                    "OAuth signing keys fetched"
                );
                attempts.failure = None;
                let found = keys.get(kid).cloned();
                let set = Arc::new(KeySet {
                    keys,
                    fetched_at: Some(started),
                });
                *self
                    .current
                    .write()
                    .unwrap_or_else(|poisoned| poisoned.into_inner()) = set;
                found.ok_or_else(|| {
                    Rejection::Invalid("no key for its kid in the issuer's set".into())
                })
            }
            Err(error) => {
                let failure = format!("the issuer's signing keys: {error:#}");
                tracing::warn!(issuer = %self.issuer, why, error = %failure, "OAuth signing keys not fetched");
                // The issuer may have moved its keys: look again next time.
                attempts.jwks_uri = None;
                attempts.failure = Some(failure.clone());
                Err(Rejection::Unavailable(failure))
            }
        }
    }

    async fn fetch(
        &self,
        fetcher: &Fetcher,
        attempts: &mut Attempts,
    ) -> Result<(String, HashMap<String, Arc<Key>>, usize)> {
        let jwks_uri = match &attempts.jwks_uri {
            Some(uri) => uri.clone(),
            None => {
                let uri = discover(fetcher, &self.issuer).await?;
                attempts.jwks_uri = Some(uri.clone());
                uri
            }
        };
        let set: RawSet = fetcher.get_json(&jwks_uri).await?;
        let total = set.keys.len();
        let keys = usable_keys(set);
        let skipped = total - keys.len();
        Ok((jwks_uri, keys, skipped))
    }
}

#[derive(Deserialize)]
struct Metadata {
    issuer: String,
    jwks_uri: Option<String>,
}

/// The `jwks_uri` of the issuer's metadata: RFC 8414's document first, then
/// OpenID Connect's. The document used names exactly our issuer (RFC 8414
/// §3.3); one that names another is passed over (some servers answer every
/// path under the well-known prefix with their root issuer's document).
async fn discover(fetcher: &Fetcher, issuer: &str) -> Result<String> {
    let mut failures = Vec::new();
    for url in metadata_urls(issuer)? {
        let metadata: Metadata = match fetcher.get_json(&url).await {
            Ok(metadata) => metadata,
            Err(error) => {
                failures.push(format!("{error:#}"));
                continue;
            }
        };
        if metadata.issuer != issuer {
            failures.push(format!(
                "the metadata at {url} is for issuer {:?}, not {issuer:?}",
                metadata.issuer
            ));
            continue;
        }
        let jwks_uri = metadata
            .jwks_uri
            .with_context(|| format!("the metadata at {url} has no jwks_uri"))?;
        fetch::check_url(&jwks_uri).with_context(|| format!("the jwks_uri of {url}"))?;
        return Ok(jwks_uri);
    }
    bail!("no metadata: {}", failures.join("; "))
}

/// Where the issuer's metadata is: RFC 8414 inserts
/// `/.well-known/oauth-authorization-server` between the host and the
/// issuer's path; OpenID Connect Discovery appends
/// `/.well-known/openid-configuration` to the whole issuer. Both drop a
/// trailing `/` first.
fn metadata_urls(issuer: &str) -> Result<[String; 2]> {
    let uri: Uri = issuer.parse().context("the issuer is not a URL")?;
    let (Some(scheme), Some(authority)) = (uri.scheme_str(), uri.authority()) else {
        bail!("the issuer is not an absolute URL");
    };
    let path = uri.path().trim_end_matches('/');
    Ok([
        format!("{scheme}://{authority}/.well-known/oauth-authorization-server{path}"),
        format!("{scheme}://{authority}{path}/.well-known/openid-configuration"),
    ])
}

#[derive(Deserialize)]
struct RawSet {
    // One key at a time, so that one key of a kind `jsonwebtoken` cannot
    // read does not lose the whole set.
    keys: Vec<serde_json::Value>,
}

/// The set's signature keys with a `kid`, by `kid`. Skipped: encryption keys,
/// symmetric keys (never trusted from a JWKS), curves and algorithms not in
/// the accepted list, and a second key with a `kid` already seen.
fn usable_keys(set: RawSet) -> HashMap<String, Arc<Key>> {
    let mut keys = HashMap::new();
    for value in set.keys {
        let Ok(jwk) = serde_json::from_value::<Jwk>(value) else {
            continue;
        };
        let Some(kid) = jwk.common.key_id.clone() else {
            continue;
        };
        if let Some(key) = usable_key(&jwk) {
            keys.entry(kid).or_insert_with(|| Arc::new(key));
        }
    }
    keys
}

fn usable_key(jwk: &Jwk) -> Option<Key> {
    if jwk
        .common
        .public_key_use
        .as_ref()
        .is_some_and(|u| *u != PublicKeyUse::Signature)
    {
        return None;
    }
    let kind = match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => Kind::Rsa,
        AlgorithmParameters::EllipticCurve(ec) => match ec.curve {
            EllipticCurve::P256 => Kind::P256,
            EllipticCurve::P384 => Kind::P384,
            _ => return None,
        },
        AlgorithmParameters::OctetKeyPair(okp) => match okp.curve {
            EllipticCurve::Ed25519 => Kind::Ed25519,
            _ => return None,
        },
        _ => return None,
    };
    let alg = match jwk.common.key_algorithm {
        Some(alg) => Some(Algorithm::try_from(alg).ok()?),
        None => None,
    };
    let key = Key {
        decoding: DecodingKey::from_jwk(jwk).ok()?,
        kind,
        alg,
    };
    // A key whose own `alg` does not fit its type can check nothing.
    if let Some(alg) = alg
        && !key.fits(alg)
    {
        return None;
    }
    Some(key)
}

#[cfg(test)]
mod tests {
    use super::metadata_urls;

    #[track_caller]
    fn check(issuer: &str, oauth: &str, oidc: &str) {
        let [got_oauth, got_oidc] = metadata_urls(issuer).unwrap();
        assert_eq!((got_oauth.as_str(), got_oidc.as_str()), (oauth, oidc));
    }

    #[test]
    fn metadata_urls_insert_and_append() {
        check(
            "https://idp.example.com",
            "https://idp.example.com/.well-known/oauth-authorization-server",
            "https://idp.example.com/.well-known/openid-configuration",
        );
        check(
            "https://idp.example.com/",
            "https://idp.example.com/.well-known/oauth-authorization-server",
            "https://idp.example.com/.well-known/openid-configuration",
        );
        check(
            "https://idp.example.com/realms/team",
            "https://idp.example.com/.well-known/oauth-authorization-server/realms/team",
            "https://idp.example.com/realms/team/.well-known/openid-configuration",
        );
        check(
            "https://idp.example.com/tenant/",
            "https://idp.example.com/.well-known/oauth-authorization-server/tenant",
            "https://idp.example.com/tenant/.well-known/openid-configuration",
        );
        check(
            "http://127.0.0.1:9000",
            "http://127.0.0.1:9000/.well-known/oauth-authorization-server",
            "http://127.0.0.1:9000/.well-known/openid-configuration",
        );
    }
}
