//! Writes on the real binary over stdio: which servers declare the write tools, each tool's change on disk and in the database (a later import finds nothing to do), versions that refuse a stale write (an outside edit counts), hostile paths refused, and concurrent writers in two processes: distinct ids for 50 creates, and no lost update among edits that name their version.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::support::{Project, Server};

/// A stateless (2026-07-28) request's `_meta`.
fn meta() -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
           "io.modelcontextprotocol/clientCapabilities": {}})
}

fn call(server: &mut Server, name: &str, arguments: Value) -> Value {
    let response = server.request(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": name, "arguments": arguments, "_meta": meta()}}));
    assert!(response.get("error").is_none(), "{response}");
    response["result"].clone()
}

fn tool_names(server: &mut Server) -> Vec<String> {
    let response = server.request(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list",
        "params": {"_meta": meta()}}));
    response["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

/// The error text of a refused call.
#[track_caller]
fn refused(result: &Value) -> String {
    assert_eq!(result["isError"], true, "{result}");
    result["content"][0]["text"].as_str().unwrap().to_string()
}

#[track_caller]
fn ok(result: &Value) -> &Value {
    assert_ne!(result["isError"], true, "{result}");
    &result["structuredContent"]
}

fn project() -> Project {
    let p = Project::new();
    p.file(
        "features/FEAT-001.md",
        "---\r\n# owner: ops\r\ntitle:   Sync\r\n---\r\n# Sync\r\n\r\nOld text.\r\n",
    );
    p.file("docs/tasks/TASK-003.md", "# Task three\n");
    p.import(&[]).assert_success();
    p
}

fn writer(p: &Project) -> Server {
    let dir = p.dir();
    Server::start(&p.db(), &["--project", dir.to_str().unwrap()])
}

/// `orchestra import` finds the folder and the database equal.
#[track_caller]
fn level(p: &Project) {
    let report = p.import_json(&[]);
    let counts = report.counts();
    assert_eq!(
        (counts.new, counts.updated, counts.removed),
        (0, 0, 0),
        "{report:?}"
    );
}

const WRITE_TOOLS: [&str; 5] = ["create", "write", "edit", "move", "delete"];

#[test]
fn only_a_server_that_knows_its_folder_declares_the_write_tools() {
    let p = project();
    let mut server = writer(&p);
    let names = tool_names(&mut server);
    assert!(
        WRITE_TOOLS.iter().all(|t| names.contains(&t.to_string())),
        "{names:?}"
    );
    server.close();

    let dir = p.dir();
    for args in [
        vec![],
        vec!["--project", dir.to_str().unwrap(), "--read-only"],
    ] {
        let mut server = Server::start(&p.db(), &args);
        let names = tool_names(&mut server);
        assert!(
            !names.iter().any(|n| WRITE_TOOLS.contains(&n.as_str())),
            "{args:?}: {names:?}"
        );
        let why = refused(&call(
            &mut server,
            "edit",
            json!({"uri": "orchestra://features/FEAT-001", "edits": [{"append": "x"}]}),
        ));
        assert!(why.starts_with("this server does not write"), "{why}");
        server.close();
    }
    assert_eq!(
        std::fs::read(p.path("features/FEAT-001.md")).unwrap(),
        b"---\r\n# owner: ops\r\ntitle:   Sync\r\n---\r\n# Sync\r\n\r\nOld text.\r\n"
    );
}

#[test]
fn each_tool_changes_the_file_and_the_database_alike() {
    let p = project();
    let mut server = writer(&p);

    // create, by uri and by allocation.
    let made = call(
        &mut server,
        "create",
        json!({"uri": "orchestra://notes/plan", "content": "# Plan\n"}),
    );
    assert_eq!(ok(&made)["version"], 1);
    let made = call(
        &mut server,
        "create",
        json!({"under": "docs/tasks", "content": "# Next\n"}),
    );
    assert_eq!(ok(&made)["uri"], "orchestra://docs/tasks/TASK-004");
    assert_eq!(
        std::fs::read_to_string(p.path("docs/tasks/TASK-004.md")).unwrap(),
        "# Next\n"
    );
    let why = refused(&call(
        &mut server,
        "create",
        json!({"uri": "orchestra://notes/plan", "content": "x"}),
    ));
    assert!(why.contains("exists"), "{why}");

    // edit: CRLF kept, the frontmatter's comment kept, dryRun writes nothing.
    let dry = call(
        &mut server,
        "edit",
        json!({"uri": "orchestra://features/FEAT-001", "dryRun": true,
               "edits": [{"replace": "Old text.", "with": "New text.\nTwo lines."}]}),
    );
    assert_eq!(ok(&dry)["dryRun"], true);
    assert!(
        ok(&dry)["diff"].as_str().unwrap().contains("+New text."),
        "{dry}"
    );
    let edited = call(
        &mut server,
        "edit",
        json!({"uri": "orchestra://features/FEAT-001", "ifVersion": 1,
               "edits": [{"replace": "Old text.", "with": "New text.\nTwo lines."},
                         {"frontmatter": {"status": "done"}}]}),
    );
    assert_eq!(ok(&edited)["version"], 2);
    assert_eq!(
        std::fs::read(p.path("features/FEAT-001.md")).unwrap(),
        b"---\r\n# owner: ops\r\ntitle:   Sync\r\nstatus: done\r\n---\r\n# Sync\r\n\r\nNew text.\r\nTwo lines.\r\n"
    );

    // write, move, delete.
    let written = call(
        &mut server,
        "write",
        json!({"uri": "orchestra://notes/plan", "content": "# Plan B\n", "ifVersion": 1}),
    );
    assert_eq!(ok(&written)["version"], 2);
    let moved = call(
        &mut server,
        "move",
        json!({"uri": "orchestra://notes/plan", "to": "orchestra://notes/archive/plan"}),
    );
    assert_eq!(ok(&moved)["movedFrom"], "orchestra://notes/plan");
    // Both histories say where it went.
    let old_history = call(
        &mut server,
        "history",
        json!({"uri": "orchestra://notes/plan"}),
    );
    let newest = &old_history["structuredContent"]["versions"][0];
    assert_eq!(
        (&newest["version"], &newest["removed"], &newest["movedTo"]),
        (
            &json!(3),
            &json!(true),
            &json!("orchestra://notes/archive/plan")
        ),
        "{old_history}"
    );
    let new_history = call(
        &mut server,
        "history",
        json!({"uri": "orchestra://notes/archive/plan"}),
    );
    let first = &new_history["structuredContent"]["versions"][0];
    assert_eq!(
        (&first["version"], &first["movedFrom"]),
        (&json!(1), &json!("orchestra://notes/plan")),
        "{new_history}"
    );
    assert!(!p.path("notes/plan.md").exists());
    assert_eq!(
        std::fs::read_to_string(p.path("notes/archive/plan.md")).unwrap(),
        "# Plan B\n"
    );
    let deleted = call(
        &mut server,
        "delete",
        json!({"uri": "orchestra://docs/tasks/TASK-003", "ifVersion": 1}),
    );
    assert_eq!(ok(&deleted)["removed"], true);
    assert!(!p.path("docs/tasks/TASK-003.md").exists());

    // Everyone reads what was written: the server's own resources/read.
    let read = server.request(
        &json!({"jsonrpc": "2.0", "id": 2, "method": "resources/read",
        "params": {"uri": "orchestra://notes/archive/plan", "_meta": meta()}}),
    );
    assert_eq!(
        read["result"]["contents"][0]["text"], "# Plan B\n",
        "{read}"
    );
    server.close();
    level(&p);
}

#[test]
fn a_stale_version_writes_nothing_and_an_outside_edit_is_a_version() {
    let p = project();
    let mut server = writer(&p);
    let file = p.path("features/FEAT-001.md");
    let before = std::fs::read(&file).unwrap();
    let why = refused(&call(
        &mut server,
        "write",
        json!({"uri": "orchestra://features/FEAT-001", "content": "x", "ifVersion": 7}),
    ));
    assert_eq!(
        why,
        "orchestra://features/FEAT-001 changed since version 7: now version 1; read it again and redo the change on its text"
    );
    assert_eq!(std::fs::read(&file).unwrap(), before);

    // An editor saves: the server's version 1 is stale.
    std::fs::write(&file, "# Saved by an editor\n").unwrap();
    let why = refused(&call(
        &mut server,
        "edit",
        json!({"uri": "orchestra://features/FEAT-001", "ifVersion": 1, "edits": [{"append": "mine\n"}]}),
    ));
    assert!(
        why.contains("changed since version 1: now version 2"),
        "{why}"
    );
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "# Saved by an editor\n"
    );
    let edited = call(
        &mut server,
        "edit",
        json!({"uri": "orchestra://features/FEAT-001", "ifVersion": 2, "edits": [{"append": "mine\n"}]}),
    );
    assert_eq!(ok(&edited)["version"], 3);
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "# Saved by an editor\nmine\n"
    );
    server.close();
    level(&p);
}

