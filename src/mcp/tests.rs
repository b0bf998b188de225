//! In-process protocol tests: request lines in, response lines out, over an in-memory duplex stream.

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use super::*;
use crate::doc::{DocKey, Prefix};
use crate::store::{FileStat, NewDocument};

const ENVELOPE: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;
const INIT: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;

fn store_with(docs: &[(Prefix, &str, &[u8])]) -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_or_create(&dir.path().join("o.db")).unwrap();
    let tx = store.begin_import("/project", false).unwrap();
    for (prefix, id, body) in docs {
        tx.put(&NewDocument::new(
            DocKey::new(*prefix, *id),
            FileStat {
                size: body.len() as u64,
                mtime_ns: 1_767_225_600_000_000_000, // 2026-01-01T00:00:00Z
                hash: *blake3::hash(body).as_bytes(),
            },
            std::str::from_utf8(body).is_ok(),
            format!("Title of {id}"),
            (*prefix == Prefix::Features).then(|| format!("About {id}")),
            None,
            body.to_vec(),
        ))
        .unwrap();
    }
    tx.commit(true).unwrap();
    (dir, store)
}

fn fixture() -> (tempfile::TempDir, Store) {
    store_with(&[
        (Prefix::Features, "FEAT-001", b"# One\n"),
        (Prefix::Features, "FEAT-002", b"# Two\n"),
        (Prefix::Notes, "caf\u{e9} notes", "# Caf\u{e9}\n".as_bytes()),
        (Prefix::Docs, "adr/0006", b"# ADR\n"),
        (Prefix::Docs, "bin", b"\xff\xfe raw"),
    ])
}

/// Sends `input` (lines) to a fresh server, closes its stdin, and returns
/// every line it wrote, parsed.
async fn exchange(store: Store, page_size: usize, input: &str) -> Vec<Value> {
    exchange_with(
        StoreSlot::new(Some(store)),
        roots::Roots::new(false),
        page_size,
        input,
    )
    .await
}

/// [`exchange`] with a server that serves `slot` and asks `roots`.
async fn exchange_with(
    slot: StoreSlot,
    roots: roots::Roots,
    page_size: usize,
    input: &str,
) -> Vec<Value> {
    let (client, server) = tokio::io::duplex(1 << 20);
    let (server_read, server_write) = tokio::io::split(server);
    let (_publish, changes) = broadcast::channel(4);
    let serve = tokio::spawn(stdio::serve_slot(
        slot,
        roots,
        Config {
            page_size,
            writer: None,
            writes_later: false,
        },
        server_read,
        server_write,
        changes,
        std::future::pending(),
    ));
    let (client_read, mut client_write) = tokio::io::split(client);
    client_write.write_all(input.as_bytes()).await.unwrap();
    client_write.shutdown().await.unwrap();
    let mut lines = BufReader::new(client_read).lines();
    let mut out = Vec::new();
    while let Some(line) = lines.next_line().await.unwrap() {
        out.push(serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}")));
    }
    serve.await.unwrap().unwrap();
    out
}

/// Responses sorted by id, so concurrent handling does not matter.
async fn responses(input: &[&str]) -> Vec<Value> {
    let (_dir, store) = fixture();
    let mut input = input.join("\n");
    input.push('\n');
    let mut out = exchange(store, 2, &input).await;
    out.sort_by_key(|v| v["id"].to_string());
    out
}

