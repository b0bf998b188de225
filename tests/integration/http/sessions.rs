//! Handshake sessions, the MCP-Protocol-Version header, and 2026-07-28 stateless requests.

use super::messages::{envelope, fixture_project, fixture_text, fixture_uris, initialize, rpc};
use super::server::HttpServer;
use super::{CAFE, FEAT_001};
use base64::Engine;
use serde_json::{Value, json};

// 1. Handshake sessions.

#[test]
fn a_handshake_session_lives_from_initialize_to_delete() {
    let p = fixture_project();
    let s = HttpServer::start(&p, &["--page-size", "5"]);

    let init = s.post(&initialize(0)).send();
    init.expect(200);
    assert_eq!(init.header("content-type"), Some("application/json"));
    let sid = init
        .header("mcp-session-id")
        .expect("Mcp-Session-Id")
        .to_string();
    assert!(
        sid.len() >= 16 && sid.bytes().all(|b| (0x21..=0x7e).contains(&b)),
        "session ids are visible ASCII and long enough to be unguessable: {sid:?}"
    );
    let result = &init.json()["result"];
    assert_eq!(result["protocolVersion"], "2025-11-25", "{result}");
    assert_eq!(result["serverInfo"]["name"], "orchestra", "{result}");
    assert_eq!(result["capabilities"]["resources"]["subscribe"], true);
    let other = s.initialize();
    assert_ne!(other, sid, "every initialize opens a session of its own");

    // A notification: 202, no body.
    let accepted = s
        .post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .session(&sid)
        .send();
    accepted.expect(202);
    assert!(accepted.body.is_empty(), "{accepted:?}");

    // The session header: missing, unknown, right.
    let list = rpc(1, "resources/list", json!({}));
    let without = s.post(&list).send();
    without.expect(400);
    assert_eq!(without.rpc_error_code(), -32600);
    assert_eq!(without.json()["id"], 1, "{without:?}");
    s.post(&list)
        .session("00000000000000000000000000000000")
        .send()
        .expect(404);
    assert!(s.call(Some(&sid), &list)["result"]["resources"].is_array());

    // Paging through every document, five at a time.
    let mut uris = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let page = s.call(Some(&sid), &rpc(10 + pages, "resources/list", params));
        let result = &page["result"];
        assert!(result.get("resultType").is_none(), "handshake era: {page}");
        let resources = result["resources"].as_array().expect("resources");
        assert!(resources.len() <= 5, "{page}");
        uris.extend(
            resources
                .iter()
                .map(|r| r["uri"].as_str().unwrap().to_string()),
        );
        pages += 1;
        match result.get("nextCursor") {
            Some(next) => cursor = Some(next.as_str().unwrap().to_string()),
            None => break,
        }
        assert!(pages < 10, "the listing does not end");
    }
    assert_eq!(pages, 4);
    assert_eq!(uris, fixture_uris());
    assert_eq!(uris.len(), 17);

    // Reads, byte-exact; not found.
    for (uri, file) in [
        (FEAT_001, "features/FEAT-001.md"),
        (CAFE, "notes/café notes.md"),
        ("orchestra://docs/adr/0006", "docs/adr/0006.md"),
    ] {
        let read = s.call(Some(&sid), &rpc(20, "resources/read", json!({"uri": uri})));
        let content = &read["result"]["contents"][0];
        assert_eq!(content["uri"], uri, "{read}");
        assert_eq!(content["mimeType"], "text/markdown", "{read}");
        assert_eq!(content["text"].as_str(), Some(fixture_text(file).as_str()));
    }
    let missing = "orchestra://features/FEAT-999";
    let read = s.call(
        Some(&sid),
        &rpc(21, "resources/read", json!({"uri": missing})),
    );
    assert_eq!(read["error"]["code"], -32002, "{read}");
    assert_eq!(read["error"]["data"]["uri"], missing, "{read}");

    // DELETE ends the session, and only it.
    let deleted = s.request("DELETE", "/mcp").session(&sid).send();
    assert!((200..300).contains(&deleted.status), "{deleted:?}");
    s.post(&list).session(&sid).send().expect(404);
    s.request("DELETE", "/mcp").session(&sid).send().expect(404);
    s.request("DELETE", "/mcp").send().expect(400);
    assert!(s.call(Some(&other), &list)["result"]["resources"].is_array());
}

#[test]
fn a_failed_initialize_opens_no_session() {
    let p = fixture_project();
    let s = HttpServer::start(&p, &[]);
    let resp = s
        .post(&rpc(0, "initialize", json!({"capabilities": {}})))
        .send();
    resp.expect(200);
    assert_eq!(resp.rpc_error_code(), -32602);
    assert_eq!(resp.header("mcp-session-id"), None, "{resp:?}");
}

