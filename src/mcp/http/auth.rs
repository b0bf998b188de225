//! Who a request's bearer token names, and the answers that say what is missing: the static token (`--token-file`), a scoped API key from the database, an OAuth access token (`--oauth-issuer`); 401 and 403 with `WWW-Authenticate` as RFC 6750 and the MCP authorization rules shape them; the Protected Resource Metadata (RFC 9728).
//!
//! A key is looked up by its hash and what was read is trusted for
//! [`keys::CACHE`], so a revocation reaches every server of the database
//! within that. A token never appears in a log line or an answer: refusals
//! say why in words, never by quoting it.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use subtle::ConstantTimeEq;

use crate::access::oauth::{self, Verifier};
use crate::access::{Grants, Principal, SUPPORTED_SCOPES, Verb, keys};
use crate::mcp::StoreSlot;
use crate::mcp::dispatch::Message;
use crate::mcp::tools;
use crate::store::ApiKey;

/// The principal of the static token (`--token-file`): it lasts as long
/// as the server.
pub const STATIC_TOKEN: &str = "token";

/// Keys remembered at once; beyond, the cache starts over.
const KEY_CACHE_SIZE: usize = 10_000;

/// How a server checks OAuth access tokens (`--oauth-issuer`).
#[derive(Clone)]
pub struct OAuthOptions {
    /// `--public-url`: the resource's identifier, the audience a token must
    /// name, and the base of the metadata's URL. From configuration only,
    /// never from a request's Host or forwarded headers.
    pub public_url: String,
    pub issuer: String,
    pub verifier: Verifier,
}

impl std::fmt::Debug for OAuthOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthOptions")
            .field("public_url", &self.public_url)
            .field("issuer", &self.issuer)
            .finish_non_exhaustive()
    }
}

/// What lets a request in: none of these, and every request is let in
/// (a loopback server's default).
#[derive(Clone, Debug, Default)]
pub struct AuthOptions {
    /// `--token-file`: one secret, every right.
    pub token: Option<String>,
    /// `--api-keys`: the database's keys (`orchestra token create`); they
    /// are accepted whenever another credential is required too.
    pub api_keys: bool,
    pub oauth: Option<OAuthOptions>,
    /// `--public-url`, when given: over https, the viewer's cookie is
    /// `Secure`.
    pub public_url: Option<String>,
}

impl AuthOptions {
    /// Whether a request must carry a credential.
    pub fn required(&self) -> bool {
        self.token.is_some() || self.api_keys || self.oauth.is_some()
    }
}

/// Why a credential is not let in.
#[derive(Debug)]
pub enum Refusal {
    /// Unknown, expired, revoked, or not for this server: 401.
    Invalid(&'static str),
    /// What would decide cannot be reached now (the database, the
    /// identity provider): 503.
    Unavailable,
}

/// The credential checks of one server.
pub struct Auth {
    token_hash: Option<blake3::Hash>,
    /// Whether a request must carry a credential.
    required: bool,
    /// `--api-keys` given.
    api_keys: bool,
    oauth: Option<OAuthOptions>,
    slot: StoreSlot,
    keys: Mutex<HashMap<String, (Instant, Option<ApiKey>)>>,
    secure_cookie: bool,
}

impl Auth {
    pub fn new(options: AuthOptions, slot: StoreSlot) -> Auth {
        Auth {
            token_hash: options.token.as_deref().map(|t| blake3::hash(t.as_bytes())),
            required: options.required(),
            api_keys: options.api_keys,
            secure_cookie: options
                .public_url
                .as_deref()
                .is_some_and(|url| url.starts_with("https://")),
            oauth: options.oauth,
            slot,
            keys: Mutex::default(),
        }
    }

    /// Whether the viewer's cookie must say `Secure`: the server is
    /// reached over https.
    pub fn secure_cookie(&self) -> bool {
        self.secure_cookie
    }

    /// Whether a request must carry a credential.
    pub fn required(&self) -> bool {
        self.required
    }

    /// Whether the server says more than a bare `Bearer` challenge: with
    /// only `--token-file`, it answers exactly as it always did.
    fn rich(&self) -> bool {
        self.oauth.is_some() || self.api_keys
    }