/// The `error.code` of the response with `id`.
fn code_of(responses: &[Value], id: Value) -> i64 {
    let response = responses
        .iter()
        .find(|r| r["id"] == id)
        .unwrap_or_else(|| panic!("no response with id {id}: {responses:?}"));
    response["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("not an error: {response}"))
}

#[track_caller]
fn check_codes(out: &[Value], expected: &[(Value, i64)]) {
    for (id, code) in expected {
        assert_eq!(code_of(out, id.clone()), *code, "id {id}");
    }
    assert_eq!(out.len(), expected.len(), "{out:#?}");
}

#[tokio::test]
async fn framing_errors_keep_the_session_alive() {
    let out = responses(&[
        "not json",
        "[]",
        r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#,
        "42",
        r#"{"jsonrpc":"1.0","id":2,"method":"ping"}"#,
        r#"{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":7}"#,
        r#"{"jsonrpc":"2.0","id":4,"method":"no/such/method"}"#,
        r#"{"jsonrpc":"2.0","id":5,"method":"resources/read","params":{}}"#,
        r#"{"jsonrpc":"2.0","id":6,"method":"resources/read","params":[1]}"#,
        r#"{"jsonrpc":"2.0","id":7,"method":"test/panic"}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":8,"result":{}}"#,
        r#"{"jsonrpc":"2.0","id":9,"method":"ping"}"#,
    ])
    .await;
    let nulls: Vec<i64> = out
        .iter()
        .filter(|r| r["id"].is_null())
        .map(|r| r["error"]["code"].as_i64().unwrap())
        .collect();
    assert_eq!(nulls, [-32700, -32600, -32600, -32600, -32600]);
    let by_id = [
        (json!(2), -32600),
        (json!(3), -32600),
        (json!(4), -32601),
        (json!(5), -32602),
        (json!(6), -32602),
        (json!(7), -32603),
    ];
    for (id, code) in by_id {
        assert_eq!(code_of(&out, id.clone()), code, "id {id}");
    }
    let pong = out.iter().find(|r| r["id"] == json!(9)).unwrap();
    assert_eq!(pong["result"], json!({}));
    assert_eq!(out.len(), 5 + 6 + 1, "{out:#?}");
}

#[tokio::test]
async fn handshake_era_matches_the_reference() {
    let out = responses(&[
        INIT,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"orchestra://features/FEAT-001"}}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"orchestra://features/FEAT-404"}}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"orchestra://docs/bin"}}"#,
        r#"{"jsonrpc":"2.0","id":4,"method":"resources/read","params":{"uri":"orchestra://notes/caf%c3%a9%20notes"}}"#,
        r#"{"jsonrpc":"2.0","id":5,"method":"resources/read","params":{"uri":"file:///etc/passwd"}}"#,
        r#"{"jsonrpc":"2.0","id":6,"method":"resources/templates/list"}"#,
        r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#,
    ])
    .await;
    let by_id = |id: i64| out.iter().find(|r| r["id"] == json!(id)).unwrap().clone();
    let init = by_id(0);
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25");
    assert_eq!(init["result"]["serverInfo"]["name"], "orchestra");
    assert_eq!(
        init["result"]["serverInfo"]["version"],
        env!("CARGO_PKG_VERSION")
    );
    assert_eq!(
        init["result"]["capabilities"],
        json!({"completions": {}, "resources": {"subscribe": true, "listChanged": true}, "tools": {}})
    );
    assert_eq!(
        by_id(1),
        json!({"jsonrpc": "2.0", "id": 1, "result": {"contents": [
            {"uri": "orchestra://features/FEAT-001", "mimeType": "text/markdown", "text": "# One\n",
             "_meta": {"orchestra/version": 1,
                       "orchestra/hash": blake3::hash(b"# One\n").to_hex().to_string()}}
        ]}})
    );
    assert_eq!(
        by_id(2),
        json!({"jsonrpc": "2.0", "id": 2, "error": {"code": -32002, "message": "Resource not found",
               "data": {"uri": "orchestra://features/FEAT-404"}}})
    );
    assert_eq!(
        by_id(3)["result"]["contents"][0],
        json!({"uri": "orchestra://docs/bin", "mimeType": "text/markdown", "blob": "//4gcmF3",
               "_meta": {"orchestra/version": 1,
                         "orchestra/hash": blake3::hash(b"\xff\xfe raw").to_hex().to_string()}})
    );
    assert_eq!(
        by_id(4)["result"]["contents"][0]["uri"],
        "orchestra://notes/caf%C3%A9%20notes"
    );
    assert_eq!(by_id(5)["error"]["code"], -32602);
    let templates = by_id(6)["result"]["resourceTemplates"].clone();
    let uris: Vec<&str> = templates
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["uriTemplate"].as_str().unwrap())
        .collect();
    assert_eq!(
        uris,
        [
            "orchestra://docs/{+id}{?version}",
            "orchestra://features/{+id}{?version}",
            "orchestra://notes/{+id}{?version}"
        ]
    );
    assert!(by_id(6)["result"].get("ttlMs").is_none());
    assert_eq!(by_id(7)["result"], json!({}));
}

