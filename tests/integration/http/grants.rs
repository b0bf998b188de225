//! Grants per prefix over MCP: a caller granted `features` and `docs` only gets, from a project with notes, exactly the answers a caller gets from the same project without them: listings and their pages, reads (a hidden note is "not found" as a missing one is), search hits and totals, completions, links, history, the read tools, subscriptions. Both stores, both eras.

use std::time::{Duration, SystemTime};

use serde_json::{Value, json};

use super::auth::create_key;
use super::messages::{envelope, rpc};
use super::server::HttpServer;
use super::{NOTIFY_TIMEOUT, client::EventStream};
use crate::support::Project;

const SCOPES: &[&str] = &[
    "orchestra:read:features",
    "orchestra:read:docs",
    "orchestra:search",
];

/// The fixture project with notes that link to features and mention their
/// ids, and a feature that links to a note; every file's mtime the same
/// in both copies. Without `notes`, the same project with no note at all.
fn project(notes: bool) -> Project {
    let p = Project::fixture();
    p.file(
        "notes/sync-plan.md",
        "# Sync plan\n\nThe sync of [offline mode](../features/FEAT-001.md) waits for FEAT-002.\n\nsync sync sync conflict\n",
    );
    p.file(
        "features/FEAT-010.md",
        "---\nstatus: open\n---\n# Sync links\n\nSee [the plan](../notes/sync-plan.md) and retro-sprint-14; sync conflict.\n",
    );
    if !notes {
        std::fs::remove_dir_all(p.path("notes")).unwrap();
        std::fs::create_dir(p.path("notes")).unwrap();
    }
    let when = SystemTime::UNIX_EPOCH + Duration::from_secs(1_790_000_000);
    set_mtimes(&p.dir(), when);
    p.import(&[]).assert_success();
    p
}

fn set_mtimes(dir: &std::path::Path, when: SystemTime) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            set_mtimes(&path, when);
        } else {
            std::fs::File::options()
                .write(true)
                .open(&path)
                .unwrap()
                .set_modified(when)
                .unwrap();
        }
    }
}

/// A 2026-07-28 request with `key`: its status and answer, the request's
/// id removed, and what differs between two imports made at different
/// moments (a version's time) blanked.
fn ask(server: &HttpServer, key: &str, method: &str, params: Value) -> (u16, Value) {
    let name = match method {
        "resources/read" => params["uri"].as_str(),
        "tools/call" => params["name"].as_str(),
        _ => None,
    };
    let mut req = server
        .post(&rpc(1, method, envelope(params.clone())))
        .header("Mcp-Method", method)
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Authorization", &format!("Bearer {key}"));
    if let Some(name) = name {
        req = req.header("Mcp-Name", name);
    }
    let resp = req.send();
    let mut answer = resp.json();
    blank_times(&mut answer);
    (resp.status, answer)
}

