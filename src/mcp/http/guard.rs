//! What every request passes before its route: the Host and Origin checks (DNS rebinding, foreign pages), CORS, and the credential: who asks (`auth`), put in the request's extensions for the routes, and whether they may use the route at all.
//!
//! `/mcp` takes a credential from the `Authorization` header only. The
//! viewer's pages also take it from their cookie, which a browser brings
//! once as `?token=` and keeps where no script can read it. Which scope an
//! MCP message needs is decided by `post_mcp`, which parses the body.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::net::SocketAddr;

use super::auth::{Refusal, STATIC_TOKEN};
use super::{App, plain_error};
use crate::access::{Grants, Lease, Principal, Verb, keys};

/// The `Host` values a request may carry: DNS rebinding protection. Bound to
/// every interface, the server cannot know its names: no check (and the
/// start-up warning asks for a token).
pub(super) fn allowed_hosts(addr: SocketAddr) -> Option<Vec<String>> {
    let port = addr.port();
    let ip = addr.ip();
    if ip.is_unspecified() {
        return None;
    }
    let mut hosts = vec![match ip {
        std::net::IpAddr::V4(v4) => format!("{v4}:{port}"),
        std::net::IpAddr::V6(v6) => format!("[{v6}]:{port}"),
    }];
    if ip.is_loopback() {
        for name in ["localhost", "127.0.0.1", "[::1]"] {
            hosts.push(format!("{name}:{port}"));
        }
    }
    Some(hosts)
}

/// Whether a browser page at `origin` may talk to the server: loopback
/// pages, and those allowed with `--allow-origin`.
fn origin_allowed(origin: &str, allowed: &[String]) -> bool {
    if allowed.iter().any(|a| a == origin) {
        return true;
    }
    let Some(rest) = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
    else {
        return false;
    };
    let host = if let Some(v6) = rest.strip_prefix('[') {
        v6.split(']').next().map(|h| format!("[{h}]"))
    } else {
        rest.split(':').next().map(str::to_string)
    };
    matches!(host.as_deref(), Some("localhost" | "127.0.0.1" | "[::1]"))
}

/// Host, Origin and credential checks, in front of every route but the
/// metadata; CORS for the browser pages that pass them.
pub(super) async fn guard(
    State(app): State<Arc<App>>,
    mut request: Request,
    next: Next,
) -> Response {
    let headers = request.headers();
    let origin = headers.get(header::ORIGIN).cloned();
    if let Some(hosts) = &app.hosts {
        let host = headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .unwrap_or("");
        if !hosts.iter().any(|h| h.eq_ignore_ascii_case(host)) {
            tracing::warn!(host = ?host, "refused a request: unexpected Host header");
            return plain_error(StatusCode::MISDIRECTED_REQUEST, "unexpected Host header");
        }
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or("");
        if !origin_allowed(origin, &app.origins) {
            tracing::warn!(origin = ?origin, "refused a request: origin not allowed");
            return plain_error(StatusCode::FORBIDDEN, "origin not allowed");
        }
    }
    // A CORS preflight carries no credentials: answered before the token check.
    if request.method() == Method::OPTIONS {
        let mut response = StatusCode::NO_CONTENT.into_response();
        if let Some(origin) = origin {
            cors(&mut response, origin);
            let headers = response.headers_mut();
            headers.insert(
                header::ACCESS_CONTROL_ALLOW_METHODS,
                HeaderValue::from_static("GET, POST, DELETE, OPTIONS"),
            );
            headers.insert(
                header::ACCESS_CONTROL_ALLOW_HEADERS,
                HeaderValue::from_static(
                    "authorization, content-type, accept, last-event-id, mcp-session-id, mcp-protocol-version",
                ),
            );
            headers.insert(
                header::ACCESS_CONTROL_MAX_AGE,
                HeaderValue::from_static("600"),
            );
        }
        return response;
    }
    let credential = credential(&app, request.method(), request.uri(), request.headers()).await;
    let credential = credential.map(|(principal, token)| (principal, lease(&app, token)));
    // The viewer's routes need their verb whatever they show; `/mcp`'s
    // depends on the message.
    let verb = route_verb(request.uri().path(), request.method());
    let mut response = match (credential, verb) {
        (Ok((principal, _)), Some(verb)) if !principal.grants.may(verb) => {
            app.auth.forbidden(verb.challenge())
        }
        (Ok((principal, lease)), _) => {
            request.extensions_mut().insert(principal);
            request.extensions_mut().insert(lease);
            next.run(request).await
        }
        (Err(refusal), _) => refusal,
    };
    // An allowed page may read a refusal too: its challenge is how a
    // browser client finds where to get a token.
    if let Some(origin) = origin {
        cors(&mut response, origin);
    }
    response
}