#[test]
fn the_protocol_version_header_must_name_a_known_version() {
    let p = fixture_project();
    let s = HttpServer::start(&p, &[]);
    let sid = s.initialize();
    let cases: [(Option<&str>, u16); 8] = [
        (None, 200),
        (Some("2025-11-25"), 200),
        (Some("2025-06-18"), 200),
        (Some("2025-03-26"), 200),
        (Some("2024-11-05"), 200),
        (Some("1999-01-01"), 400),
        (Some("2025-11-25x"), 400),
        (Some(""), 400),
    ];
    for (n, (version, status)) in cases.into_iter().enumerate() {
        let mut req = s
            .post(&rpc(n as i64, "resources/list", json!({})))
            .session(&sid);
        if let Some(version) = version {
            req = req.header("MCP-Protocol-Version", version);
        }
        let resp = req.send();
        assert_eq!(resp.status, status, "{version:?}: {resp:?}");
        if status == 400 {
            assert_eq!(resp.rpc_error_code(), -32600, "{version:?}");
        } else {
            assert!(resp.json()["result"]["resources"].is_array(), "{resp:?}");
        }
    }
    // The same on the session's stream, and for a stateless request.
    s.request("GET", "/mcp")
        .session(&sid)
        .header("MCP-Protocol-Version", "1999-01-01")
        .send()
        .expect(400);
    let discover = rpc(1, "server/discover", envelope(json!({})));
    s.post(&discover)
        .header("MCP-Protocol-Version", "2026-07-28")
        .send()
        .expect(200);
    s.post(&discover)
        .header("MCP-Protocol-Version", "1999-01-01")
        .send()
        .expect(400);
}

#[test]
fn stateless_requests_need_no_session() {
    let p = fixture_project();
    let s = HttpServer::start(&p, &[]);

    let resp = s
        .post(&rpc(1, "server/discover", envelope(json!({}))))
        .send();
    resp.expect(200);
    assert_eq!(resp.header("mcp-session-id"), None, "{resp:?}");
    let discover = &resp.json()["result"];
    assert_eq!(discover["resultType"], "complete", "{discover}");
    assert_eq!(discover["ttlMs"], 3_600_000, "{discover}");
    assert_eq!(discover["cacheScope"], "private", "{discover}");
    assert_eq!(discover["supportedVersions"], json!(["2026-07-28"]));
    assert_eq!(
        discover["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "orchestra"
    );

    let read = s.call(
        None,
        &rpc("r-1", "resources/read", envelope(json!({"uri": FEAT_001}))),
    );
    let result = &read["result"];
    assert_eq!(result["resultType"], "complete", "{read}");
    assert_eq!(result["ttlMs"], 0, "{read}");
    assert_eq!(result["cacheScope"], "private", "{read}");
    assert_eq!(
        result["contents"][0]["text"].as_str(),
        Some(fixture_text("features/FEAT-001.md").as_str())
    );

    let list = s.call(None, &rpc(2, "resources/list", envelope(json!({}))));
    assert_eq!(list["result"]["resources"].as_array().unwrap().len(), 17);
    assert_eq!(list["result"]["ttlMs"], 0);
    assert_eq!(list["result"]["cacheScope"], "private");

    let missing = "orchestra://features/FEAT-999";
    let read = s.call(
        None,
        &rpc(3, "resources/read", envelope(json!({"uri": missing}))),
    );
    assert_eq!(read["error"]["code"], -32602, "{read}");
    assert_eq!(read["error"]["data"]["uri"], missing, "{read}");

    let mut old = rpc(4, "resources/list", envelope(json!({})));
    old["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2099-01-01");
    let refused = s.call(None, &old);
    assert_eq!(refused["error"]["code"], -32022);
    assert_eq!(
        refused["error"]["data"],
        json!({"supported": ["2026-07-28"], "requested": "2099-01-01"})
    );

    // A listen that cannot start is answered at once, in JSON.
    let bad = rpc(
        6,
        "subscriptions/listen",
        envelope(json!({"notifications": 5})),
    );
    assert_eq!(s.call(None, &bad)["error"]["code"], -32602);

    // A notification needs no session either.
    let cancelled =
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9}});
    let resp = s.post(&cancelled).send();
    resp.expect(202);
    assert!(resp.body.is_empty(), "{resp:?}");

    // Bodies that are no single message: 400 with the JSON-RPC error.
    let one = rpc(5, "server/discover", envelope(json!({})));
    let cases: [(Vec<u8>, i64); 5] = [
        (format!("[{one}]").into_bytes(), -32600),
        (format!("[{one},{one}]").into_bytes(), -32600),
        (b"42".to_vec(), -32600),
        (b"{not json".to_vec(), -32700),
        (b"".to_vec(), -32700),
    ];
    for (body, code) in cases {
        let shown = String::from_utf8_lossy(&body).into_owned();
        let resp = s.request("POST", "/mcp").body(body).send();
        assert_eq!(resp.status, 400, "{shown}: {resp:?}");
        assert_eq!(resp.rpc_error_code(), code, "{shown}");
        assert_eq!(resp.json()["id"], Value::Null, "{shown}");
    }
}