#[tokio::test]
async fn stateless_era_decorates_every_result() {
    let line = |id: i64, method: &str, params: &str| {
        let sep = if params.is_empty() { "" } else { "," };
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{{{params}{sep}{ENVELOPE}}}}}"#
        )
    };
    let input = [
        line(1, "server/discover", ""),
        line(2, "resources/list", ""),
        line(
            3,
            "resources/read",
            r#""uri":"orchestra://features/FEAT-001""#,
        ),
        line(
            4,
            "resources/read",
            r#""uri":"orchestra://features/FEAT-404""#,
        ),
        line(5, "resources/templates/list", ""),
        line(
            6,
            "completion/complete",
            r#""ref":{"type":"ref/resource","uri":"orchestra://features/{+id}"},"argument":{"name":"id","value":"FEAT-00"}"#,
        ),
        line(7, "ping", ""),
        INIT.replace(r#""id":0"#, r#""id":8"#),
    ];
    let out = responses(&input.iter().map(String::as_str).collect::<Vec<_>>()).await;
    let by_id = |id: i64| out.iter().find(|r| r["id"] == json!(id)).unwrap().clone();
    let server_info = json!({"io.modelcontextprotocol/serverInfo":
        {"name": "orchestra", "title": "Orchestra", "version": env!("CARGO_PKG_VERSION"),
         "icons": icons::server()}});

    let discover = by_id(1)["result"].clone();
    assert_eq!(discover["supportedVersions"], json!(["2026-07-28"]));
    assert_eq!(discover["resultType"], "complete");
    assert_eq!(discover["cacheScope"], "private");
    assert!(discover["ttlMs"].is_u64());
    assert_eq!(discover["_meta"], server_info);
    assert_eq!(
        discover["capabilities"]["resources"],
        json!({"subscribe": true, "listChanged": true})
    );

    for id in [2, 3, 5] {
        let result = by_id(id)["result"].clone();
        assert_eq!(result["resultType"], "complete", "id {id}");
        assert_eq!(result["cacheScope"], "private", "id {id}");
        assert!(result["ttlMs"].is_u64(), "id {id}");
        assert_eq!(result["_meta"], server_info, "id {id}");
    }
    assert_eq!(
        by_id(4)["error"],
        json!({"code": -32602, "message": "Resource not found", "data": {"uri": "orchestra://features/FEAT-404"}})
    );
    let completion = by_id(6)["result"].clone();
    assert_eq!(
        completion["completion"],
        json!({"values": ["FEAT-001", "FEAT-002"], "total": 2, "hasMore": false})
    );
    assert_eq!(completion["resultType"], "complete");
    assert!(completion.get("ttlMs").is_none());
    assert_eq!(by_id(7)["error"]["code"], -32601);
    assert_eq!(by_id(8)["error"]["code"], -32022);
}

#[tokio::test]
async fn listing_pages_through_everything_once() {
    let (_dir, store) = fixture();
    let mut uris = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let request =
            json!({"jsonrpc": "2.0", "id": 1, "method": "resources/list", "params": params});
        let out = exchange(store.clone(), 2, &format!("{request}\n")).await;
        let result = &out[0]["result"];
        pages += 1;
        for r in result["resources"].as_array().unwrap() {
            uris.push(r["uri"].as_str().unwrap().to_string());
        }
        match result["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_string()),
            None => break,
        }
    }
    assert_eq!(
        uris,
        [
            "orchestra://docs/adr/0006",
            "orchestra://docs/bin",
            "orchestra://features/FEAT-001",
            "orchestra://features/FEAT-002",
            "orchestra://notes/caf%C3%A9%20notes",
        ]
    );
    assert_eq!(
        pages, 3,
        "5 documents in pages of 2, and no empty last page"
    );
}

