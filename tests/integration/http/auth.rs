//! Who may do what over HTTP: scoped API keys (`orchestra token`), their 401 and 403 answers parsed as the MCP clients parse them, step-up scopes, sessions bound to their principal, revocation reaching a second server, and no key in a log line or a URL. Both stores.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::messages::{envelope, fixture_project, initialize, listen, rpc};
use super::server::HttpServer;
use crate::support::{Db, Project, on_postgres};

/// A `WWW-Authenticate: Bearer k="v", …` challenge as the TypeScript SDK
/// reads it (`extractWWWAuthenticateParams`): the scheme, then each
/// `name="value"` pair.
fn challenge(header: &str) -> (String, BTreeMap<String, String>) {
    let (scheme, rest) = header.split_once(' ').unwrap_or((header, ""));
    let mut params = BTreeMap::new();
    let mut rest = rest.trim();
    while !rest.is_empty() {
        let (name, after) = rest.split_once("=\"").expect("name=\"value\"");
        let (value, after) = after.split_once('"').expect("a closing quote");
        params.insert(name.trim().to_string(), value.to_string());
        rest = after.trim_start_matches([',', ' ']);
    }
    (scheme.to_string(), params)
}

/// `orchestra token create --scope … --name NAME`: the key it prints.
pub(crate) fn create_key(p: &Project, name: &str, scopes: &[&str]) -> String {
    let mut args = vec!["token", "create", "--name", name, "--db"];
    let db = p.db_arg();
    args.push(&db);
    for scope in scopes {
        args.extend(["--scope", scope]);
    }
    let out = p.run(&args);
    out.assert_success();
    let key = out.stdout.trim().to_string();
    assert!(key.starts_with("orc_") && key.len() == 47, "{key}");
    key
}

fn search(server: &HttpServer, key: &str) -> crate::http::Resp {
    server
        .post(&rpc(
            1,
            "tools/call",
            envelope(json!({"name": "search", "arguments": {"query": "sync"}})),
        ))
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", "search")
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Authorization", &format!("Bearer {key}"))
        .send()
}

fn edit(server: &HttpServer, key: &str, uri: &str) -> crate::http::Resp {
    server
        .post(&rpc(
            2,
            "tools/call",
            envelope(json!({"name": "edit", "arguments": {
                "uri": uri, "edits": [{"append": "by a key\n"}]}})),
        ))
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", "edit")
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Authorization", &format!("Bearer {key}"))
        .send()
}

fn list(server: &HttpServer, bearer: Option<&str>) -> crate::http::Resp {
    let mut req = server
        .post(&rpc(3, "resources/list", envelope(json!({}))))
        .header("Mcp-Method", "resources/list")
        .header("MCP-Protocol-Version", "2026-07-28");
    if let Some(bearer) = bearer {
        req = req.header("Authorization", bearer);
    }
    req.send()
}

fn www_authenticate(resp: &crate::http::Resp) -> (String, BTreeMap<String, String>) {
    challenge(
        resp.header("www-authenticate")
            .unwrap_or_else(|| panic!("no WWW-Authenticate: {resp:?}")),
    )
}