/// A request, the headers it sends instead of a conforming client's (a
/// value, or `None` to leave the header out), the status and the error code
/// expected (0: answered).
type HeaderCase = (Value, Vec<(&'static str, Option<String>)>, u16, i64);

/// 2026-07-28 over HTTP: the headers must say what the body says.
#[test]
fn stateless_requests_carry_headers_that_match_the_body() {
    let p = fixture_project();
    let s = HttpServer::start(&p, &[]);
    let read = |uri: &str| rpc(1, "resources/read", envelope(json!({"uri": uri})));
    let search = rpc(
        2,
        "tools/call",
        envelope(json!({"name": "search", "arguments": {"query": "sync"}})),
    );
    let cases: Vec<HeaderCase> = vec![
        (read(FEAT_001), vec![], 200, 0),
        (read(CAFE), vec![], 200, 0),
        // Not ASCII: the client sends the name in base64, which matches;
        // then the handler refuses the URI (ids must be percent-encoded).
        (read("orchestra://notes/café notes"), vec![], 400, -32602),
        (search.clone(), vec![], 200, 0),
        (read(FEAT_001), vec![("Mcp-Method", None)], 400, -32020),
        (
            read(FEAT_001),
            vec![("Mcp-Method", Some("resources/list".into()))],
            400,
            -32020,
        ),
        (read(FEAT_001), vec![("Mcp-Name", None)], 400, -32020),
        (
            read(FEAT_001),
            vec![("Mcp-Name", Some("orchestra://features/FEAT-002".into()))],
            400,
            -32020,
        ),
        // Base64 form, decoded before it is compared.
        (
            read(CAFE),
            vec![(
                "Mcp-Name",
                Some(format!(
                    "=?base64?{}?=",
                    base64::engine::general_purpose::STANDARD.encode(CAFE)
                )),
            )],
            200,
            0,
        ),
        (
            read(CAFE),
            vec![("Mcp-Name", Some("=?base64?not base64?=".into()))],
            400,
            -32020,
        ),
        (search.clone(), vec![("Mcp-Name", None)], 400, -32020),
        (
            search.clone(),
            vec![("Mcp-Name", Some("grep".into()))],
            400,
            -32020,
        ),
        (
            read(FEAT_001),
            vec![("MCP-Protocol-Version", None)],
            400,
            -32020,
        ),
        (
            read(FEAT_001),
            vec![("MCP-Protocol-Version", Some("2025-11-25".into()))],
            400,
            -32020,
        ),
        // Errors of the request itself map to statuses too.
        (read("orchestra://features/FEAT-999"), vec![], 400, -32602),
        (
            rpc(3, "no/such/method", envelope(json!({}))),
            vec![],
            404,
            -32601,
        ),
    ];
    for (message, headers, status, code) in cases {
        let mut req = s.post(&message);
        for (name, value) in &headers {
            req = req.without(name);
            if let Some(value) = value {
                req = req.header(name, value);
            }
        }
        let resp = req.send();
        assert_eq!(resp.status, status, "{message} {headers:?}: {resp:?}");
        let answer = resp.json();
        assert_eq!(answer["id"], message["id"], "{resp:?}");
        match code {
            0 => assert!(answer["result"].is_object(), "{resp:?}"),
            code => {
                assert_eq!(answer["error"]["code"], code, "{headers:?}: {resp:?}");
                if code == -32020 {
                    let shown = headers[0].0;
                    let said = answer["error"]["message"].as_str().unwrap_or_default();
                    assert!(said.contains(shown), "names {shown}: {said}");
                }
            }
        }
    }
    // An unsupported version: 400 and -32022 with what is supported.
    let mut old = rpc(4, "resources/list", envelope(json!({})));
    old["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2099-01-01");
    let resp = s.post(&old).send();
    assert_eq!(resp.status, 400, "{resp:?}");
    assert_eq!(
        resp.json()["error"]["data"],
        json!({"supported": ["2026-07-28"], "requested": "2099-01-01"})
    );
    // The handshake era answers errors with 200, headers or not.
    let sid = s.initialize();
    let missing = s.call(
        Some(&sid),
        &rpc(
            5,
            "resources/read",
            json!({"uri": "orchestra://features/FEAT-999"}),
        ),
    );
    assert_eq!(missing["error"]["code"], -32002);
}
