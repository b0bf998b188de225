//! `fuzz_jsonrpc_lines`: whole sessions of lines sent to `mcp::serve` over a real store; every request is answered once with a well-formed response, and the session ends.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use orchestra::doc::{DocKey, Prefix};
use orchestra::store::{ChangeBatch, FileStat, NewDocument, Store};
use orchestra::{cursor, mcp, uri};
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{TestCaseError, TestCaseResult};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::{corpus_file, fuzz, replay, uri_like};

/// The last line of every session.
const LAST: &str = r#"{"jsonrpc":"2.0","id":"last","method":"ping"}"#;
/// A session that runs longer than this hangs.
const SESSION_TIMEOUT: Duration = Duration::from_secs(5);
const CODES: [i64; 7] = [-32700, -32600, -32601, -32602, -32603, -32002, -32022];

const METHODS: [&str; 16] = [
    "initialize",
    "ping",
    "notifications/initialized",
    "notifications/cancelled",
    "resources/list",
    "resources/read",
    "resources/templates/list",
    "resources/subscribe",
    "resources/unsubscribe",
    "subscriptions/listen",
    "completion/complete",
    "server/discover",
    "tools/list",
    "",
    "test/panic",
    "logging/setLevel",
];

/// Lines of one session, printed readably when a case fails.
#[derive(Clone)]
struct Session(Vec<Vec<u8>>);

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|line| String::from_utf8_lossy(line)))
            .finish()
    }
}

#[derive(Debug, Clone, Copy)]
enum IdKind {
    None,
    Int,
    Str,
    Big,
    Negative,
}

/// A distinct id for line `i`.
fn id_for(kind: IdKind, i: usize) -> Option<Value> {
    let i = i as u64;
    match kind {
        IdKind::None => None,
        IdKind::Int => Some(json!(i)),
        IdKind::Str => Some(json!(format!("r{i}"))),
        IdKind::Big => Some(json!(u64::MAX - i)),
        IdKind::Negative => Some(json!(-1 - i as i64)),
    }
}