#[tokio::test]
async fn a_resource_carries_every_field() {
    let out = responses(&[r#"{"jsonrpc":"2.0","id":1,"method":"resources/list"}"#]).await;
    let resources = out[0]["result"]["resources"].as_array().unwrap().clone();
    assert_eq!(
        resources[0],
        json!({"uri": "orchestra://docs/adr/0006", "name": "adr/0006", "title": "Title of adr/0006",
               "mimeType": "text/markdown", "size": 6,
               "annotations": {"lastModified": "2026-01-01T00:00:00Z"},
               "icons": icons::of(Prefix::Docs)})
    );
    assert!(out[0]["result"]["nextCursor"].is_string());
}

#[tokio::test]
async fn bad_cursors_are_invalid_params_never_page_one() {
    let (_dir, store) = fixture();
    let valid = crate::cursor::encode(&DocKey::new(Prefix::Docs, "bin"));
    let mut forged = valid.clone();
    let last = forged.pop().unwrap();
    forged.push(if last == 'A' { 'B' } else { 'A' });
    let mut input = String::new();
    for (id, cursor) in [
        (1, "garbage"),
        (2, ""),
        (3, forged.as_str()),
        (4, valid.as_str()),
    ] {
        input.push_str(
            &json!({"jsonrpc": "2.0", "id": id, "method": "resources/list",
                               "params": {"cursor": cursor}})
            .to_string(),
        );
        input.push('\n');
    }
    let out = exchange(store, 2, &input).await;
    for id in 1..=3 {
        assert_eq!(code_of(&out, json!(id)), -32602, "cursor {id}");
    }
    let page = out.iter().find(|r| r["id"] == json!(4)).unwrap();
    assert_eq!(
        page["result"]["resources"][0]["uri"],
        "orchestra://features/FEAT-001"
    );
}

#[tokio::test]
async fn malformed_uris_are_invalid_params() {
    let long = format!("orchestra://features/{}", "a".repeat(5000));
    let uris = [
        "",
        "http://features/FEAT-001",
        "orchestra://secrets/FEAT-001",
        "orchestra://features/",
        "orchestra://features/../notes/x",
        "orchestra://features/a//b",
        "orchestra://features/%00",
        "orchestra://features/%zz",
        long.as_str(),
    ];
    let mut input = String::from(INIT);
    input.push('\n');
    for (i, uri) in uris.iter().enumerate() {
        input.push_str(
            &json!({"jsonrpc": "2.0", "id": i + 1, "method": "resources/read",
                               "params": {"uri": uri}})
            .to_string(),
        );
        input.push('\n');
    }
    let (_dir, store) = fixture();
    let out = exchange(store, 2, &input).await;
    for i in 1..=uris.len() {
        assert_eq!(code_of(&out, json!(i)), -32602, "{}", uris[i - 1]);
    }
}

#[tokio::test]
async fn completion_rejects_what_it_cannot_complete() {
    let cases = [
        (
            json!({"ref": {"type": "ref/prompt", "name": "x"}, "argument": {"name": "id", "value": ""}}),
            -32602,
        ),
        (
            json!({"ref": {"type": "ref/resource", "uri": "orchestra://x/{+id}"}, "argument": {"name": "id", "value": ""}}),
            -32602,
        ),
        (
            json!({"ref": {"type": "ref/resource", "uri": "orchestra://docs/{+id}"}, "argument": {"name": "path", "value": ""}}),
            -32602,
        ),
        (
            json!({"ref": {"type": "ref/resource", "uri": "orchestra://docs/{+id}"}}),
            -32602,
        ),
    ];
    let mut input = String::new();
    for (i, (params, _)) in cases.iter().enumerate() {
        input.push_str(
            &json!({"jsonrpc": "2.0", "id": i, "method": "completion/complete", "params": params})
                .to_string(),
        );
        input.push('\n');
    }
    let (_dir, store) = fixture();
    let out = exchange(store, 2, &input).await;
    check_codes(
        &out,
        &cases
            .iter()
            .enumerate()
            .map(|(i, (_, code))| (json!(i), *code))
            .collect::<Vec<_>>(),
    );
}

#[tokio::test]
async fn ids_keep_their_type() {
    let out = responses(&[
        r#"{"jsonrpc":"2.0","id":"abc","method":"ping"}"#,
        r#"{"jsonrpc":"2.0","id":0,"method":"ping"}"#,
    ])
    .await;
    let ids: Vec<Value> = out.iter().map(|r| r["id"].clone()).collect();
    assert_eq!(ids, [json!("abc"), json!(0)]);
}

#[tokio::test]
async fn an_oversized_line_is_refused_and_the_session_goes_on() {
    let (_dir, store) = fixture();
    let mut input = String::with_capacity(MAX_LINE + 100);
    input.push_str(r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":""#);
    input.extend(std::iter::repeat_n('x', MAX_LINE));
    input.push_str("\"}}\n");
    input.push_str(r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#);
    input.push('\n');
    let out = exchange(store, 2, &input).await;
    assert_eq!(out.len(), 2, "{out:?}");
    assert_eq!(out[0]["id"], Value::Null);
    assert_eq!(out[0]["error"]["code"], -32600);
    assert_eq!(out[1]["result"], json!({}));
}

/// A live session: lines go in one at a time, and batches of changes can be
/// published to it as if another process had committed an import.
struct Live {
    write: tokio::io::WriteHalf<tokio::io::DuplexStream>,
    read: tokio::io::Lines<BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>>,
    publish: broadcast::Sender<Arc<ChangeBatch>>,
    _dir: tempfile::TempDir,
}

impl Live {
    fn start() -> Live {
        let (dir, store) = fixture();
        let (client, server) = tokio::io::duplex(1 << 20);
        let (server_read, server_write) = tokio::io::split(server);
        let (publish, changes) = broadcast::channel(4);
        tokio::spawn(super::serve(
            store,
            Config {
                page_size: 10,
                writer: None,
                writes_later: false,
            },
            server_read,
            server_write,
            changes,
            std::future::pending(),
        ));
        let (read, write) = tokio::io::split(client);
        Live {
            write,
            read: BufReader::new(read).lines(),
            publish,
            _dir: dir,
        }
    }

    async fn send(&mut self, line: &str) {
        self.write
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
    }

    async fn recv(&mut self) -> Value {
        let line = tokio::time::timeout(std::time::Duration::from_secs(5), self.read.next_line())
            .await
            .expect("no line within 5 s")
            .unwrap()
            .unwrap();
        serde_json::from_str(&line).unwrap()
    }

    fn commit(&self, changes: &[(crate::doc::ChangeKind, Prefix, &str)]) {
        let batch = ChangeBatch {
            seq: 1,
            changes: changes
                .iter()
                .map(|(kind, prefix, id)| (*kind, DocKey::new(*prefix, *id)))
                .collect(),
            truncated: false,
        };
        self.publish.send(Arc::new(batch)).unwrap();
    }
}

#[tokio::test]
async fn handshake_subscriptions_receive_updates() {
    use crate::doc::ChangeKind::*;
    let mut live = Live::start();
    live.send(INIT).await;
    assert_eq!(live.recv().await["id"], 0);
    live.send(r#"{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"orchestra://features/FEAT-001"}}"#).await;
    assert_eq!(
        live.recv().await,
        json!({"jsonrpc": "2.0", "id": 1, "result": {}})
    );
    live.send(r#"{"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{"uri":"nope"}}"#)
        .await;
    assert_eq!(live.recv().await["error"]["code"], -32602);
    live.commit(&[
        (Updated, Prefix::Features, "FEAT-002"),
        (Updated, Prefix::Features, "FEAT-001"),
    ]);
    assert_eq!(
        live.recv().await,
        json!({"jsonrpc": "2.0", "method": "notifications/resources/updated",
               "params": {"uri": "orchestra://features/FEAT-001"}})
    );
    live.commit(&[(New, Prefix::Notes, "x")]);
    assert_eq!(
        live.recv().await,
        json!({"jsonrpc": "2.0", "method": "notifications/resources/list_changed"})
    );
    live.send(r#"{"jsonrpc":"2.0","id":3,"method":"resources/unsubscribe","params":{"uri":"orchestra://features/FEAT-001"}}"#).await;
    assert_eq!(live.recv().await["id"], 3);
    live.commit(&[(Updated, Prefix::Features, "FEAT-001")]);
    live.send(r#"{"jsonrpc":"2.0","id":4,"method":"ping"}"#)
        .await;
    assert_eq!(
        live.recv().await["id"],
        4,
        "no notification after unsubscribe"
    );
    live.send(
        r#"{"jsonrpc":"2.0","id":5,"method":"subscriptions/listen","params":{"notifications":{}}}"#,
    )
    .await;
    assert_eq!(live.recv().await["error"]["code"], -32601);
}

#[tokio::test]
async fn stateless_listens_are_tagged_and_cancellable() {
    use crate::doc::ChangeKind::*;
    let mut live = Live::start();
    let listen = |id: &str, notifications: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"subscriptions/listen","params":{{"notifications":{notifications},{ENVELOPE}}}}}"#
        )
    };
    live.send(&listen(
        r#""l1""#,
        r#"{"resourceSubscriptions":["orchestra://features/FEAT-001"]}"#,
    ))
    .await;
    assert_eq!(
        live.recv().await,
        json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
               "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": "l1"},
                          "notifications": {"resourceSubscriptions": ["orchestra://features/FEAT-001"]}}})
    );
    live.send(&listen("2", r#"{"resourcesListChanged":true}"#))
        .await;
    assert_eq!(
        live.recv().await["params"]["notifications"],
        json!({"resourcesListChanged": true})
    );
    live.commit(&[
        (Updated, Prefix::Features, "FEAT-001"),
        (Removed, Prefix::Notes, "y"),
    ]);
    assert_eq!(
        live.recv().await,
        json!({"jsonrpc": "2.0", "method": "notifications/resources/updated",
               "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": "l1"},
                          "uri": "orchestra://features/FEAT-001"}})
    );
    assert_eq!(
        live.recv().await,
        json!({"jsonrpc": "2.0", "method": "notifications/resources/list_changed",
               "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": 2}}})
    );
    live.send(
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"l1"}}"#,
    )
    .await;
    live.commit(&[
        (Updated, Prefix::Features, "FEAT-001"),
        (New, Prefix::Notes, "z"),
    ]);
    assert_eq!(
        live.recv().await["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        2,
        "the cancelled listen is silent, the other goes on"
    );
    live.send(&format!(r#"{{"jsonrpc":"2.0","id":9,"method":"resources/subscribe","params":{{"uri":"orchestra://features/FEAT-001",{ENVELOPE}}}}}"#)).await;
    assert_eq!(live.recv().await["error"]["code"], -32601);
}

/// `tools/call search` with `arguments`, in a session of `version`
/// (`2026-07-28`: stateless), on the fixture; the response's `result`.
async fn search_call(version: &str, arguments: Value) -> Value {
    let (_dir, store) = fixture();
    search_call_on(store, version, arguments).await
}

/// [`search_call`] on `store`.
async fn search_call_on(store: Store, version: &str, arguments: Value) -> Value {
    let call = |id: u32| {
        let mut params = json!({"name": "search", "arguments": arguments});
        if version == STATELESS_VERSION {
            params["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": STATELESS_VERSION,
                "io.modelcontextprotocol/clientCapabilities": {},
            });
        }
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}).to_string()
    };
    let input = if version == STATELESS_VERSION {
        format!("{}\n", call(1))
    } else {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
        format!("{init}\n{}\n", call(1))
    };
    let out = exchange(store, 2, &input).await;
    let response = out.into_iter().find(|r| r["id"] == 1).unwrap();
    assert!(response.get("error").is_none(), "{response}");
    response["result"].clone()
}