/// How long a stream the request opens may go on: as long as its
/// credential holds, asked again every [`keys::CACHE`] (a revoked key, an
/// expired token end it); forever without one, or with the static token.
fn lease(app: &Arc<App>, token: Option<String>) -> Lease {
    let Some(token) = token else {
        return Lease::forever();
    };
    let app = app.clone();
    let token = Arc::new(token);
    Lease::checked(keys::CACHE, move || {
        let (app, token) = (app.clone(), token.clone());
        // A credential that cannot be checked now (the database, the
        // identity provider) still holds: only a refusal ends a stream.
        async move { !matches!(app.auth.principal(&token).await, Err(Refusal::Invalid(_))) }
    })
}

/// Who asks: everyone may, when the server requires no credential; else
/// the credential's principal and the token (none for the static one,
/// which lasts), or the answer that refuses it.
async fn credential(
    app: &App,
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
) -> Result<(Arc<Principal>, Option<String>), Response> {
    let path = uri.path();
    if !app.auth.required() || path == "/healthz" {
        let anyone = Principal {
            name: "anyone".to_string(),
            grants: Grants::everything(),
        };
        return Ok((Arc::new(anyone), None));
    }
    let leased = |principal: Principal, token: String| {
        let token = (principal.name != STATIC_TOKEN).then_some(token);
        (Arc::new(principal), token)
    };
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|h| h.to_str().ok())
        .and_then(bearer_token)
        .map(str::to_string);
    // The viewer's pages: a browser cannot send a bearer token with a
    // link, so it brings the token once (`?token=`) and then keeps it in a
    // cookie that no script can read and no other site can send. `/mcp`
    // takes only the header.
    let viewer_path = path != "/mcp";
    let refused = |refusal: Refusal| match refusal {
        Refusal::Invalid(why) => app.auth.unauthorized(true, why),
        Refusal::Unavailable => plain_error(
            StatusCode::SERVICE_UNAVAILABLE,
            "cannot check the credential now: try again",
        ),
    };
    if let Some(token) = bearer {
        return match app.auth.principal(&token).await {
            Ok(principal) => Ok(leased(principal, token)),
            Err(refusal) => Err(refused(refusal)),
        };
    }
    // A token brought in the address goes before the cookie, which it
    // replaces: a browser whose cookie expired or was revoked gets back
    // in with a new one.
    if viewer_path
        && method == Method::GET
        && let Some((token, rest)) = token_in_query(uri)
    {
        return match app.auth.principal(&token).await {
            Ok(_) => Err(with_token_cookie(&token, &rest, app.auth.secure_cookie())),
            Err(refusal) => Err(refused(refusal)),
        };
    }
    if let Some(token) = viewer_path.then(|| token_cookie(headers)).flatten() {
        return match app.auth.principal(&token).await {
            Ok(principal) => Ok(leased(principal, token)),
            Err(refusal) => Err(refused(refusal)),
        };
    }
    Err(app
        .auth
        .unauthorized(false, "this server needs an Authorization: Bearer token"))
}

/// The verb a route other than `/mcp` needs: the viewer's and the JSON
/// endpoints'. `None` for `/mcp` (decided by its message) and `/healthz`.
fn route_verb(path: &str, method: &Method) -> Option<Verb> {
    match path {
        "/mcp" | "/healthz" => None,
        "/search" => Some(Verb::Search),
        _ if path.starts_with("/edit/") || path.starts_with("/new/") => Some(Verb::Write),
        _ if method == Method::POST => Some(Verb::Write),
        _ => Some(Verb::Read),
    }
}

const TOKEN_COOKIE: &str = "orchestra_token";