#[test]
fn api_keys_grant_what_their_scopes_say_and_challenge_for_the_rest() {
    let p = fixture_project();
    let dir = p.dir();
    let reader = create_key(&p, "reader", &["orchestra:read"]);
    let notes = create_key(&p, "notes-writer", &["orchestra:write:notes"]);
    let admin = create_key(&p, "admin", &["orchestra:admin"]);
    let server = HttpServer::start(&p, &["--api-keys", "--project", dir.to_str().unwrap()]);

    // No credential: 401, the scope to ask for, no error (none was sent).
    let resp = list(&server, None);
    resp.expect(401);
    let (scheme, params) = www_authenticate(&resp);
    assert_eq!(scheme, "Bearer");
    assert_eq!(
        params.get("scope").map(String::as_str),
        Some("orchestra:read")
    );
    assert_eq!(params.get("error"), None, "{params:?}");
    assert_eq!(resp.json()["error"], "unauthorized");

    // A key that is no key, and a key in the query string: 401 invalid_token / no credential.
    let resp = list(
        &server,
        Some("Bearer orc_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"),
    );
    resp.expect(401);
    assert_eq!(www_authenticate(&resp).1["error"], "invalid_token");
    let resp = server
        .request(
            "POST",
            &format!("/mcp?token={reader}&access_token={reader}"),
        )
        .json(&rpc(3, "resources/list", envelope(json!({}))))
        .header("Mcp-Method", "resources/list")
        .header("MCP-Protocol-Version", "2026-07-28")
        .send();
    resp.expect(401);
    assert_eq!(www_authenticate(&resp).1.get("error"), None);

    // Read only: lists, and is refused search and writes with a step-up
    // challenge naming every scope each needs.
    list(&server, Some(&format!("Bearer {reader}"))).expect(200);
    let resp = search(&server, &reader);
    resp.expect(403);
    let (_, params) = www_authenticate(&resp);
    assert_eq!(params["error"], "insufficient_scope");
    assert_eq!(params["scope"], "orchestra:read orchestra:search");
    assert_eq!(resp.json()["error"], "insufficient_scope");
    let resp = edit(&server, &reader, "orchestra://notes/retro-sprint-14");
    resp.expect(403);
    assert_eq!(www_authenticate(&resp).1["scope"], "orchestra:write");

    // Write on notes: it writes notes (and reads and searches them), not features.
    let file = p.path("notes/retro-sprint-14.md");
    let before = std::fs::read_to_string(&file).unwrap();
    let resp = edit(&server, &notes, "orchestra://notes/retro-sprint-14");
    resp.expect(200);
    assert_eq!(resp.json()["result"]["isError"], false, "{resp:?}");
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        format!("{before}by a key\n")
    );
    search(&server, &notes).expect(200);
    let feature = std::fs::read(p.path("features/FEAT-001.md")).unwrap();
    let resp = edit(&server, &notes, "orchestra://features/FEAT-001");
    resp.expect(403);
    let (_, params) = www_authenticate(&resp);
    assert_eq!(params["scope"], "orchestra:write:features");
    assert_eq!(params["error"], "insufficient_scope");
    assert_eq!(
        std::fs::read(p.path("features/FEAT-001.md")).unwrap(),
        feature
    );

    // Admin implies everything.
    search(&server, &admin).expect(200);
    let resp = edit(&server, &admin, "orchestra://features/FEAT-001");
    resp.expect(200);
    assert_eq!(resp.json()["result"]["isError"], false, "{resp:?}");

    // No key in the log, even at debug level's neighbour, info.
    let log = server.stderr();
    for key in [&reader, &notes, &admin] {
        assert!(!log.contains(key.as_str()), "a key in the log:\n{log}");
        assert!(!log.contains(&key[4..]), "a key in the log:\n{log}");
    }
}