#[tokio::test]
async fn the_search_tool_is_declared_in_both_eras() {
    let out = responses(&[INIT, r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#]).await;
    assert_eq!(out[0]["result"]["capabilities"]["tools"], json!({}));
    let tools = out[1]["result"]["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "search", "read", "outline", "list", "links", "history", "diff"
        ]
    );
    // Every tool only reads, and says so (destructiveHint defaults to true).
    for tool in tools {
        assert_eq!(tool["annotations"]["readOnlyHint"], true, "{tool}");
        assert_eq!(tool["annotations"]["openWorldHint"], false, "{tool}");
        assert!(tool["title"].is_string(), "{tool}");
    }
    let tool = &tools[0];
    assert_eq!(tool["name"], "search");
    assert!(
        tool["description"]
            .as_str()
            .unwrap()
            .contains("before reading")
    );
    assert_eq!(
        tool["annotations"],
        json!({"readOnlyHint": true, "idempotentHint": true, "openWorldHint": false})
    );
    assert_eq!(tool["inputSchema"]["required"], json!(["query"]));
    for argument in ["query", "under", "where", "limit", "cursor"] {
        assert!(
            tool["inputSchema"]["properties"].get(argument).is_some(),
            "{argument}"
        );
    }
    assert_eq!(tool["outputSchema"]["required"], json!(["hits", "total"]));

    let out = responses(&[&format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{{ENVELOPE}}}}}"#
    )])
    .await;
    let result = &out[0]["result"];
    assert_eq!(result["tools"][0]["name"], "search");
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["ttlMs"], 3_600_000);
    assert!(result["_meta"]["io.modelcontextprotocol/serverInfo"].is_object());
}

