//! Origin, Host, token and body size checks, and binding beyond loopback.

use super::client::Req;
use super::messages::{envelope, fixture_project, initialize, resource_path, rpc};
use super::server::HttpServer;
use super::{FEAT_001, MAX_BODY};
use crate::support::banner;
use serde_json::{Value, json};

// 5. Origin, Host, token, body size.

#[test]
fn origins_beyond_the_loopback_and_the_allowed_ones_are_refused() {
    let p = fixture_project();
    let plain = HttpServer::start(&p, &[]);
    let viewer = HttpServer::start(&p, &["--allow-origin", "https://viewer.example"]);
    let cases = [
        (&plain, "http://evil.example", 403),
        (&plain, "http://localhost:3000", 200),
        (&plain, "http://127.0.0.1:8080", 200),
        (&plain, "http://[::1]:3000", 200),
        (&plain, "http://localhost.evil.example", 403),
        (&plain, "https://viewer.example", 403),
        (&plain, "null", 403),
        (&viewer, "https://viewer.example", 200),
        (&viewer, "http://evil.example", 403),
        (&viewer, "https://viewer.example.evil", 403),
        (&viewer, "http://localhost:3000", 200),
    ];
    for (s, origin, status) in cases {
        let init = s.post(&initialize(0)).origin(origin).send();
        assert_eq!(init.status, status, "POST /mcp from {origin}: {init:?}");
        assert_eq!(
            init.header("mcp-session-id").is_some(),
            status == 200,
            "{origin}: {init:?}"
        );
        let read = s
            .request("GET", &resource_path(FEAT_001))
            .origin(origin)
            .send();
        assert_eq!(read.status, status, "GET /resource from {origin}: {read:?}");
    }
}

/// An allowed browser page must also be able to read the answers: without
/// CORS headers the browser hides them, and without an answer to the
/// preflight it never sends a JSON POST (or one with `Authorization`).
#[test]
fn an_allowed_origin_gets_cors_headers() {
    let p = fixture_project();
    let s = HttpServer::start(&p, &["--allow-origin", "https://viewer.example"]);
    for origin in ["https://viewer.example", "http://localhost:3000"] {
        let read = s
            .request("GET", &resource_path(FEAT_001))
            .origin(origin)
            .send();
        read.expect(200);
        assert!(
            matches!(read.header("access-control-allow-origin"), Some(o) if o == origin || o == "*"),
            "GET /resource from {origin}: {read:?}"
        );
        let preflight = s
            .request("OPTIONS", "/mcp")
            .origin(origin)
            .header("Access-Control-Request-Method", "POST")
            .header(
                "Access-Control-Request-Headers",
                "content-type, mcp-session-id, mcp-protocol-version",
            )
            .send();
        assert!(
            (200..300).contains(&preflight.status),
            "preflight from {origin}: {preflight:?}"
        );
        let allowed = preflight
            .header("access-control-allow-headers")
            .unwrap_or_default()
            .to_ascii_lowercase();
        assert!(
            allowed == "*" || allowed.contains("mcp-session-id"),
            "preflight from {origin}: {preflight:?}"
        );
        let init = s.post(&initialize(0)).origin(origin).send();
        init.expect(200);
        let exposed = init
            .header("access-control-expose-headers")
            .unwrap_or_default()
            .to_ascii_lowercase();
        assert!(
            exposed.contains("mcp-session-id"),
            "POST /mcp from {origin}: {init:?}"
        );
    }
    let refused = s
        .request("OPTIONS", "/mcp")
        .origin("http://evil.example")
        .header("Access-Control-Request-Method", "POST")
        .send();
    refused.expect(403);
}

#[test]
fn a_host_other_than_the_bound_address_is_refused() {
    let p = fixture_project();
    let s = HttpServer::start(&p, &[]);
    let port = s.port;
    let cases = [
        (format!("evil.example:{port}"), 421),
        (format!("127.0.0.1:{port}"), 200),
        (format!("localhost:{port}"), 200),
        (format!("LOCALHOST:{port}"), 200),
        (format!("127.0.0.1:{}", port.wrapping_add(1)), 421),
        ("evil.example".to_string(), 421),
    ];
    for (host, status) in cases {
        let init = s.post(&initialize(0)).host(&host).send();
        assert_eq!(init.status, status, "POST /mcp, Host {host}: {init:?}");
        let read = s
            .request("GET", &resource_path(FEAT_001))
            .host(&host)
            .send();
        assert_eq!(read.status, status, "GET /resource, Host {host}: {read:?}");
        let health = s.request("GET", "/healthz").host(&host).send();
        assert_eq!(
            health.status, status,
            "GET /healthz, Host {host}: {health:?}"
        );
    }
}

