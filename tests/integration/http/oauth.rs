//! OAuth access tokens on the real binary: the Protected Resource Metadata, the 401 that points to it, JWTs of an issuer served here on loopback (its keys from `fixtures/auth/`) with their scopes and per-prefix grants, sessions bound to the token's subject, and API keys beside them. The rules of a token one by one are `access::oauth`'s unit tests, and the official clients against a real OpenID provider are `tests/interop/*auth*`.

use std::collections::BTreeMap;
use std::net::TcpListener;

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};

use super::auth::create_key;
use super::messages::{envelope, fixture_project, initialize, rpc};
use super::server::HttpServer;

const RSA1: &[u8] = include_bytes!("../../../fixtures/auth/rsa1.pem");

/// An issuer on loopback: its RFC 8414 metadata and its JWKS, served by a
/// thread of its own until the test ends.
struct Issuer {
    url: String,
    key: EncodingKey,
}

impl Issuer {
    fn start() -> Issuer {
        let key = EncodingKey::from_rsa_pem(RSA1).unwrap();
        let mut jwk = jsonwebtoken::jwk::Jwk::from_encoding_key(&key, Algorithm::RS256).unwrap();
        jwk.common.key_id = Some("it-1".into());
        let jwks = json!({ "keys": [jwk] });
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let metadata = json!({ "issuer": url, "jwks_uri": format!("{url}/jwks") });
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let app = axum::Router::new()
                    .route(
                        "/.well-known/oauth-authorization-server",
                        axum::routing::get(move || async move { axum::Json(metadata) }),
                    )
                    .route(
                        "/jwks",
                        axum::routing::get(move || async move { axum::Json(jwks) }),
                    );
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                axum::serve(listener, app).await.unwrap();
            });
        });
        Issuer { url, key }
    }

    /// A token as an identity provider issues one for `audience`, with
    /// `patch` applied to its claims.
    fn token(&self, audience: &str, subject: &str, scope: &str, patch: Value) -> String {
        let now = jsonwebtoken::get_current_timestamp();
        let mut claims = json!({
            "iss": self.url, "sub": subject, "aud": audience, "client_id": subject,
            "scope": scope, "iat": now, "exp": now + 300, "jti": subject,
        });
        for (name, value) in patch.as_object().unwrap() {
            claims[name] = value.clone();
        }
        let mut header = Header::new(Algorithm::RS256);
        header.kid = Some("it-1".into());
        header.typ = Some("at+jwt".into());
        jsonwebtoken::encode(&header, &claims, &self.key).unwrap()
    }
}

/// A port free now, for a server whose public URL must be known before it starts.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn challenge(resp: &crate::http::Resp) -> BTreeMap<String, String> {
    let header = resp.header("www-authenticate").expect("WWW-Authenticate");
    let rest = header.strip_prefix("Bearer ").expect("Bearer");
    rest.split("\", ")
        .map(|pair| {
            let (name, value) = pair.split_once("=\"").unwrap();
            (name.to_string(), value.trim_end_matches('"').to_string())
        })
        .collect()
}

fn call(server: &HttpServer, token: &str, method: &str, params: Value) -> crate::http::Resp {
    let name = match method {
        "resources/read" => params["uri"].as_str().map(str::to_string),
        "tools/call" => params["name"].as_str().map(str::to_string),
        _ => None,
    };
    let mut req = server
        .post(&rpc(1, method, envelope(params)))
        .header("Mcp-Method", method)
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Authorization", &format!("Bearer {token}"));
    if let Some(name) = name {
        req = req.header("Mcp-Name", &name);
    }
    req.send()
}

