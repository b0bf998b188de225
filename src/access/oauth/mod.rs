//! OAuth 2.1 access tokens checked as a resource server: [`Verifier::verify`] turns a bearer token into [`Claims`] or a [`Rejection`].
//!
//! A token of three base64url parts is a JWT (RFC 9068), checked against the
//! issuer's published keys ([`jwt`], [`jwks`]); any other token is opaque and
//! asked about at the introspection endpoint when one is configured
//! ([`introspect`]). Every URL called is https, or http to a loopback host
//! ([`fetch`]). This module knows nothing of MCP, HTTP handlers or the store.
//!
//! A verified JWT is remembered by the blake3 hash of the token with the
//! key that signed it, and its signature is not checked again while that
//! same key is in the current set and the token is unexpired: a client
//! sends one token with every request, and the RSA check was most of what
//! a JWT added to a read.
//!
//! A token is a secret: no [`Rejection`] reason, log line or error here holds
//! it or any part of it (a header, a claim), only what was wrong.

mod fetch;
mod introspect;
mod jwks;
mod jwt;

#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};

use fetch::Fetcher;
use introspect::Introspector;
use jwks::Jwks;

/// Tokens longer than this are refused before any parsing.
const MAX_TOKEN_LEN: usize = 16 * 1024;

/// Where tokens come from and whom they must be for.
#[derive(Clone, Debug)]
pub struct OAuthConfig {
    /// `--oauth-issuer`: the authorization server's issuer identifier, exactly
    /// as its metadata and its tokens' `iss` spell it.
    pub issuer: String,
    /// `--public-url`: this server's MCP URL, the audience a token must name
    /// (RFC 8707).
    pub public_url: String,
    /// `--oauth-audience`: other audiences accepted (Entra's `api://…`).
    pub audiences: Vec<String>,
    /// Where opaque tokens are introspected; without it they are refused.
    pub introspection: Option<Introspection>,
    /// The longest the issuer's keys are used before they are fetched again.
    pub jwks_max_age: Duration,
    /// The least time between two fetches of the keys, however many tokens
    /// name a `kid` the cache lacks.
    pub jwks_min_refresh: Duration,
}

impl OAuthConfig {
    /// No extra audience, no introspection, keys kept 10 minutes and
    /// refetched for an unknown `kid` at most every 30 s.
    pub fn new(issuer: impl Into<String>, public_url: impl Into<String>) -> OAuthConfig {
        OAuthConfig {
            issuer: issuer.into(),
            public_url: public_url.into(),
            audiences: Vec::new(),
            introspection: None,
            jwks_max_age: Duration::from_secs(600),
            jwks_min_refresh: Duration::from_secs(30),
        }
    }
}

/// The RFC 7662 endpoint and this server's own client credentials for it.
#[derive(Clone)]
pub struct Introspection {
    pub url: String,
    pub client_id: String,
    pub client_secret: String,
}

impl fmt::Debug for Introspection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Introspection")
            .field("url", &self.url)
            .field("client_id", &self.client_id)
            .field("client_secret", &"[redacted]")
            .finish()
    }
}

/// What a valid token says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Claims {
    pub issuer: String,
    /// `sub`: a JWT always has one; an introspected token may not (a
    /// client's own, named by its `client_id`).
    pub subject: Option<String>,
    /// `client_id`, else `azp`.
    pub client_id: Option<String>,
    /// `scope` (space-separated), then `scp` (array or string), without
    /// duplicates.
    pub scopes: Vec<String>,
    /// `exp`, seconds since the Unix epoch. An introspection answer without
    /// `exp` has the time its cached answer ends, when it is asked again.
    pub expires_at: u64,
}

/// Why a token was not accepted. The reason is for the log and names what
/// was wrong, never the token or a part of it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Rejection {
    /// The token is not valid here: answer 401 `invalid_token`.
    #[error("invalid token: {0}")]
    Invalid(String),
    /// The token could not be checked (the authorization server, its keys or
    /// its introspection endpoint unreachable or unusable): answer 503.
    #[error("token not verifiable now: {0}")]
    Unavailable(String),
}

/// Checks bearer tokens for one issuer and one resource. Cheap to clone; the
/// clones share the key cache and the introspection cache.
#[derive(Clone)]
pub struct Verifier {
    inner: Arc<Inner>,
}

struct Inner {
    expected: Expected,
    fetcher: Fetcher,
    jwks: Jwks,
    introspection: Option<Introspector>,
    /// JWTs already verified, by the blake3 hash of the token.
    verified: std::sync::Mutex<HashMap<[u8; 32], Verified>>,
}