#[derive(Debug, Clone)]
enum LineSpec {
    Bytes(Vec<u8>),
    Json(Value),
    Request {
        jsonrpc: Value,
        id: IdKind,
        method: String,
        params: Option<Value>,
    },
    Wire {
        line: String,
        id: IdKind,
        edits: Vec<(Index, u8, u8)>,
    },
    Special(&'static str),
}

impl LineSpec {
    fn bytes(self, i: usize) -> Vec<u8> {
        match self {
            LineSpec::Bytes(bytes) => bytes,
            LineSpec::Json(value) => value.to_string().into_bytes(),
            LineSpec::Request {
                jsonrpc,
                id,
                method,
                params,
            } => {
                let mut map = serde_json::Map::new();
                map.insert("jsonrpc".into(), jsonrpc);
                if let Some(id) = id_for(id, i) {
                    map.insert("id".into(), id);
                }
                map.insert("method".into(), Value::String(method));
                if let Some(params) = params {
                    map.insert("params".into(), params);
                }
                Value::Object(map).to_string().into_bytes()
            }
            LineSpec::Wire { line, id, edits } => {
                let mut value: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
                if let (Some(map), Some(id)) = (value.as_object_mut(), id_for(id, i))
                    && map.contains_key("id")
                {
                    map.insert("id".into(), id);
                }
                let mut bytes = value.to_string().into_bytes();
                for (at, op, byte) in edits {
                    match op % 4 {
                        // Flip one bit, keep the line a line.
                        0 if !bytes.is_empty() => {
                            let at = at.index(bytes.len());
                            bytes[at] ^= 1 << (byte % 8);
                            if bytes[at] == b'\n' {
                                bytes[at] = b'\r';
                            }
                        }
                        1 => {
                            let at = at.index(bytes.len() + 1);
                            bytes.insert(at, if byte == b'\n' { 0 } else { byte });
                        }
                        2 if !bytes.is_empty() => {
                            bytes.remove(at.index(bytes.len()));
                        }
                        3 => {
                            bytes.truncate(at.index(bytes.len() + 1));
                        }
                        _ => {}
                    }
                }
                bytes
            }
            LineSpec::Special(s) => match s {
                "deep-array" => format!("{}{}", "[".repeat(10_000), "]".repeat(10_000)).into_bytes(),
                "deep-object" => {
                    format!("{}1{}", "{\"a\":".repeat(10_000), "}".repeat(10_000)).into_bytes()
                }
                "deep-params" => format!(
                    r#"{{"jsonrpc":"2.0","id":"deep{i}","method":"resources/read","params":{{"uri":{}"x"{}}}}}"#,
                    "[".repeat(3000),
                    "]".repeat(3000)
                )
                .into_bytes(),
                other => other.as_bytes().to_vec(),
            },
        }
    }
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        "\\PC{0,8}".prop_map(Value::from),
        any::<String>().prop_map(Value::from),
        prop::sample::select(vec![
            "2.0",
            "ping",
            "orchestra://docs/adr/0006",
            "2026-07-28",
            "2025-11-25",
            "last",
            "",
        ])
        .prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        let key = prop_oneof![
            3 => prop::sample::select(vec![
                "jsonrpc", "id", "method", "params", "result", "error", "_meta", "uri", "cursor",
                "protocolVersion", "notifications", "requestId", "ref", "argument",
            ])
            .prop_map(String::from),
            1 => "\\PC{0,6}",
        ];
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(key, inner, 0..6)
                .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

/// Request params: mostly well-formed pieces, sometimes anything.
fn params() -> impl Strategy<Value = Option<Value>> {
    let keys = [
        DocKey::new(Prefix::Features, "FEAT-001"),
        DocKey::new(Prefix::Features, "FEAT-002"),
        DocKey::new(Prefix::Docs, "adr/0006"),
        DocKey::new(Prefix::Notes, "café notes"),
        DocKey::new(Prefix::Docs, "bin"),
    ];
    let uri = prop_oneof![
        3 => prop::sample::select(keys.iter().map(uri::format).collect::<Vec<_>>()),
        3 => uri_like(),
        1 => any::<String>(),
    ]
    .prop_map(Value::String);
    let cursor = prop_oneof![
        3 => prop::sample::select(keys.iter().map(cursor::encode).collect::<Vec<_>>()),
        1 => "[A-Za-z0-9_-]{0,30}",
        1 => any::<String>(),
    ]
    .prop_map(Value::String);
    let meta = prop_oneof![
        4 => Just(json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        })),
        1 => Just(json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28"})),
        1 => Just(json!({
            "io.modelcontextprotocol/protocolVersion": "2099-01-01",
            "io.modelcontextprotocol/clientCapabilities": {},
        })),
        1 => json_value().prop_map(|v| json!({"io.modelcontextprotocol/protocolVersion": v})),
        1 => json_value(),
    ];
    let field = prop_oneof![
        4 => uri.clone().prop_map(|v| ("uri", v)),
        2 => cursor.prop_map(|v| ("cursor", v)),
        4 => meta.prop_map(|v| ("_meta", v)),
        1 => prop::sample::select(vec!["2025-11-25", "2024-11-05", "1999-01-01", "2026-07-28"])
            .prop_map(|v| ("protocolVersion", json!(v))),
        1 => Just(("capabilities", json!({}))),
        1 => Just(("clientInfo", json!({"name": "fuzz", "version": "1"}))),
        2 => prop::sample::select(vec![
            "orchestra://features/{+id}", "orchestra://docs/{+id}", "orchestra://notes/{+id}",
            "orchestra://x/{+id}",
        ])
        .prop_map(|t| ("ref", json!({"type": "ref/resource", "uri": t}))),
        2 => ("\\PC{0,10}", prop::sample::select(vec!["id", "x"]))
            .prop_map(|(v, name)| ("argument", json!({"name": name, "value": v}))),
        2 => (prop::collection::vec(uri, 0..4), prop::option::of(any::<bool>()))
            .prop_map(|(uris, changed)| {
                let mut asked = json!({"resourceSubscriptions": uris});
                if let Some(changed) = changed {
                    asked["resourcesListChanged"] = json!(changed);
                }
                ("notifications", asked)
            }),
        1 => prop::sample::select(vec!["r0", "r1", "r2", "r3"]).prop_map(|id| ("requestId", json!(id))),
        1 => (0u64..8).prop_map(|id| ("requestId", json!(id))),
        1 => json_value().prop_map(|v| ("uri", v)),
        1 => json_value().prop_map(|v| ("cursor", v)),
    ];
    prop_oneof![
        1 => Just(None),
        6 => prop::collection::vec(field, 0..5).prop_map(|fields| {
            Some(Value::Object(
                fields.into_iter().map(|(k, v)| (k.to_owned(), v)).collect(),
            ))
        }),
        1 => json_value().prop_map(Some),
    ]
}

fn line_spec(wire: Vec<String>) -> impl Strategy<Value = LineSpec> {
    let id = prop_oneof![
        1 => Just(IdKind::None),
        4 => Just(IdKind::Int),
        3 => Just(IdKind::Str),
        1 => Just(IdKind::Big),
        1 => Just(IdKind::Negative),
    ];
    let method = prop_oneof![
        8 => prop::sample::select(METHODS.to_vec()).prop_map(String::from),
        1 => "\\PC{0,12}",
    ];
    let jsonrpc = prop_oneof![
        12 => Just(json!("2.0")),
        1 => json_value(),
    ];
    let bytes = prop::collection::vec(any::<u8>(), 0..48).prop_map(|mut bytes| {
        bytes.retain(|&b| b != b'\n');
        bytes
    });
    let edits = prop::collection::vec((any::<Index>(), any::<u8>(), any::<u8>()), 0..4);
    prop_oneof![
        2 => bytes.prop_map(LineSpec::Bytes),
        2 => json_value().prop_map(LineSpec::Json),
        8 => (jsonrpc, id.clone(), method, params()).prop_map(|(jsonrpc, id, method, params)| {
            LineSpec::Request { jsonrpc, id, method, params }
        }),
        4 => (prop::sample::select(wire), id, edits)
            .prop_map(|(line, id, edits)| LineSpec::Wire { line, id, edits }),
        1 => prop::sample::select(vec![
            "", "\r", " \t ", "\0", "\0\0\0", "[]", "[1]", "{}", "null", "deep-array",
            "deep-object", "deep-params", "\u{FEFF}{}", "\u{1b}[0m", "{\"jsonrpc\":\"2.0\"",
        ])
        .prop_map(LineSpec::Special),
    ]
}

fn session() -> impl Strategy<Value = Session> {
    let mut wire: Vec<String> = ["handshake.log", "stateless.log", "mixed.log"]
        .iter()
        .flat_map(|log| wire_requests(log))
        .collect();
    wire.sort();
    wire.dedup();
    prop::collection::vec(line_spec(wire), 0..10).prop_map(|specs| {
        Session(
            specs
                .into_iter()
                .enumerate()
                .map(|(i, spec)| spec.bytes(i))
                .collect(),
        )
    })
}

/// The server under fuzz: a store of a few documents, shared by every
/// session of a target (sessions only read), and a runtime.
struct Server {
    _dir: tempfile::TempDir,
    store: Store,
    runtime: tokio::runtime::Runtime,
    /// Kept so the sessions' change feed stays open.
    publish: tokio::sync::broadcast::Sender<Arc<ChangeBatch>>,
}

impl Server {
    fn new() -> Server {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_or_create(&dir.path().join("fuzz.db")).unwrap();
        let tx = store.begin_import("/fuzz", false).unwrap();
        let docs: [(Prefix, &str, &[u8]); 5] = [
            (Prefix::Features, "FEAT-001", b"# One\n"),
            (Prefix::Features, "FEAT-002", b"---\ntitle: Two\n---\n"),
            (Prefix::Notes, "café notes", "# Café\n".as_bytes()),
            (Prefix::Docs, "adr/0006", b"# ADR\n"),
            (Prefix::Docs, "bin", b"\xff\xfe raw"),
        ];
        for (prefix, id, body) in docs {
            tx.put(&NewDocument::new(
                DocKey::new(prefix, id),
                FileStat {
                    size: body.len() as u64,
                    mtime_ns: 1_767_225_600_000_000_000,
                    hash: *blake3::hash(body).as_bytes(),
                },
                std::str::from_utf8(body).is_ok(),
                format!("Title of {id}"),
                None,
                None,
                body.to_vec(),
            ))
            .unwrap();
        }
        tx.commit(true).unwrap();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let (publish, _) = tokio::sync::broadcast::channel(4);
        Server {
            _dir: dir,
            store,
            runtime,
            publish,
        }
    }