    /// Who `token` names.
    pub async fn principal(&self, token: &str) -> Result<Principal, Refusal> {
        if let Some(expected) = &self.token_hash {
            // Compared as hashes: equal length, constant time.
            let given = blake3::hash(token.as_bytes());
            if bool::from(given.as_bytes().ct_eq(expected.as_bytes())) {
                return Ok(Principal {
                    name: STATIC_TOKEN.to_string(),
                    grants: Grants::everything(),
                });
            }
        }
        // Keys only where the operator asked for them: a key written to a
        // shared database lets nothing into a server started without
        // `--api-keys`.
        if self.api_keys && keys::looks_like_key(token) {
            return self.key(token).await;
        }
        match &self.oauth {
            Some(oauth) => match oauth.verifier.verify(token).await {
                Ok(claims) => Ok(Principal {
                    // A token without a subject (an introspected client's)
                    // is named by its client, apart from every user.
                    name: match (&claims.subject, &claims.client_id) {
                        (Some(subject), _) => format!("oauth:{} {subject}", claims.issuer),
                        (None, client) => {
                            format!(
                                "client:{} {}",
                                claims.issuer,
                                client.as_deref().unwrap_or("")
                            )
                        }
                    },
                    grants: Grants::from_scopes(claims.scopes.iter().map(String::as_str)),
                }),
                Err(oauth::Rejection::Invalid(why)) => {
                    tracing::info!("refused an access token: {why}");
                    Err(Refusal::Invalid(
                        "the access token is not valid for this server",
                    ))
                }
                Err(oauth::Rejection::Unavailable(why)) => {
                    tracing::warn!("cannot check an access token: {why}");
                    Err(Refusal::Unavailable)
                }
            },
            None => Err(Refusal::Invalid("missing or wrong bearer token")),
        }
    }

    /// An API key's principal: its hash looked up, what was read trusted
    /// for [`keys::CACHE`].
    async fn key(&self, token: &str) -> Result<Principal, Refusal> {
        let hash = keys::hash(token);
        let cached = {
            let cache = self.keys.lock().unwrap_or_else(|e| e.into_inner());
            cache
                .get(&hash)
                .filter(|(at, _)| at.elapsed() < keys::CACHE)
                .map(|(_, key)| key.clone())
        };
        let key = match cached {
            Some(key) => key,
            None => {
                let Some(store) = self.slot.get() else {
                    return Err(Refusal::Unavailable);
                };
                let looked_up = hash.clone();
                let found = crate::reads::run(move || store.find_key(&looked_up)).await;
                let key = match found {
                    Ok(Ok(key)) => key,
                    Ok(Err(e)) => {
                        tracing::warn!("cannot look up an API key: {e:#}");
                        return Err(Refusal::Unavailable);
                    }
                    Err(e) => {
                        tracing::error!("the key lookup failed: {e}");
                        return Err(Refusal::Unavailable);
                    }
                };
                let mut cache = self.keys.lock().unwrap_or_else(|e| e.into_inner());
                if cache.len() >= KEY_CACHE_SIZE {
                    cache.clear();
                }
                cache.insert(hash, (Instant::now(), key.clone()));
                key
            }
        };
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or_default();
        match key {
            Some(key) if key.is_live(now) => Ok(Principal {
                // The name and its creation: a key made again under a
                // revoked one's name is another principal.
                name: format!("key:{}#{}", key.name, key.created_at),
                grants: Grants::from_scopes(key.scopes.split(' ')),
            }),
            Some(key) if key.revoked_at.is_some() => Err(Refusal::Invalid("the key was revoked")),
            Some(_) => Err(Refusal::Invalid("the key expired")),
            None => Err(Refusal::Invalid("missing or wrong bearer token")),
        }
    }

    /// The 401 for a request without a credential (`sent` false) or with
    /// one that is not let in.
    pub fn unauthorized(&self, sent: bool, why: &str) -> Response {
        let mut challenge = self.challenge_base("orchestra:read");
        if sent && self.rich() {
            challenge.push_str(", error=\"invalid_token\"");
        }
        let body = match sent {
            true => json!({ "error": "invalid_token", "error_description": why }),
            false => json!({ "error": "unauthorized", "error_description": why }),
        };
        with_challenge(StatusCode::UNAUTHORIZED, challenge, body)
    }

    /// The 403 for a credential that lacks a scope the operation needs:
    /// `scopes` names all of them, for one step-up.
    pub fn forbidden(&self, scopes: &str) -> Response {
        let challenge = match self.rich() {
            true => format!(
                "{}, error=\"insufficient_scope\"",
                self.challenge_base(scopes)
            ),
            false => format!("Bearer scope=\"{scopes}\", error=\"insufficient_scope\""),
        };
        let body = json!({
            "error": "insufficient_scope",
            "error_description": format!("this operation needs the scope {scopes}"),
        });
        with_challenge(StatusCode::FORBIDDEN, challenge, body)
    }

    /// `Bearer resource_metadata="…", scope="…"`; a bare `Bearer` with
    /// only the static token.
    fn challenge_base(&self, scopes: &str) -> String {
        if !self.rich() {
            return "Bearer".to_string();
        }
        let mut challenge = String::from("Bearer ");
        if let Some(url) = self.metadata_url() {
            challenge.push_str(&format!("resource_metadata=\"{url}\", "));
        }
        challenge.push_str(&format!("scope=\"{scopes}\""));
        challenge
    }

    /// Where the Protected Resource Metadata is, when OAuth is on: the
    /// well-known path inserted between the public URL's origin and path
    /// (RFC 9728 §3.1).
    pub fn metadata_url(&self) -> Option<String> {
        let oauth = self.oauth.as_ref()?;
        let (origin, path) = split_url(&oauth.public_url);
        Some(format!(
            "{origin}/.well-known/oauth-protected-resource{path}"
        ))
    }