/// A JWT whose signature and claims were checked: what it says, and the
/// key that signed it. Used again only while that same key is in the
/// current, fresh set (a fetched set that drops or replaces it ends the
/// entry) and the token has not expired, so a cached answer is the answer
/// a full check would give, without its signature check (most of the
/// cost of a request with a JWT: an RSA verification).
struct Verified {
    claims: Claims,
    key: Arc<jwks::Key>,
}

/// JWTs remembered at once; beyond, the cache starts over.
const VERIFIED_SIZE: usize = 10_000;

/// The issuer and audiences a token must name.
pub(crate) struct Expected {
    pub issuer: String,
    pub audiences: Vec<String>,
}

impl Expected {
    fn accepts_audience(&self, aud: &str) -> bool {
        self.audiences.iter().any(|a| a == aud)
    }
}

impl fmt::Debug for Verifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Verifier")
            .field("issuer", &self.inner.expected.issuer)
            .field("audiences", &self.inner.expected.audiences)
            .finish_non_exhaustive()
    }
}

impl Verifier {
    /// Checks the configuration; calls nothing (the issuer's metadata and
    /// keys are fetched by the first JWT verified).
    pub fn new(config: OAuthConfig) -> Result<Verifier> {
        let issuer = fetch::check_url(&config.issuer).context("the OAuth issuer")?;
        if issuer.query().is_some() {
            bail!("the OAuth issuer {:?} has a query", config.issuer);
        }
        if config.public_url.is_empty() {
            bail!("the public URL (the audience tokens must name) is empty");
        }
        if config.jwks_max_age.is_zero() {
            bail!("the JWKS max age is zero");
        }
        if let Some(introspection) = &config.introspection {
            fetch::check_url(&introspection.url).context("the OAuth introspection URL")?;
        }
        let mut audiences = vec![config.public_url];
        audiences.extend(config.audiences.into_iter().filter(|a| !a.is_empty()));
        let fetcher = Fetcher::default();
        Ok(Verifier {
            inner: Arc::new(Inner {
                jwks: Jwks::new(&config.issuer, config.jwks_max_age, config.jwks_min_refresh),
                expected: Expected {
                    issuer: config.issuer,
                    audiences,
                },
                fetcher,
                introspection: config.introspection.map(Introspector::new),
                verified: std::sync::Mutex::default(),
            }),
        })
    }

    /// Checks `token` (the bearer token, without `Bearer `).
    pub async fn verify(&self, token: &str) -> Result<Claims, Rejection> {
        let inner = &*self.inner;
        if token.is_empty() || token.len() > MAX_TOKEN_LEN {
            return Err(Rejection::Invalid("empty or over 16 KiB".into()));
        }
        if jwt::is_jwt(token) {
            let header = jwt::header(token)?;
            let key = inner.jwks.key(&inner.fetcher, &header.kid).await?;
            let hash = *blake3::hash(token.as_bytes()).as_bytes();
            if let Some(claims) = inner.verified_by(&hash, &key) {
                return Ok(claims);
            }
            let claims = jwt::claims(token, &header, &key, &inner.expected)?;
            let mut verified = inner.verified.lock().unwrap_or_else(|p| p.into_inner());
            if verified.len() >= VERIFIED_SIZE {
                verified.retain(|_, v| now() <= v.claims.expires_at.saturating_add(jwt::LEEWAY));
                if verified.len() >= VERIFIED_SIZE {
                    verified.clear();
                }
            }
            verified.insert(
                hash,
                Verified {
                    claims: claims.clone(),
                    key,
                },
            );
            return Ok(claims);
        }
        match &inner.introspection {
            Some(introspector) => {
                introspector
                    .verify(&inner.fetcher, &inner.expected, token)
                    .await
            }
            None => Err(Rejection::Invalid(
                "not a JWT, and no introspection endpoint is configured".into(),
            )),
        }
    }
}

impl Inner {
    /// The claims of the JWT hashed `hash`, when it was verified with `key`
    /// (the current key of its `kid`) and has not expired since.
    fn verified_by(&self, hash: &[u8; 32], key: &Arc<jwks::Key>) -> Option<Claims> {
        let verified = self.verified.lock().unwrap_or_else(|p| p.into_inner());
        let entry = verified.get(hash)?;
        let current = Arc::ptr_eq(&entry.key, key)
            && now() <= entry.claims.expires_at.saturating_add(jwt::LEEWAY);
        current.then(|| entry.claims.clone())
    }
}

/// Seconds since the Unix epoch.
fn now() -> u64 {
    jsonwebtoken::get_current_timestamp()
}