#[test]
fn a_revoked_or_expired_key_stops_working_on_every_server() {
    let p = fixture_project();
    let key = create_key(&p, "ci", &["orchestra:read"]);
    let other = create_key(&p, "other", &["orchestra:read"]);
    let first = HttpServer::start(&p, &["--api-keys"]);
    let second = HttpServer::start(&p, &["--api-keys"]);
    let bearer = format!("Bearer {key}");
    list(&first, Some(&bearer)).expect(200);
    list(&second, Some(&bearer)).expect(200);

    let out = p.run(&["token", "revoke", "ci", "--db", &p.db_arg()]);
    out.assert_success();
    // Both refuse it within the key cache's two seconds (and the margin of
    // a loaded machine).
    for server in [&first, &second] {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let resp = list(server, Some(&bearer));
            if resp.status == 401 {
                assert_eq!(www_authenticate(&resp).1["error"], "invalid_token");
                break;
            }
            assert_eq!(resp.status, 200, "{resp:?}");
            assert!(Instant::now() < deadline, "the revoked key still works");
            std::thread::sleep(Duration::from_millis(200));
        }
    }
    list(&second, Some(&format!("Bearer {other}"))).expect(200);
    let listed = p.run(&["token", "list", "--json", "--db", &p.db_arg()]);
    listed.assert_success();
    let states: Vec<(String, String)> = listed
        .stdout
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .map(|v| {
            (
                v["name"].as_str().unwrap().into(),
                v["state"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert!(
        states.contains(&("ci".into(), "revoked".into())),
        "{states:?}"
    );
    assert!(
        states.contains(&("other".into(), "live".into())),
        "{states:?}"
    );
    assert!(!listed.stdout.contains(&key[4..]) && !listed.stdout.contains(&other[4..]));

    // A revoked cookie does not keep a browser out: a key brought in the
    // address replaces it.
    let resp = first
        .request("GET", &format!("/ls/features?token={other}"))
        .header("Cookie", &format!("orchestra_token={key}"))
        .send();
    resp.expect(303);
    // The key, percent-encoded as a cookie value.
    let cookie = resp.header("set-cookie").expect("a cookie");
    let value = cookie
        .strip_prefix("orchestra_token=")
        .and_then(|c| c.split(';').next())
        .expect("the token cookie");
    assert_eq!(
        percent_encoding::percent_decode_str(value)
            .decode_utf8()
            .unwrap(),
        other.as_str()
    );
    assert_eq!(resp.header("location"), Some("/ls/features"));

    // Expired: its time set in the past, as a month-old `--expires 30d` is.
    let expire = match on_postgres() {
        true => "UPDATE api_keys SET expires_at = 1 WHERE name = 'other'",
        false => "UPDATE api_keys SET expires_at = 1 WHERE name = 'other';",
    };
    Db::writable(&p.db()).batch(expire);
    let deadline = Instant::now() + Duration::from_secs(10);
    while list(&first, Some(&format!("Bearer {other}"))).status != 401 {
        assert!(Instant::now() < deadline, "the expired key still works");
        std::thread::sleep(Duration::from_millis(200));
    }
    // Its name is free again.
    create_key(&p, "other", &["orchestra:read"]);
}

#[test]
fn a_session_belongs_to_the_credential_that_opened_it() {
    let p = fixture_project();
    let alice = create_key(&p, "alice", &["orchestra:read"]);
    let bob = create_key(&p, "bob", &["orchestra:read"]);
    let server = HttpServer::start(&p, &["--api-keys"]);
    let resp = server
        .post(&initialize(0))
        .header("Authorization", &format!("Bearer {alice}"))
        .send();
    resp.expect(200);
    let session = resp.header("mcp-session-id").unwrap().to_string();
    let ask = |key: &str| {
        server
            .post(&rpc(1, "resources/list", json!({})))
            .session(&session)
            .header("Authorization", &format!("Bearer {key}"))
            .send()
    };
    ask(&bob).expect(404);
    let resp = ask(&alice);
    resp.expect(200);
    assert!(resp.json()["result"]["resources"].is_array(), "{resp:?}");
    let stream = server
        .request("GET", "/mcp")
        .session(&session)
        .header("Authorization", &format!("Bearer {bob}"))
        .send();
    stream.expect(404);
    let delete = |key: &str| {
        server
            .request("DELETE", "/mcp")
            .session(&session)
            .header("Authorization", &format!("Bearer {key}"))
            .send()
    };
    delete(&bob).expect(404);
    delete(&alice).expect(204);
}

#[test]
fn the_static_token_alone_answers_as_it_always_did() {
    let p = fixture_project();
    p.outside_file("token", "s3cret\n");
    let token_file = p.root_path("token");
    let server = HttpServer::start(&p, &["--token-file", token_file.to_str().unwrap()]);
    let resp = list(&server, None);
    resp.expect(401);
    assert_eq!(resp.header("www-authenticate"), Some("Bearer"));
    let resp = list(&server, Some("Bearer wrong"));
    resp.expect(401);
    assert_eq!(resp.header("www-authenticate"), Some("Bearer"));
    list(&server, Some("Bearer s3cret")).expect(200);
    search(&server, "s3cret").expect(200);
    // A key in the database lets nothing in without --api-keys.
    let key = create_key(&p, "stray", &["orchestra:read"]);
    list(&server, Some(&format!("Bearer {key}"))).expect(401);
    // No metadata without OAuth: nothing names an authorization server.
    server
        .request("GET", "/.well-known/oauth-protected-resource/mcp")
        .header("Authorization", "Bearer s3cret")
        .send()
        .expect(404);
}

#[test]
fn token_commands_refuse_what_they_cannot_do() {
    let p = fixture_project();
    let db = p.db_arg();
    let cases: &[(&[&str], &str)] = &[
        (
            &["token", "create", "--scope", "orchestra:delete"],
            "unknown scope",
        ),
        (&["token", "create", "--scope", "openid"], "unknown scope"),
        (
            &["token", "create", "--scope", "orchestra:read:secrets"],
            "the area must be",
        ),
        (
            &[
                "token",
                "create",
                "--scope",
                "orchestra:read",
                "--expires",
                "soon",
            ],
            "invalid lifetime",
        ),
        (
            &[
                "token",
                "create",
                "--scope",
                "orchestra:read",
                "--name",
                "a b",
            ],
            "invalid key name",
        ),
        (&["token", "revoke", "nobody"], "no live key named"),
    ];
    for (args, message) in cases {
        let mut args = args.to_vec();
        args.extend(["--db", &db]);
        let out = p.run(&args);
        assert_eq!(out.code, Some(2), "{args:?}: {out:?}");
        assert!(out.stderr.contains(message), "{args:?}: {}", out.stderr);
        assert_eq!(out.stderr.lines().count(), 1, "one line: {}", out.stderr);
    }
    create_key(&p, "ci", &["orchestra:read"]);
    let out = p.run(&[
        "token",
        "create",
        "--scope",
        "orchestra:read",
        "--name",
        "ci",
        "--db",
        &db,
    ]);
    assert_eq!(out.code, Some(2));
    assert!(
        out.stderr.contains("exists: revoke it first"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_stream_ends_when_its_key_is_revoked() {
    let p = fixture_project();
    let key = create_key(&p, "listener", &["orchestra:read"]);
    let server = HttpServer::start(&p, &["--api-keys"]);
    let mut stream = server
        .post(&listen("l1", &["orchestra://features/FEAT-001"], true))
        .header("Authorization", &format!("Bearer {key}"))
        .open();
    let ack = stream.message(super::NOTIFY_TIMEOUT);
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );
    p.run(&["token", "revoke", "listener", "--db", &p.db_arg()])
        .assert_success();
    // Within the key cache's two seconds and a check's two more, and the
    // margin of a loaded machine: the stream ends, as new requests are refused.
    stream.expect_end(Duration::from_secs(15));
    list(&server, Some(&format!("Bearer {key}"))).expect(401);
}