#[tokio::test]
async fn search_results_in_each_version() {
    for version in ["2025-06-18", "2025-11-25", STATELESS_VERSION] {
        let result = search_call(version, json!({"query": "title", "limit": 2})).await;
        let structured = &result["structuredContent"];
        assert_eq!(structured["total"], 5, "{version}: {result}");
        let hits = structured["hits"].as_array().unwrap();
        assert_eq!(hits.len(), 2);
        assert!(hits[0]["uri"].as_str().unwrap().starts_with("orchestra://"));
        assert!(hits[0]["score"].as_f64().unwrap() > 0.0);
        assert!(structured["nextCursor"].is_string());
        let content = result["content"].as_array().unwrap();
        assert_eq!(content.len(), 3, "a text block, then one link per hit");
        assert_eq!(content[0]["type"], "text");
        assert!(content[0]["text"].as_str().unwrap().contains("cursor"));
        assert_eq!(content[1]["type"], "resource_link");
        assert_eq!(content[1]["uri"], hits[0]["uri"]);
        assert_eq!(content[1]["mimeType"], "text/markdown");
        assert!(content[1]["size"].is_u64());
        assert_eq!(
            result.get("resultType").is_some(),
            version == STATELESS_VERSION
        );
    }
    // Before 2025-06-18: text only, the structured result as a second text.
    for version in ["2024-11-05", "2025-03-26"] {
        let result = search_call(version, json!({"query": "title", "limit": 2})).await;
        assert!(result.get("structuredContent").is_none(), "{result}");
        let content = result["content"].as_array().unwrap();
        assert_eq!(content.len(), 2);
        assert!(content.iter().all(|c| c["type"] == "text"));
        let structured: Value = serde_json::from_str(content[1]["text"].as_str().unwrap()).unwrap();
        assert_eq!(structured["total"], 5);
    }
}

#[tokio::test]
async fn search_pages_follow_the_cursor_and_refuse_others() {
    let mut seen = Vec::new();
    let mut cursor = Value::Null;
    loop {
        let result = search_call(
            "2025-11-25",
            json!({"query": "", "under": "features", "limit": 1, "cursor": cursor}),
        )
        .await;
        let structured = &result["structuredContent"];
        seen.extend(
            structured["hits"]
                .as_array()
                .unwrap()
                .iter()
                .map(|h| h["uri"].clone()),
        );
        cursor = structured["nextCursor"].clone();
        if cursor.is_null() {
            break;
        }
        // The cursor of another search is refused, as is a forged one.
        for (query, bad) in [("other", cursor.clone()), ("", json!("AAAA"))] {
            let refused = search_call(
                "2025-11-25",
                json!({"query": query, "under": "features", "cursor": bad}),
            )
            .await;
            assert_eq!(refused["isError"], true, "{refused}");
            assert!(
                refused["content"][0]["text"]
                    .as_str()
                    .unwrap()
                    .contains("invalid cursor")
            );
        }
    }
    assert_eq!(
        seen,
        [
            json!("orchestra://features/FEAT-001"),
            json!("orchestra://features/FEAT-002")
        ]
    );
}