/// Ids a client might send to leave the project or name another file: dot
/// segments however encoded (once, twice, look-alikes), separators
/// smuggled in a segment, NUL and controls, hidden names, a symbolic link.
pub(crate) const HOSTILE: [&str; 12] = [
    "orchestra://notes/%2e%2e/x",
    "orchestra://notes/..%2fx",
    "orchestra://notes/%252e%252e%252fx/..%2f..%2fescape",
    "orchestra://notes/a%5cb",
    "orchestra://notes/%00x",
    "orchestra://notes/.hidden",
    "orchestra://notes/%EF%BC%8E%EF%BC%8E/x",
    "orchestra://notes/a%EF%BC%8Fb",
    "orchestra://notes/a%E2%88%95b",
    "orchestra://notes/link/x",
    "orchestra://notes/x%0Ay",
    "orchestra:///etc/passwd",
];

/// A project whose `notes/link` leads out of it, to an empty `outside/`.
pub(crate) fn with_a_way_out() -> Project {
    let p = project();
    std::fs::create_dir(p.root_path("outside")).unwrap();
    std::fs::create_dir_all(p.path("notes")).unwrap();
    std::os::unix::fs::symlink(p.root_path("outside"), p.path("notes/link")).unwrap();
    p
}

/// Every call a hostile id can be given to: a new document at it, a write
/// or edit of it, a move to it.
pub(crate) fn hostile_calls(uri: &str) -> Vec<(&'static str, Value)> {
    vec![
        ("create", json!({"uri": uri, "content": "x"})),
        ("write", json!({"uri": uri, "content": "x"})),
        ("edit", json!({"uri": uri, "edits": [{"append": "x"}]})),
        ("delete", json!({"uri": uri})),
        (
            "move",
            json!({"uri": "orchestra://docs/tasks/TASK-003", "to": uri}),
        ),
    ]
}