#[test]
fn oauth_tokens_and_the_metadata_that_leads_to_their_issuer() {
    let issuer = Issuer::start();
    let p = fixture_project();
    let port = free_port();
    let public = format!("http://127.0.0.1:{port}/mcp");
    let server = HttpServer::launch(
        &p,
        &format!("127.0.0.1:{port}"),
        &[
            "--public-url",
            &public,
            "--oauth-issuer",
            &issuer.url,
            "--api-keys",
        ],
        &[],
    );

    // The metadata, at the path-aware address and the root, whatever the
    // request's Host says.
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let resp = server
            .request("GET", path)
            .host("evil.example:80")
            .header("X-Forwarded-Host", "evil.example")
            .send();
        resp.expect(200);
        assert_eq!(resp.header("access-control-allow-origin"), Some("*"));
        assert_eq!(
            resp.json(),
            json!({
                "resource": public,
                "authorization_servers": [issuer.url],
                "scopes_supported": ["orchestra:read", "orchestra:search", "orchestra:write", "orchestra:admin"],
                "bearer_methods_supported": ["header"],
                "resource_name": "orchestra",
            })
        );
    }

    // No token: the challenge names the metadata and the scope to ask for.
    let resp = server
        .post(&rpc(1, "resources/list", envelope(json!({}))))
        .header("Mcp-Method", "resources/list")
        .header("MCP-Protocol-Version", "2026-07-28")
        .send();
    resp.expect(401);
    let params = challenge(&resp);
    assert_eq!(
        params["resource_metadata"],
        format!("http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp")
    );
    assert_eq!(params["scope"], "orchestra:read");
    assert!(!params.contains_key("error"), "{params:?}");

    // A reader: lists and reads, is refused search with a step-up challenge.
    let reader = issuer.token(&public, "alice", "openid orchestra:read", json!({}));
    let resp = call(&server, &reader, "resources/list", json!({}));
    resp.expect(200);
    assert!(
        !resp.json()["result"]["resources"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    let resp = call(
        &server,
        &reader,
        "tools/call",
        json!({"name": "search", "arguments": {"query": "sync"}}),
    );
    resp.expect(403);
    let params = challenge(&resp);
    assert_eq!(params["error"], "insufficient_scope");
    assert_eq!(params["scope"], "orchestra:read orchestra:search");
    assert!(params["resource_metadata"].ends_with("/.well-known/oauth-protected-resource/mcp"));

    // Features only: a note is as missing as one that never was.
    let features = issuer.token(
        &public,
        "bob",
        "orchestra:read:features orchestra:search",
        json!({}),
    );
    let resp = call(&server, &features, "resources/list", json!({}));
    resp.expect(200);
    let uris: Vec<String> = resp.json()["result"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["uri"].as_str().unwrap().to_string())
        .collect();
    assert!(
        !uris.is_empty() && uris.iter().all(|u| u.starts_with("orchestra://features/")),
        "{uris:?}"
    );
    let hidden = call(
        &server,
        &features,
        "resources/read",
        json!({"uri": "orchestra://notes/retro-sprint-14"}),
    );
    let missing = call(
        &server,
        &features,
        "resources/read",
        json!({"uri": "orchestra://notes/never-was"}),
    );
    assert_eq!(hidden.status, missing.status);
    let (hidden, missing) = (hidden.json(), missing.json());
    assert_eq!(hidden["error"]["code"], missing["error"]["code"]);
    assert_eq!(hidden["error"]["message"], missing["error"]["message"]);
    let resp = call(
        &server,
        &features,
        "tools/call",
        json!({"name": "search", "arguments": {"query": "retro sprint"}}),
    );
    resp.expect(200);
    let hits = resp.json()["result"]["structuredContent"]["hits"].clone();
    assert!(
        hits.as_array().unwrap().iter().all(|h| h["uri"]
            .as_str()
            .unwrap()
            .starts_with("orchestra://features/")),
        "{hits}"
    );

    // Tokens that are not for this server, or no longer valid: 401 invalid_token.
    let now = jsonwebtoken::get_current_timestamp();
    for (why, token) in [
        (
            "another audience",
            issuer.token(
                "http://127.0.0.1:1/mcp",
                "alice",
                "orchestra:read",
                json!({}),
            ),
        ),
        (
            "expired",
            issuer.token(
                &public,
                "alice",
                "orchestra:read",
                json!({"exp": now - 120, "iat": now - 600}),
            ),
        ),
        (
            "not yet valid",
            issuer.token(
                &public,
                "alice",
                "orchestra:read",
                json!({"nbf": now + 120}),
            ),
        ),
        (
            "another issuer",
            issuer.token(
                &public,
                "alice",
                "orchestra:read",
                json!({"iss": "http://127.0.0.1:2"}),
            ),
        ),
    ] {
        let resp = call(&server, &token, "resources/list", json!({}));
        assert_eq!(resp.status, 401, "{why}: {resp:?}");
        assert_eq!(challenge(&resp)["error"], "invalid_token", "{why}");
    }

    // A session is its subject's: another subject's token with its id is
    // answered as for an unknown session.
    let resp = server
        .post(&initialize(0))
        .header("Authorization", &format!("Bearer {reader}"))
        .send();
    resp.expect(200);
    let session = resp.header("mcp-session-id").unwrap().to_string();
    let other = issuer.token(&public, "mallory", "orchestra:read", json!({}));
    let resp = server
        .post(&rpc(2, "resources/list", json!({})))
        .session(&session)
        .header("Authorization", &format!("Bearer {other}"))
        .send();
    resp.expect(404);
    let again = issuer.token(
        &public,
        "alice",
        "orchestra:read",
        json!({"jti": "another"}),
    );
    let resp = server
        .post(&rpc(3, "resources/list", json!({})))
        .session(&session)
        .header("Authorization", &format!("Bearer {again}"))
        .send();
    resp.expect(200);

    // API keys work beside OAuth, with --api-keys.
    let key = create_key(&p, "ci", &["orchestra:read"]);
    call(&server, &key, "resources/list", json!({})).expect(200);

    // No token in the log.
    let log = server.stderr();
    for token in [&reader, &features, &other, &key] {
        assert!(!log.contains(token.as_str()), "a token in the log:\n{log}");
    }
}