#[tokio::test]
async fn a_question_no_document_answers_whole_is_relaxed_and_says_so() {
    // `one two`: no document holds both; FEAT-001 and FEAT-002 one each.
    let mut seen = Vec::new();
    let mut cursor = Value::Null;
    for page in 0.. {
        let (_dir, store) = fixture();
        let result = search_call_on(
            store,
            "2025-11-25",
            json!({"query": "one two", "limit": 1, "cursor": cursor}),
        )
        .await;
        let structured = &result["structuredContent"];
        assert_eq!(structured["relaxed"], true, "page {page}: {result}");
        assert_eq!(structured["total"], 2);
        assert!(structured.get("terms").is_none());
        let text = result["content"][0]["text"].as_str().unwrap();
        assert!(
            text.starts_with("No document has all of these words; these have some of them.\n"),
            "{text}"
        );
        seen.push(structured["hits"][0]["uri"].clone());
        cursor = structured["nextCursor"].clone();
        if cursor.is_null() {
            break;
        }
    }
    seen.sort_by_key(|uri| uri.to_string());
    assert_eq!(
        seen,
        [
            json!("orchestra://features/FEAT-001"),
            json!("orchestra://features/FEAT-002")
        ]
    );
    // A phrase, an exclusion or OR is not relaxed.
    for query in ["\"one\" two", "one two -adr", "one OR adr two"] {
        let result = search_call("2025-11-25", json!({"query": query})).await;
        let structured = &result["structuredContent"];
        assert_eq!(structured["total"], 0, "{query}: {result}");
        assert!(structured.get("relaxed").is_none(), "{query}: {result}");
        assert!(
            !result["content"][0]["text"]
                .as_str()
                .unwrap()
                .contains("some of them")
        );
    }
}

#[tokio::test]
async fn a_pasted_sentence_is_answered_and_names_the_words_used() {
    // 58 words in every document, `kestrel` and `osprey` in one each.
    let common: Vec<String> = (0..58).map(|i| format!("common{i}")).collect();
    let body = |extra: &str| format!("# Log\n{} {extra}\n", common.join(" ")).into_bytes();
    let (a, b, c) = (body("kestrel"), body("osprey"), body(""));
    let docs: [(Prefix, &str, &[u8]); 3] = [
        (Prefix::Notes, "a", &a),
        (Prefix::Notes, "b", &b),
        (Prefix::Notes, "c", &c),
    ];
    let sentence = format!("{} kestrel osprey", common.join(" "));
    for version in ["2025-11-25", STATELESS_VERSION] {
        let (_dir, store) = store_with(&docs);
        let result = search_call_on(store, version, json!({"query": sentence})).await;
        assert!(result.get("isError").is_none_or(|e| e == false), "{result}");
        let structured = &result["structuredContent"];
        // The 32 in the fewest documents: the two rare words, and the
        // first 30 of the others; nothing holds them all.
        let mut used: Vec<String> = common[..30].to_vec();
        used.extend(["kestrel".to_string(), "osprey".to_string()]);
        assert_eq!(structured["terms"], json!(used), "{version}");
        assert_eq!(structured["relaxed"], true);
        assert_eq!(structured["total"], 3);
        let top: Vec<&str> = structured["hits"].as_array().unwrap()[..2]
            .iter()
            .map(|h| h["uri"].as_str().unwrap())
            .collect();
        assert_eq!(top, ["orchestra://notes/a", "orchestra://notes/b"]);
        let text = result["content"][0]["text"].as_str().unwrap();
        assert!(
            text.starts_with(&format!(
                "The query has 60 different terms; it was answered from the 32 found in the fewest documents: {}. No document has all",
                used.join(" ")
            )),
            "{text}"
        );
    }
}

#[tokio::test]
async fn bad_search_arguments_are_tool_errors_and_unknown_tools_protocol_errors() {
    for arguments in [
        json!({"query": 1}),
        json!({"query": "x", "limit": 0}),
        json!({"query": "x", "limit": 101}),
        json!({"query": "x", "under": "nope"}),
        json!({"query": "x".repeat(4097)}),
    ] {
        for version in ["2025-11-25", STATELESS_VERSION] {
            let result = search_call(version, arguments.clone()).await;
            assert_eq!(result["isError"], true, "{arguments}: {result}");
            assert!(result.get("structuredContent").is_none());
        }
    }
    let out = responses(&[
        INIT,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"grep","arguments":{}}}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{}}"#,
    ])
    .await;
    assert_eq!(code_of(&out, json!(1)), -32602);
    assert_eq!(code_of(&out, json!(2)), -32602);
}