/// Nothing was written outside, and the project is as it was.
pub(crate) fn nothing_left_the_project(p: &Project) {
    assert_eq!(
        std::fs::read_dir(p.root_path("outside")).unwrap().count(),
        0
    );
    assert_eq!(
        std::fs::read_to_string(p.path("docs/tasks/TASK-003.md")).unwrap(),
        "# Task three\n"
    );
    level(p);
}

#[test]
fn hostile_paths_are_refused_in_both_eras_and_nothing_leaves_the_project() {
    let p = with_a_way_out();
    let mut server = writer(&p);
    // The handshake era too: the same refusals.
    let mut handshake = writer(&p);
    handshake.request(&json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "write-test", "version": "1"}}}));
    handshake.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    for uri in HOSTILE {
        for (tool, arguments) in hostile_calls(uri) {
            let result = call(&mut server, tool, arguments.clone());
            assert_eq!(result["isError"], true, "{tool} {uri}: {result}");
            let response = handshake.request(&json!({"jsonrpc": "2.0", "id": 1,
                "method": "tools/call", "params": {"name": tool, "arguments": arguments}}));
            assert_eq!(
                response["result"]["isError"], true,
                "{tool} {uri}: {response}"
            );
        }
    }
    server.close();
    handshake.close();
    nothing_left_the_project(&p);
}

#[test]
fn fifty_creates_in_two_processes_get_fifty_ids() {
    let p = project();
    let ids: Vec<String> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..2)
            .map(|_| {
                let p = &p;
                scope.spawn(move || {
                    let mut server = writer(p);
                    let ids: Vec<String> = (0..25)
                        .map(|i| {
                            let made = call(
                                &mut server,
                                "create",
                                json!({"under": "docs/tasks", "content": format!("# {i}\n")}),
                            );
                            ok(&made)["uri"].as_str().unwrap().to_string()
                        })
                        .collect();
                    server.close();
                    ids
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect()
    });
    let distinct: BTreeSet<&String> = ids.iter().collect();
    assert_eq!(distinct.len(), 50, "{ids:?}");
    let expected: BTreeSet<String> = (4..54)
        .map(|n| format!("orchestra://docs/tasks/TASK-{n:03}"))
        .collect();
    assert_eq!(
        distinct.into_iter().cloned().collect::<BTreeSet<_>>(),
        expected
    );
    level(&p);
}

#[test]
fn edits_that_name_their_version_lose_no_update() {
    let p = project();
    p.file("notes/log.md", "# Log\n");
    p.import(&[]).assert_success();
    let (accepted, refusals) = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..4)
            .map(|w| {
                let p = &p;
                scope.spawn(move || {
                    let mut server = writer(p);
                    let (mut accepted, mut refusals) = (Vec::new(), 0);
                    for i in 0..15 {
                        let line = format!("- worker {w} edit {i}\n");
                        let read =
                            call(&mut server, "read", json!({"uri": "orchestra://notes/log"}));
                        let version = read["structuredContent"]["version"].clone();
                        let result = call(
                            &mut server,
                            "edit",
                            json!({"uri": "orchestra://notes/log", "ifVersion": version,
                                   "edits": [{"append": line}]}),
                        );
                        match result["isError"] == true {
                            true => {
                                let why = refused(&result);
                                assert!(why.contains("changed since version"), "{why}");
                                refusals += 1;
                            }
                            false => accepted.push(line),
                        }
                    }
                    server.close();
                    (accepted, refusals)
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).fold(
            (Vec::new(), 0),
            |(mut all, n), (accepted, refusals)| {
                all.extend(accepted);
                (all, n + refusals)
            },
        )
    });
    let text = std::fs::read_to_string(p.path("notes/log.md")).unwrap();
    let lines: Vec<&str> = text.lines().skip(1).collect();
    // Every accepted edit is in the file once, nothing else is.
    let mut want: Vec<&str> = accepted.iter().map(|l| l.trim_end()).collect();
    let mut got = lines.clone();
    want.sort();
    got.sort();
    assert_eq!(got, want);
    assert_eq!(accepted.len() + refusals, 60);
    assert!(!accepted.is_empty());
    level(&p);
}