fn blank_times(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (name, value) in map.iter_mut() {
                if matches!(name.as_str(), "time" | "imported" | "importedAt") {
                    *value = Value::Null;
                } else {
                    blank_times(value);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(blank_times),
        // Text results name a version's time in words (`2026-12-07 01:02 UTC`).
        Value::String(text) => *text = strip_dates(text),
        _ => {}
    }
}

/// `2026-12-07 01:02 UTC`, RFC 3339 times and dates replaced by `TIME`.
fn strip_dates(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        let rest = &bytes[i..];
        let date = rest.len() >= 10
            && rest[..4].iter().all(u8::is_ascii_digit)
            && rest[4] == b'-'
            && rest[7] == b'-';
        if date {
            // `2026-12-07 01:02 UTC`, `2026-12-07T01:02:03Z` or a bare date.
            let end = match rest.get(10) {
                Some(b'T') => text[i..].find('Z').map(|e| i + e + 1),
                _ => text[i..].find(" UTC").map(|e| i + e + 4),
            }
            .filter(|e| *e - i <= 30)
            .unwrap_or(i + 10);
            out.push_str("TIME");
            i = end;
        } else {
            let c = text[i..].chars().next().unwrap();
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// Every page of a listing (`resources/list`, or a paged tool) by its cursors.
fn pages(server: &HttpServer, key: &str, method: &str, params: Value) -> Vec<(u16, Value)> {
    let mut answers = Vec::new();
    let mut params = params;
    for _ in 0..50 {
        let (status, answer) = ask(server, key, method, params.clone());
        let next = answer["result"]["nextCursor"]
            .as_str()
            .or_else(|| answer["result"]["structuredContent"]["nextCursor"].as_str())
            .map(str::to_string);
        answers.push((status, answer));
        let Some(next) = next else {
            return answers;
        };
        match method {
            "tools/call" => params["arguments"]["cursor"] = Value::from(next),
            _ => params["cursor"] = Value::from(next),
        }
    }
    panic!("more than 50 pages");
}

fn tool(name: &str, arguments: Value) -> Value {
    json!({"name": name, "arguments": arguments})
}

/// The calls whose answers must not differ, each answered whole (every
/// page).
fn answers(server: &HttpServer, key: &str) -> Vec<(String, Vec<(u16, Value)>)> {
    let mut calls: Vec<(String, &str, Value)> = vec![
        ("list".into(), "resources/list", json!({})),
        ("templates".into(), "resources/templates/list", json!({})),
    ];
    for uri in [
        "orchestra://features/FEAT-001",
        "orchestra://features/FEAT-010",
        "orchestra://notes/sync-plan",
        "orchestra://notes/retro-sprint-14",
        "orchestra://notes/never-was",
        "orchestra://notes/sync-plan?version=1",
    ] {
        calls.push((format!("read {uri}"), "resources/read", json!({"uri": uri})));
        for (name, arguments) in [
            ("read", json!({"uri": uri})),
            ("outline", json!({"uri": uri})),
            ("history", json!({"uri": uri, "limit": 2})),
            ("links", json!({"uri": uri, "limit": 2})),
        ] {
            calls.push((format!("{name} {uri}"), "tools/call", tool(name, arguments)));
        }
        calls.push((
            format!("diff {uri}"),
            "tools/call",
            tool("diff", json!({"uri": uri})),
        ));
    }
    for (label, args) in [
        ("ranked", json!({"query": "sync", "limit": 2})),
        (
            "ranked long",
            json!({"query": "sync conflict offline plan", "limit": 2}),
        ),
        ("relaxed", json!({"query": "sync zebraword", "limit": 2})),
        ("phrase", json!({"query": "\"sync conflict\"", "limit": 2})),
        ("filter", json!({"where": ["status=open"], "limit": 2})),
        (
            "under notes",
            json!({"query": "sync", "under": "notes", "limit": 2}),
        ),
        ("nothing", json!({"query": "zebraword", "limit": 2})),
    ] {
        calls.push((
            format!("search {label}"),
            "tools/call",
            tool("search", args),
        ));
    }
    for (prefix, typed) in [
        ("notes", ""),
        ("notes", "r"),
        ("features", "FEAT"),
        ("features", ""),
    ] {
        calls.push((
            format!("complete {prefix} {typed:?}"),
            "completion/complete",
            json!({"ref": {"type": "ref/resource", "uri": format!("orchestra://{prefix}/{{+id}}")},
                   "argument": {"name": "id", "value": typed}}),
        ));
    }
    calls.push((
        "list tool".into(),
        "tools/call",
        tool("list", json!({"limit": 3})),
    ));
    calls.push((
        "list tool notes".into(),
        "tools/call",
        tool("list", json!({"under": "notes"})),
    ));
    calls
        .into_iter()
        .map(|(label, method, params)| (label, pages(server, key, method, params)))
        .collect()
}

#[test]
fn a_caller_without_notes_learns_nothing_of_them() {
    let with = project(true);
    let without = project(false);
    let key_with = create_key(&with, "features-docs", SCOPES);
    let key_without = create_key(&without, "features-docs", SCOPES);
    let full = create_key(&with, "everything", &["orchestra:read", "orchestra:search"]);
    let a = HttpServer::start(&with, &["--api-keys", "--page-size", "3"]);
    let b = HttpServer::start(&without, &["--api-keys", "--page-size", "3"]);

    let seen = answers(&a, &key_with);
    let expected = answers(&b, &key_without);
    assert_eq!(seen.len(), expected.len());
    let differing: Vec<String> = seen
        .iter()
        .zip(&expected)
        .filter(|((_, got), (_, want))| got != want)
        .map(|((label, got), (_, want))| format!("{label}:\n  hidden  {got:?}\n  absent  {want:?}"))
        .collect();
    assert!(
        differing.is_empty(),
        "with notes hidden ≠ without notes:\n{}",
        differing.join("\n")
    );

    // The comparison could fail: a caller who may read notes sees them.
    let everything = answers(&a, &full);
    let differs = |label: &str| {
        let find = |all: &[(String, Vec<(u16, Value)>)]| {
            all.iter().find(|(l, _)| l == label).unwrap().1.clone()
        };
        find(&everything) != find(&seen)
    };
    for label in [
        "list",
        "read orchestra://notes/sync-plan",
        "search ranked",
        "complete notes \"\"",
        "links orchestra://features/FEAT-001",
    ] {
        assert!(
            differs(label),
            "{label}: a full reader sees the same as a features one"
        );
    }
    // A hidden note reads as a missing one: the same code and message.
    let hidden = &seen
        .iter()
        .find(|(l, _)| l == "read orchestra://notes/sync-plan")
        .unwrap()
        .1[0];
    let missing = &seen
        .iter()
        .find(|(l, _)| l == "read orchestra://notes/never-was")
        .unwrap()
        .1[0];
    assert_eq!(hidden.0, missing.0);
    assert_eq!(hidden.1["error"]["code"], missing.1["error"]["code"]);
    assert_eq!(hidden.1["error"]["message"], missing.1["error"]["message"]);
}

/// A handshake-era session of `key` subscribed to a hidden note and a
/// feature, with its stream open.
fn subscribed(server: &HttpServer, key: &str) -> (String, EventStream) {
    let bearer = format!("Bearer {key}");
    let resp = server
        .post(&super::messages::initialize(0))
        .header("Authorization", &bearer)
        .send();
    resp.expect(200);
    let sid = resp.header("mcp-session-id").unwrap().to_string();
    server
        .post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .session(&sid)
        .header("Authorization", &bearer)
        .send();
    let stream = server
        .request("GET", "/mcp")
        .session(&sid)
        .header("Accept", "text/event-stream")
        .header("Authorization", &bearer)
        .open();
    for (id, uri) in [
        (1, "orchestra://notes/sync-plan"),
        (2, "orchestra://features/FEAT-001"),
    ] {
        let resp = server
            .post(&rpc(id, "resources/subscribe", json!({"uri": uri})))
            .session(&sid)
            .header("Authorization", &bearer)
            .send();
        resp.expect(200);
        assert_eq!(resp.json()["result"], json!({}), "{resp:?}");
    }
    (sid, stream)
}

fn append(p: &Project, rel: &str, line: &str) {
    let mut text = std::fs::read_to_string(p.path(rel)).unwrap();
    text.push_str(line);
    p.file(rel, text);
    p.import(&[]).assert_success();
}

#[test]
fn notifications_say_nothing_of_hidden_documents() {
    let with = project(true);
    let key = create_key(&with, "features-docs", SCOPES);
    let server = HttpServer::start(&with, &["--api-keys"]);
    let (_sid, mut stream) = subscribed(&server, &key);

    // A note changes, then a new note appears, then the feature changes:
    // the stream carries the feature's update alone.
    append(&with, "notes/sync-plan.md", "More.\n");
    with.file("notes/brand-new.md", "# New\n");
    with.import(&[]).assert_success();
    append(&with, "features/FEAT-001.md", "More.\n");
    let mut seen = Vec::new();
    loop {
        let message = stream.message(NOTIFY_TIMEOUT);
        let done = message["params"]["uri"] == "orchestra://features/FEAT-001";
        seen.push(message);
        if done {
            break;
        }
    }
    assert_eq!(
        seen,
        [
            json!({"jsonrpc": "2.0", "method": "notifications/resources/updated",
                "params": {"uri": "orchestra://features/FEAT-001"}})
        ],
        "hidden changes made notifications"
    );
    // A new feature is a list change it may know of.
    with.file("features/FEAT-011.md", "# New feature\n");
    with.import(&[]).assert_success();
    let changed = stream.message(NOTIFY_TIMEOUT);
    assert_eq!(
        changed["method"], "notifications/resources/list_changed",
        "{changed}"
    );
}