    /// Feeds `input` to a fresh session, closes it, and returns what the
    /// server wrote and how it ended.
    fn run(&self, input: Vec<u8>) -> Result<(Vec<u8>, anyhow::Result<()>), String> {
        let store = self.store.clone();
        let changes = self.publish.subscribe();
        self.runtime.block_on(async move {
            let (client, server) = tokio::io::duplex(64 * 1024);
            let (server_read, server_write) = tokio::io::split(server);
            let serve = tokio::spawn(mcp::serve(
                store,
                mcp::Config {
                    page_size: 2,
                    writer: None,
                    writes_later: false,
                },
                server_read,
                server_write,
                changes,
                std::future::pending(),
            ));
            let (mut client_read, mut client_write) = tokio::io::split(client);
            let writer = tokio::spawn(async move {
                client_write.write_all(&input).await?;
                client_write.shutdown().await
            });
            let exchange = async {
                let mut output = Vec::new();
                client_read
                    .read_to_end(&mut output)
                    .await
                    .map_err(|e| e.to_string())?;
                let served = serve
                    .await
                    .map_err(|e| format!("the server task failed: {e}"))?;
                writer
                    .await
                    .map_err(|e| e.to_string())?
                    .map_err(|e| format!("cannot write the input: {e}"))?;
                Ok((output, served))
            };
            match tokio::time::timeout(SESSION_TIMEOUT, exchange).await {
                Ok(result) => result,
                Err(_) => Err(format!(
                    "the session did not end within {SESSION_TIMEOUT:?}"
                )),
            }
        })
    }
}

/// Whether the server must use `id` as the `id` of a response (a string or an integer).
fn is_valid_id_value(id: &Value) -> bool {
    match id {
        Value::String(_) => true,
        Value::Number(n) => n.is_i64() || n.is_u64(),
        _ => false,
    }
}

/// What the input asks of the server, per id: how many lines carry the id,
/// and how many responses it must get (`Some(1)`) or may get (`None`: at most one).
struct Expected {
    lines_per_id: HashMap<String, usize>,
    must_answer: HashMap<String, bool>,
}

fn expected(lines: &[&[u8]]) -> Expected {
    let mut lines_per_id = HashMap::new();
    let mut must_answer = HashMap::new();
    for line in lines {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let Ok(Value::Object(message)) = serde_json::from_slice::<Value>(line) else {
            continue;
        };
        let Some(id) = message.get("id").filter(|id| is_valid_id_value(id)) else {
            continue;
        };
        let key = id.to_string();
        *lines_per_id.entry(key.clone()).or_insert(0) += 1;
        let jsonrpc_ok = message.get("jsonrpc").and_then(Value::as_str) == Some("2.0");
        let is_response = message.contains_key("result") || message.contains_key("error");
        let must = if !jsonrpc_ok {
            true
        } else {
            match message.get("method") {
                // A listen that succeeds stays open: never answered.
                Some(Value::String(m)) => {
                    m != "subscriptions/listen"
                        || message.get("params").is_some_and(|p| !p.is_object())
                }
                Some(_) => true,
                None => !is_response,
            }
        };
        must_answer.insert(key, must);
    }
    Expected {
        lines_per_id,
        must_answer,
    }
}

fn check_session_output(lines: &[&[u8]], output: &[u8]) -> TestCaseResult {
    let expected = expected(lines);
    let mut answers: BTreeMap<String, usize> = BTreeMap::new();
    let mut last = Vec::new();
    let text = std::str::from_utf8(output)
        .map_err(|e| TestCaseError::fail(format!("output is not utf-8: {e}")))?;
    prop_assert!(
        text.is_empty() || text.ends_with('\n'),
        "unterminated output line"
    );
    for line in text.lines() {
        let message: Value = serde_json::from_str(line)
            .map_err(|e| TestCaseError::fail(format!("output line is not JSON ({e}): {line}")))?;
        let Some(map) = message.as_object() else {
            return Err(TestCaseError::fail(format!("not an object: {line}")));
        };
        prop_assert_eq!(map.get("jsonrpc"), Some(&json!("2.0")), "{}", line);
        match map.get("id") {
            Some(id) => {
                prop_assert!(
                    !map.contains_key("method"),
                    "a response with a method: {}",
                    line
                );
                let result = map.get("result");
                let error = map.get("error");
                prop_assert!(
                    result.is_some() != error.is_some(),
                    "a response needs exactly one of result and error: {}",
                    line
                );
                prop_assert_eq!(map.len(), 3, "extra members: {}", line);
                if let Some(result) = result {
                    prop_assert!(result.is_object(), "result is not an object: {}", line);
                }
                if let Some(error) = error {
                    let code = error.get("code").and_then(Value::as_i64);
                    prop_assert!(
                        code.is_some_and(|c| CODES.contains(&c)),
                        "unexpected error code: {}",
                        line
                    );
                    prop_assert!(
                        error.get("message").is_some_and(Value::is_string),
                        "error without a message: {}",
                        line
                    );
                }
                if id.is_null() {
                    prop_assert!(error.is_some(), "a result for id null: {}", line);
                    continue;
                }
                prop_assert!(is_valid_id_value(id), "invalid response id: {}", line);
                if *id == json!("last") {
                    last.push(message.clone());
                }
                let key = id.to_string();
                prop_assert!(
                    expected.lines_per_id.contains_key(&key),
                    "a response to an id nobody sent: {}",
                    line
                );
                *answers.entry(key).or_insert(0) += 1;
            }
            None => {
                prop_assert!(
                    map.get("method").is_some_and(Value::is_string),
                    "neither a response nor a notification: {}",
                    line
                );
                prop_assert!(
                    !map.contains_key("result") && !map.contains_key("error"),
                    "{}",
                    line
                );
            }
        }
    }
    for (id, &count) in &expected.lines_per_id {
        if count != 1 {
            continue; // ids sent twice may be answered twice
        }
        let answered = answers.get(id).copied().unwrap_or(0);
        prop_assert!(answered <= 1, "id {} answered {} times", id, answered);
        if expected.must_answer[id] {
            prop_assert_eq!(answered, 1, "request {} not answered", id);
        }
    }
    // The final ping, when no other line used its id: answered once, with
    // `{}` or (in the 2026-07-28 era, where a bare ping is refused) an error.
    if expected.lines_per_id.get(&json!("last").to_string()) == Some(&1) {
        prop_assert_eq!(last.len(), 1, "the final ping is answered once: {:?}", last);
        if let Some(result) = last[0].get("result") {
            prop_assert_eq!(result, &json!({}), "ping result");
        }
    }
    Ok(())
}

fn check_session(server: &Server, lines: &[&[u8]]) -> TestCaseResult {
    let mut input = Vec::new();
    for line in lines {
        input.extend_from_slice(line);
        input.push(b'\n');
    }
    input.extend_from_slice(LAST.as_bytes());
    let mut all: Vec<&[u8]> = lines.to_vec();
    all.push(LAST.as_bytes());
    let (output, served) = server.run(input).map_err(TestCaseError::fail)?;
    if let Err(e) = served {
        return Err(TestCaseError::fail(format!("the server failed: {e:#}")));
    }
    check_session_output(&all, &output).map_err(|e| {
        let reason = match e {
            TestCaseError::Fail(reason) | TestCaseError::Reject(reason) => reason,
        };
        TestCaseError::fail(format!(
            "{reason}\noutput:\n{}",
            String::from_utf8_lossy(&output)
        ))
    })
}

#[test]
fn fuzz_jsonrpc_lines() {
    let server = Server::new();
    replay("jsonrpc", |bytes| {
        let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
        let lines: Vec<&[u8]> = if bytes.is_empty() {
            Vec::new()
        } else {
            bytes.split(|&b| b == b'\n').collect()
        };
        check_session(&server, &lines)
    });
    fuzz("fuzz_jsonrpc_lines", 16, session(), |session: Session| {
        let lines: Vec<&[u8]> = session.0.iter().map(Vec::as_slice).collect();
        check_session(&server, &lines)
    });
}

/// The `C->S` lines of a golden wire log.
fn wire_requests(log: &str) -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/wire")
        .join(log);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    text.lines()
        .filter_map(|line| line.strip_prefix("C->S "))
        .map(str::to_owned)
        .collect()
}