#[test]
fn a_token_from_a_file_or_the_environment_is_required() {
    let p = fixture_project();
    let token = "s3cret-T0ken";
    p.outside_file("token", format!("{token}\n"));
    let token_file = p.root_path("token");
    let servers = [
        (
            "--token-file",
            HttpServer::launch(
                &p,
                "127.0.0.1:0",
                &["--token-file", token_file.to_str().unwrap()],
                &[],
            ),
        ),
        (
            "ORCHESTRA_TOKEN",
            HttpServer::launch(&p, "127.0.0.1:0", &[], &[("ORCHESTRA_TOKEN", token)]),
        ),
    ];
    let right = format!("Bearer {token}");
    let cases = [
        (None, 401),
        (Some("Bearer wrong"), 401),
        (Some("Bearer "), 401),
        (Some(token), 401),
        (Some("Basic czNjcmV0LVQwa2Vu"), 401),
        (Some(&right[..right.len() - 1]), 401),
        (Some(right.as_str()), 200),
    ];
    for (how, s) in &servers {
        for (authorization, status) in cases {
            let with = |mut req: Req<'_>| {
                if let Some(value) = authorization {
                    req = req.header("Authorization", value);
                }
                req.send()
            };
            for resp in [
                with(s.post(&initialize(0))),
                with(s.request("GET", &resource_path(FEAT_001))),
            ] {
                assert_eq!(resp.status, status, "{how}, {authorization:?}: {resp:?}");
                if status == 401 {
                    assert!(
                        resp.header("www-authenticate")
                            .is_some_and(|h| h.starts_with("Bearer")),
                        "{how}: {resp:?}"
                    );
                    assert_eq!(resp.header("mcp-session-id"), None, "{resp:?}");
                }
            }
        }
        let health = s.request("GET", "/healthz").send();
        health.expect(200);
        assert_eq!(health.text(), "ok");
    }
}

#[test]
fn bodies_over_4_mib_are_refused_with_413() {
    let p = fixture_project();
    let s = HttpServer::start(&p, &[]);
    // A read padded to exactly `len` bytes.
    let padded = |len: usize| {
        let mut message = rpc(
            1,
            "resources/read",
            envelope(json!({"uri": FEAT_001, "pad": ""})),
        );
        let bare = message.to_string().len();
        message["params"]["pad"] = Value::from("x".repeat(len - bare));
        let body = message.to_string().into_bytes();
        assert_eq!(body.len(), len);
        body
    };
    // The headers a 2026-07-28 client sends with the padded read.
    let post = || {
        s.request("POST", "/mcp")
            .header("Mcp-Method", "resources/read")
            .header("Mcp-Name", FEAT_001)
            .header("MCP-Protocol-Version", "2026-07-28")
    };
    let at_limit = post().body(padded(MAX_BODY)).send();
    at_limit.expect(200);
    assert_eq!(at_limit.json()["result"]["resultType"], "complete");

    for body in [padded(MAX_BODY + 1), vec![b' '; MAX_BODY + 1024 * 1024]] {
        let len = body.len();
        let resp = s.request("POST", "/mcp").body(body).send();
        assert_eq!(resp.status, 413, "{len} bytes: {resp:?}");
    }
    // The same without a Content-Length to go by.
    let chunked = post().body(padded(MAX_BODY)).chunked().send();
    chunked.expect(200);
    assert_eq!(chunked.json()["result"]["resultType"], "complete");
    s.request("POST", "/mcp")
        .body(padded(MAX_BODY + 1))
        .chunked()
        .send()
        .expect(413);
    // The server goes on.
    s.call(None, &rpc(2, "server/discover", envelope(json!({}))));
}

// 8. Beyond loopback.

#[test]
fn binding_beyond_loopback_without_a_token_warns() {
    let p = fixture_project();
    let cases = [
        ("0.0.0.0:0", None, true),
        ("0.0.0.0:0", Some("t0ken"), false),
        ("127.0.0.1:0", None, false),
    ];
    for (bind, token, warns) in cases {
        let envs: Vec<(&str, &str)> = token.map(|t| ("ORCHESTRA_TOKEN", t)).into_iter().collect();
        let s = HttpServer::launch(&p, bind, &[], &envs);
        // Only loopback traffic, even when bound to every interface.
        s.request("GET", "/healthz").send().expect(200);
        // The viewer's line is the last one written before serving.
        let stderr = s.stderr_with("the viewer is at http://");
        assert_eq!(
            stderr.contains("WARN") && stderr.contains("token"),
            warns,
            "{bind} token {token:?}: {stderr}"
        );
        if !warns {
            // The build, then only the addresses of /mcp and of the viewer.
            assert_eq!(stderr.lines().count(), 3, "{stderr}");
            assert_eq!(stderr.lines().next(), Some(banner().as_str()), "{stderr}");
            assert!(stderr.contains("the viewer is at http://"), "{stderr}");
        }
    }
}