    /// The paths the metadata is served at: the public URL's and the root.
    pub fn metadata_paths(&self) -> Vec<String> {
        let Some(oauth) = &self.oauth else {
            return Vec::new();
        };
        let (_, path) = split_url(&oauth.public_url);
        let mut paths = vec![format!("/.well-known/oauth-protected-resource{path}")];
        if !path.is_empty() {
            paths.push("/.well-known/oauth-protected-resource".to_string());
        }
        paths
    }

    /// The Protected Resource Metadata document (RFC 9728), when OAuth is on.
    pub fn metadata(&self) -> Option<Value> {
        let oauth = self.oauth.as_ref()?;
        Some(json!({
            "resource": oauth.public_url,
            "authorization_servers": [oauth.issuer],
            "scopes_supported": SUPPORTED_SCOPES,
            "bearer_methods_supported": ["header"],
            "resource_name": "orchestra",
        }))
    }
}

/// The scopes an MCP message needs that `grants` lack, named together for
/// one step-up: `None` when it may go on. A message that needs no scope
/// (`initialize`, `tools/list`, a notification) always may; a document
/// outside the caller's read areas is not refused here but answered as
/// missing, so that a refusal reveals nothing of it.
pub fn lacking(message: &Message, grants: &Grants) -> Option<String> {
    let verb = match message.method()? {
        "resources/list"
        | "resources/read"
        | "resources/subscribe"
        | "resources/unsubscribe"
        | "completion/complete"
        | "subscriptions/listen" => Verb::Read,
        "tools/call" => {
            // Borrowed from the message: a write's content is not copied.
            let params = message.params()?;
            let name = params.get("name")?.as_str()?;
            let verb = tools::verb(name)?;
            if verb == Verb::Write && grants.may(Verb::Write) {
                let empty = serde_json::Map::new();
                let arguments = params
                    .get("arguments")
                    .and_then(Value::as_object)
                    .unwrap_or(&empty);
                let lacking = tools::unwritable(name, arguments, grants);
                return (!lacking.is_empty()).then(|| lacking.join(" "));
            }
            verb
        }
        _ => return None,
    };
    (!grants.may(verb)).then(|| verb.challenge().to_string())
}

/// `https://host:8443/mcp` → (`https://host:8443`, `/mcp`); a trailing
/// slash is no path.
fn split_url(url: &str) -> (&str, &str) {
    let after_scheme = url.find("://").map(|i| i + 3).unwrap_or(0);
    match url[after_scheme..].find('/') {
        Some(i) => {
            let (origin, path) = url.split_at(after_scheme + i);
            (origin, path.trim_end_matches('/'))
        }
        None => (url, ""),
    }
}

fn with_challenge(status: StatusCode, challenge: String, body: Value) -> Response {
    let mut response = (status, Json(body)).into_response();
    if let Ok(value) = HeaderValue::from_str(&challenge) {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, value);
    }
    response
}

/// Whether `url` can be a `--public-url`: absolute http(s), no query or
/// fragment. The error says why not.
pub fn check_public_url(url: &str) -> Result<(), String> {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
        .ok_or_else(|| {
            format!("--public-url {url:?} must start with https:// (or http:// on loopback)")
        })?;
    if rest.is_empty() || rest.starts_with('/') {
        return Err(format!("--public-url {url:?} names no host"));
    }
    let host = rest.split('/').next().unwrap_or("");
    let host = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host, |(h, _)| h),
    };
    let loopback = host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    if url.starts_with("http://") && !loopback {
        return Err(format!(
            "--public-url {url:?}: tokens would cross the network in clear; use https:// (http:// only on loopback)"
        ));
    }
    if url.contains(['?', '#', ' ', '"']) {
        return Err(format!(
            "--public-url {url:?} must be the endpoint's URL alone, without a query, fragment, space or quote"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_sits_between_origin_and_path() {
        let cases = [
            (
                "https://backlog.example.com/mcp",
                ("https://backlog.example.com", "/mcp"),
            ),
            ("https://h:8443/team/mcp/", ("https://h:8443", "/team/mcp")),
            ("http://127.0.0.1:8080", ("http://127.0.0.1:8080", "")),
        ];
        for (url, expected) in cases {
            assert_eq!(split_url(url), expected, "{url}");
        }
        assert!(check_public_url("https://backlog.example.com/mcp").is_ok());
        assert!(check_public_url("http://127.0.0.1:8080/mcp").is_ok());
        assert!(check_public_url("http://[::1]:8080/mcp").is_ok());
        assert!(check_public_url("http://localhost/mcp").is_ok());
        for bad in [
            "backlog/mcp",
            "https:///mcp",
            "https://h/mcp?x=1",
            "ftp://h/mcp",
            "https://",
            "http://backlog.example.com/mcp",
            "http://10.0.0.5:8080/mcp",
        ] {
            assert!(check_public_url(bad).is_err(), "{bad}");
        }
    }
}