/// Generated inputs: the requests of the golden wire logs, and sessions too large to write by hand.
pub(super) fn generated_corpus() -> Vec<(String, Vec<u8>)> {
    let depth = 10_000;
    let mut files: Vec<(String, Vec<u8>)> = ["handshake", "stateless", "mixed"]
        .iter()
        .map(|log| {
            let mut lines = wire_requests(&format!("{log}.log")).join("\n");
            lines.push('\n');
            corpus_file(&format!("gen-wire-{log}.session"), lines)
        })
        .collect();
    files.extend([
        corpus_file(
            "gen-deep-array.session",
            format!("{}{}\n", "[".repeat(depth), "]".repeat(depth)),
        ),
        corpus_file(
            "gen-deep-array-unclosed.session",
            format!("{}\n", "[".repeat(depth)),
        ),
        corpus_file(
            "gen-deep-object.session",
            format!("{}null{}\n", "{\"a\":".repeat(depth), "}".repeat(depth)),
        ),
        corpus_file(
            "gen-deep-params.session",
            format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"resources/read\",\"params\":{{\"uri\":{}{}}}}}\n\
                 {{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\",\"params\":{{\"a\":{}{}}}}}\n",
                "[".repeat(depth),
                "]".repeat(depth),
                "[".repeat(120),
                "]".repeat(120),
            ),
        ),
        corpus_file(
            "gen-many-requests.session",
            (0..300)
                .map(|i| {
                    format!(
                        "{{\"jsonrpc\":\"2.0\",\"id\":{i},\"method\":\"resources/list\"}}\n"
                    )
                })
                .collect(),
        ),
    ]);
    files
}
