//! Opaque tokens asked about at the RFC 7662 introspection endpoint: the POST, the checks on its answer, and a bounded cache of answers keyed by the token's blake3 hash.
//!
//! An active answer is cached for at most 60 s and never past the token's
//! `exp`; a refusal (an inactive answer, or a 400 about the token) for
//! 10 s, so a client retrying a dead token does not cost a call each time.
//! A failed call (unreachable, 401, 5xx) is not cached: it is answered as
//! unavailable. The cache holds the
//! hash, never the token.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::Deserialize;

use super::fetch::{Fetcher, Status};
use super::jwt::{Scopes, scopes};
use super::{Claims, Expected, Introspection, Rejection, now};

const ACTIVE_TTL: u64 = 60;
const REFUSED_TTL: Duration = Duration::from_secs(10);
const CACHE_MAX: usize = 10_000;

/// Clock skew allowed on `nbf`, in seconds, as for JWTs.
const LEEWAY: u64 = 60;

pub(super) struct Introspector {
    endpoint: Introspection,
    cache: Mutex<HashMap<[u8; 32], Cached>>,
}

struct Cached {
    answer: Result<Claims, String>,
    until: Instant,
}

/// The members of an RFC 7662 answer orchestra reads.
#[derive(Deserialize)]
struct Answer {
    #[serde(default)]
    active: bool,
    scope: Option<Scopes>,
    client_id: Option<String>,
    sub: Option<String>,
    iss: Option<String>,
    aud: Option<Audience>,
    exp: Option<f64>,
    nbf: Option<f64>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Audience {
    One(String),
    Many(Vec<String>),
}

impl Introspector {
    pub(super) fn new(endpoint: Introspection) -> Introspector {
        Introspector {
            endpoint,
            cache: Mutex::default(),
        }
    }

    pub(super) async fn verify(
        &self,
        fetcher: &Fetcher,
        expected: &Expected,
        token: &str,
    ) -> Result<Claims, Rejection> {
        let hash = *blake3::hash(token.as_bytes()).as_bytes();
        if let Some(answer) = self.cached(&hash) {
            return answer.map_err(Rejection::Invalid);
        }
        let endpoint = &self.endpoint;
        let answer = fetcher
            .post_form::<Answer>(
                &endpoint.url,
                &endpoint.client_id,
                &endpoint.client_secret,
                &[("token", token), ("token_type_hint", "access_token")],
            )
            .await;
        let now = now();
        let checked = match answer {
            Ok(answer) => check(answer, expected, now),
            // Our request is the same every time but for the token: a 400 is
            // about the token (oidc-provider answers one for anything shaped
            // like a JWT), not about the server being unable to answer.
            Err(error)
                if error
                    .downcast_ref::<Status>()
                    .is_some_and(|s| s.code == 400) =>
            {
                Err(format!("introspection refused it: {error:#}"))
            }
            Err(error) => {
                let failure = format!("introspection: {error:#}");
                tracing::warn!(error = %failure, "OAuth introspection failed");
                return Err(Rejection::Unavailable(failure));
            }
        };
        let ttl = match &checked {
            Ok(claims) => Duration::from_secs(ACTIVE_TTL.min(claims.expires_at - now)),
            Err(_) => REFUSED_TTL,
        };
        self.store(hash, checked.clone(), ttl);
        checked.map_err(Rejection::Invalid)
    }

    fn cached(&self, hash: &[u8; 32]) -> Option<Result<Claims, String>> {
        let cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        let entry = cache.get(hash)?;
        (entry.until > Instant::now()).then(|| entry.answer.clone())
    }

    fn store(&self, hash: [u8; 32], answer: Result<Claims, String>, ttl: Duration) {
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        if cache.len() >= CACHE_MAX {
            cache.retain(|_, entry| entry.until > now);
        }
        // Still full of live answers (a flood of distinct tokens): make room
        // by dropping arbitrary ones; they cost a call when seen again.
        while cache.len() >= CACHE_MAX {
            let Some(victim) = cache.keys().next().copied() else {
                break;
            };
            cache.remove(&victim);
        }
        cache.insert(
            hash,
            Cached {
                answer,
                until: now + ttl,
            },
        );
    }
}

/// `active` true; `aud` naming one of ours; `iss` exactly ours, `exp` in the
/// future and `nbf` past (within the leeway), each when present.
fn check(answer: Answer, expected: &Expected, now: u64) -> Result<Claims, String> {
    if !answer.active {
        return Err("introspection says inactive".into());
    }
    if let Some(iss) = &answer.iss
        && *iss != expected.issuer
    {
        return Err("introspection: wrong issuer".into());
    }
    match &answer.aud {
        Some(Audience::One(aud)) if !expected.accepts_audience(aud) => {
            return Err("introspection: not for this server (aud)".into());
        }
        Some(Audience::Many(auds)) if !auds.iter().any(|a| expected.accepts_audience(a)) => {
            return Err("introspection: not for this server (aud)".into());
        }
        // A token the same server issued for another resource says so by
        // its audience; one that names none cannot show it is ours.
        None => return Err("introspection: no audience (aud)".into()),
        _ => {}
    }
    let exp = answer.exp.map(|exp| exp as u64);
    if exp.is_some_and(|exp| exp <= now) {
        return Err("introspection: expired".into());
    }
    if answer.nbf.is_some_and(|nbf| nbf as u64 > now + LEEWAY) {
        return Err("introspection: not valid yet (nbf)".into());
    }
    if answer.sub.is_none() && answer.client_id.is_none() {
        return Err("introspection: neither sub nor client_id".into());
    }
    Ok(Claims {
        issuer: answer.iss.unwrap_or_else(|| expected.issuer.clone()),
        subject: answer.sub,
        client_id: answer.client_id,
        scopes: scopes(answer.scope.iter()),
        expires_at: exp.unwrap_or(now + ACTIVE_TTL),
    })
}