#[tokio::test]
async fn icons_on_every_resource_template_and_server_info_in_both_eras() {
    let icon_of = |value: &Value| -> String {
        let icons = value["icons"]
            .as_array()
            .unwrap_or_else(|| panic!("no icons: {value}"));
        assert_eq!(icons.len(), 1, "{value}");
        assert_eq!(icons[0]["mimeType"], "image/svg+xml");
        assert_eq!(icons[0]["sizes"], json!(["any"]));
        let src = icons[0]["src"].as_str().unwrap().to_string();
        // Escaped or base64, whichever is shorter (`icons` checks the budgets).
        assert!(
            src.starts_with("data:image/svg+xml,") || src.starts_with("data:image/svg+xml;base64,"),
            "{src}"
        );
        src
    };
    let stateless = |id: u32, method: &str| {
        format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{{{ENVELOPE}}}}}"#)
    };
    let handshake = responses(&[
        INIT,
        r#"{"jsonrpc":"2.0","id":1,"method":"resources/list"}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"resources/templates/list"}"#,
    ])
    .await;
    let modern = responses(&[
        &stateless(0, "server/discover"),
        &stateless(1, "resources/list"),
        &stateless(2, "resources/templates/list"),
    ])
    .await;
    for out in [&handshake, &modern] {
        let result = &out[0]["result"];
        let info = match result.get("serverInfo") {
            Some(info) => info,
            None => &result["_meta"]["io.modelcontextprotocol/serverInfo"],
        };
        let server = icon_of(info);
        let mut by_prefix = std::collections::HashMap::new();
        // The fixture's first page (of 2): docs only; the templates: all three.
        for resource in out[1]["result"]["resources"].as_array().unwrap() {
            let prefix = resource["uri"].as_str().unwrap()["orchestra://".len()..]
                .split('/')
                .next()
                .unwrap()
                .to_string();
            by_prefix.insert(prefix, icon_of(resource));
        }
        for template in out[2]["result"]["resourceTemplates"].as_array().unwrap() {
            let prefix = template["name"].as_str().unwrap().to_string();
            let icon = icon_of(template);
            if let Some(seen) = by_prefix.get(&prefix) {
                assert_eq!(seen, &icon, "a prefix has one icon");
            }
            assert_ne!(icon, server);
            by_prefix.insert(prefix, icon);
        }
        let distinct: std::collections::HashSet<&String> = by_prefix.values().collect();
        assert_eq!(distinct.len(), 3, "one icon per prefix: {by_prefix:?}");
    }
    // Every 2026-07-28 result carries the server's info, icon included.
    assert_eq!(
        icon_of(&modern[1]["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]),
        icon_of(&handshake[0]["result"]["serverInfo"])
    );
}

/// A server started with nothing to serve, over an in-memory stream: every
/// line it wrote for `input`.
async fn exchange_without_a_project(input: &str) -> Vec<Value> {
    exchange_with(StoreSlot::new(None), roots::Roots::new(true), 10, input).await
}

#[tokio::test]
async fn with_no_project_the_server_asks_roots_only_of_a_client_that_offers_them() {
    let init = |capabilities: Value| {
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
               "params": {"protocolVersion": "2025-11-25", "capabilities": capabilities,
                          "clientInfo": {"name": "t", "version": "1"}}})
        .to_string()
    };
    let rest = [
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"resources/list"}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"orchestra://notes/a"}}"#,
        // An answer to nothing the server asked is ignored.
        r#"{"jsonrpc":"2.0","id":"orchestra-roots-99","result":{"roots":[]}}"#,
    ];
    for (capabilities, asks) in [
        (json!({"roots": {"listChanged": true}}), true),
        (json!({}), false),
    ] {
        let input = format!("{}\n{}\n", init(capabilities), rest.join("\n"));
        let out = exchange_without_a_project(&input).await;
        let asked: Vec<&Value> = out.iter().filter(|m| m["method"] == "roots/list").collect();
        assert_eq!(asked.len(), usize::from(asks), "{out:#?}");
        if asks {
            assert_eq!(asked[0]["id"], "orchestra-roots-1");
        }
        let by_id = |id: i64| out.iter().find(|m| m["id"] == id).unwrap().clone();
        assert_eq!(
            by_id(1)["result"]["resources"],
            json!([]),
            "nothing to list yet"
        );
        assert_eq!(by_id(2)["error"]["code"], -32002, "nothing to read yet");
    }
}