/// The token the viewer's cookie carries, if any.
fn token_cookie(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|h| h.to_str().ok())
        .flat_map(|h| h.split(';'))
        .find_map(|pair| {
            let (name, value) = pair.trim().split_once('=')?;
            (name == TOKEN_COOKIE).then(|| {
                percent_encoding::percent_decode_str(value)
                    .decode_utf8_lossy()
                    .into_owned()
            })
        })
}

/// A `token` query parameter: its value, and the path and query without it.
fn token_in_query(uri: &axum::http::Uri) -> Option<(String, String)> {
    let query = uri.query()?;
    let mut token = None;
    let mut kept = Vec::new();
    for pair in query.split('&') {
        match pair.split_once('=') {
            Some(("token", value)) => {
                token = Some(
                    percent_encoding::percent_decode_str(&value.replace('+', " "))
                        .decode_utf8_lossy()
                        .into_owned(),
                );
            }
            _ => kept.push(pair),
        }
    }
    // One leading slash: `//host/...` in a Location would leave the server.
    let mut rest = format!("/{}", uri.path().trim_start_matches(['/', '\\']));
    if !kept.is_empty() {
        rest.push('?');
        rest.push_str(&kept.join("&"));
    }
    Some((token?, rest))
}

/// Sends the browser back to `location` with the token in its cookie.
fn with_token_cookie(token: &str, location: &str, secure: bool) -> Response {
    let value = percent_encoding::utf8_percent_encode(token, percent_encoding::NON_ALPHANUMERIC);
    // `Secure` where the server is reached over https (`--public-url`).
    let secure = if secure { "; Secure" } else { "" };
    let cookie = format!("{TOKEN_COOKIE}={value}; HttpOnly; SameSite=Strict; Path=/{secure}");
    let mut response = StatusCode::SEE_OTHER.into_response();
    let headers = response.headers_mut();
    if let (Ok(cookie), Ok(location)) = (
        HeaderValue::from_str(&cookie),
        HeaderValue::from_str(location),
    ) {
        headers.insert(header::SET_COOKIE, cookie);
        headers.insert(header::LOCATION, location);
    }
    response
}

/// The token of an `Authorization: Bearer …` header; the scheme is
/// case-insensitive (RFC 7235).
pub(super) fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

/// Lets an allowed page read the response, and its session id.
pub(super) fn cors(response: &mut Response, origin: HeaderValue) {
    let headers = response.headers_mut();
    headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
    headers.insert(
        header::ACCESS_CONTROL_EXPOSE_HEADERS,
        HeaderValue::from_static("mcp-session-id, mcp-protocol-version, www-authenticate"),
    );
    headers.insert(header::VARY, HeaderValue::from_static("Origin"));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_origins_and_listed_ones_are_allowed() {
        let listed = vec!["https://viewer.example".to_string()];
        let cases = [
            ("http://localhost:3000", true),
            ("http://127.0.0.1", true),
            ("https://[::1]:8443", true),
            ("https://viewer.example", true),
            ("https://viewer.example.evil", false),
            ("http://localhost.evil:80", false),
            ("http://evil.com", false),
            ("null", false),
            ("", false),
        ];
        for (origin, expected) in cases {
            assert_eq!(origin_allowed(origin, &listed), expected, "{origin}");
        }
    }

    #[test]
    fn bearer_tokens() {
        assert_eq!(bearer_token("Bearer abc"), Some("abc"));
        assert_eq!(bearer_token("bearer abc"), Some("abc"));
        assert_eq!(bearer_token("Basic abc"), None);
        assert_eq!(bearer_token("Bearerabc"), None);
    }

    #[test]
    fn hosts_follow_the_bound_address() {
        let loopback: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        assert_eq!(
            allowed_hosts(loopback).unwrap(),
            [
                "127.0.0.1:8080",
                "localhost:8080",
                "127.0.0.1:8080",
                "[::1]:8080"
            ]
        );
        let any: SocketAddr = "0.0.0.0:8080".parse().unwrap();
        assert_eq!(allowed_hosts(any), None);
        let lan: SocketAddr = "192.168.1.5:80".parse().unwrap();
        assert_eq!(allowed_hosts(lan).unwrap(), ["192.168.1.5:80"]);
    }
}
