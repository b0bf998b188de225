//! Document history on the real binary: a project imported through 20 changes (edits, reverts, a rename, removals, a binary document), every version read back over MCP against a model kept by the test, the `history` and `diff` tools (diffs against GNU `diff -u`), version completion, and the storage a revert shares.

use std::collections::BTreeMap;
use std::process::Command;

use base64::Engine;
use serde_json::{Value, json};

use crate::support::{Db, Project, Server, history_check};

/// What the test expects the history to hold: per key (`prefix/id`), every
/// version in order, `None` for a removal.
#[derive(Default)]
struct Model {
    versions: BTreeMap<String, Vec<Option<Vec<u8>>>>,
    /// Documents that exist now.
    present: BTreeMap<String, Vec<u8>>,
}

impl Model {
    /// One import of the project as it is now.
    fn import(&mut self, p: &Project, files: &BTreeMap<String, Vec<u8>>) {
        p.import(&[]).assert_success();
        for (key, body) in files {
            let versions = self.versions.entry(key.clone()).or_default();
            if versions.last() != Some(&Some(body.clone())) {
                versions.push(Some(body.clone()));
            }
        }
        for key in self.present.keys() {
            if !files.contains_key(key) {
                self.versions.get_mut(key).unwrap().push(None);
            }
        }
        self.present = files.clone();
    }
}

fn path_of(key: &str) -> String {
    format!("{key}.md")
}

fn read(server: &mut Server, id: u64, uri: &str) -> Value {
    server.request(
        &json!({"jsonrpc": "2.0", "id": id, "method": "resources/read",
                           "params": {"uri": uri}}),
    )
}

fn call(server: &mut Server, id: u64, name: &str, arguments: Value) -> Value {
    let response = server.request(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                                          "params": {"name": name, "arguments": arguments}}));
    response["result"].clone()
}

fn initialize(server: &mut Server) {
    server.request(&json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "history-test", "version": "1"}}}));
    server.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
}

/// The hunks of `diff -u old new` (its two header lines left out).
pub(crate) fn reference_diff(old: &[u8], new: &[u8]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    std::fs::write(&a, old).unwrap();
    std::fs::write(&b, new).unwrap();
    let out = Command::new("diff")
        .arg("-u")
        .arg(&a)
        .arg(&b)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    text.lines().skip(2).map(|l| format!("{l}\n")).collect()
}

#[test]
fn twenty_changes_every_version_reads_back_and_compares() {
    let p = Project::new();
    let mut model = Model::default();
    let mut files: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    let text = |title: &str, lines: &[&str]| -> Vec<u8> {
        let mut t = format!("# {title}\n\n");
        for l in lines {
            t.push_str(l);
            t.push('\n');
        }
        t.into_bytes()
    };
    let set = |files: &mut BTreeMap<String, Vec<u8>>, key: &str, body: Option<Vec<u8>>| match body {
        Some(body) => {
            p.file(&path_of(key), &body);
            files.insert(key.to_string(), body);
        }
        None => {
            p.remove(&path_of(key));
            files.remove(key);
        }
    };
    let a = "notes/a";
    let v_a: Vec<Vec<u8>> = (0..6)
        .map(|i| {
            let lines: Vec<String> = (0..12)
                .map(|l| {
                    if l == i * 2 {
                        format!("line {l} changed in edit {i}")
                    } else {
                        format!("line {l}")
                    }
                })
                .collect();
            let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
            text(&format!("A, edit {i}"), &refs)
        })
        .collect();
    // 20 imports, each with at least one change.
    // Each step: files written (Some) or removed (None), then one import.
    type Step<'a> = Vec<(&'a str, Option<Vec<u8>>)>;
    let steps: Vec<Step> = vec![
        vec![
            (a, Some(v_a[0].clone())),
            ("features/F-1", Some(text("Feature one", &["first"]))),
            ("docs/x", Some(text("X", &["x"]))),
            ("notes/bin", Some(b"\xff\xfe\x00binary 1".to_vec())),
        ],
        vec![(a, Some(v_a[1].clone()))],
        vec![(a, Some(v_a[2].clone()))],
        vec![(a, Some(v_a[1].clone()))], // revert to edit 1
        vec![("docs/x", None)],
        vec![("docs/x", Some(text("X again", &["back"])))],
        vec![("notes/bin", Some(b"\xff\xfe\x00binary 2".to_vec()))],
        vec![(a, Some(v_a[3].clone()))],
        // A rename: F-1's history ends with a removal, F-2's begins.
        vec![
            ("features/F-1", None),
            ("features/F-2", Some(text("Feature one", &["first"]))),
        ],
        vec![(a, Some(v_a[4].clone()))],
        vec![("features/F-2", Some(text("Feature two", &["second"])))],
        vec![(a, Some(v_a[5].clone()))],
        vec![(a, Some(v_a[0].clone()))], // revert to the first
        vec![("docs/x", Some(text("X", &["x"])))], // revert across a removal
        vec![("notes/new", Some(text("New", &["n"])))],
        vec![("notes/new", Some(text("New", &["n", "m"])))],
        vec![(a, Some(v_a[2].clone()))],
        vec![("notes/new", None)],
        vec![("notes/bin", Some(b"\xff\xfe\x00binary 1".to_vec()))],
        vec![(a, Some(v_a[3].clone()))],
    ];
    assert_eq!(steps.len(), 20);
    for step in steps {
        for (key, body) in step {
            set(&mut files, key, body);
        }
        model.import(&p, &files);
    }

    let mut server = Server::start(&p.db(), &[]);
    initialize(&mut server);
    let mut id = 1;
    for (key, versions) in &model.versions {
        let uri = format!("orchestra://{key}");
        for (i, version) in versions.iter().enumerate() {
            let number = i + 1;
            let versioned = format!("{uri}?version={number}");
            id += 1;
            let response = read(&mut server, id, &versioned);
            match version {
                Some(body) => {
                    let contents = &response["result"]["contents"][0];
                    assert_eq!(contents["uri"], versioned.as_str(), "{response}");
                    let got = match contents["text"].as_str() {
                        Some(text) => text.as_bytes().to_vec(),
                        None => base64::engine::general_purpose::STANDARD
                            .decode(contents["blob"].as_str().unwrap())
                            .unwrap(),
                    };
                    assert_eq!(&got, body, "{versioned}");
                }
                None => assert_eq!(response["error"]["code"], -32002, "{versioned}: {response}"),
            }
        }
        // One past the last: not found, in this era's code.
        id += 1;
        let beyond = read(
            &mut server,
            id,
            &format!("{uri}?version={}", versions.len() + 1),
        );
        assert_eq!(beyond["error"]["code"], -32002, "{beyond}");

        // The history tool: dense numbers, newest first; the current one flagged.
        id += 1;
        let history = call(
            &mut server,
            id,
            "history",
            json!({"uri": uri, "limit": 100}),
        );
        let listed = history["structuredContent"]["versions"].as_array().unwrap();
        let numbers: Vec<u64> = listed
            .iter()
            .map(|v| v["version"].as_u64().unwrap())
            .collect();
        let expected: Vec<u64> = (1..=versions.len() as u64).rev().collect();
        assert_eq!(numbers, expected, "{key}");
        let exists = model.present.contains_key(key);
        assert_eq!(listed[0]["current"], exists, "{key}");
        assert_eq!(listed[0]["removed"], !exists, "{key}");
        // A resource_link for every version with bytes.
        let links = history["content"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["type"] == "resource_link")
            .count();
        assert_eq!(
            links,
            versions.iter().filter(|v| v.is_some()).count(),
            "{key}"
        );
    }

    // Diffs of consecutive text versions of notes/a, against `diff -u`.
    let a_versions = &model.versions[a];
    for n in 2..=a_versions.len() {
        id += 1;
        let result = call(
            &mut server,
            id,
            "diff",
            json!({"uri": "orchestra://notes/a", "from": n - 1, "to": n}),
        );
        let text = result["content"][0]["text"].as_str().unwrap();
        let (old, new) = (
            a_versions[n - 2].as_ref().unwrap(),
            a_versions[n - 1].as_ref().unwrap(),
        );
        let header = format!(
            "--- orchestra://notes/a?version={}\n+++ orchestra://notes/a?version={n}\n",
            n - 1
        );
        assert_eq!(
            text,
            format!("{header}{}", reference_diff(old, new)),
            "versions {} and {n}",
            n - 1
        );
    }
    // Defaults: the previous version and the newest.
    id += 1;
    let default = call(
        &mut server,
        id,
        "diff",
        json!({"uri": "orchestra://notes/a"}),
    );
    let last = a_versions.len();
    assert!(
        default["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with(&format!("--- orchestra://notes/a?version={}\n", last - 1))
    );
    // Refused with a tool error: a binary document, an unknown version, a removal.
    for arguments in [
        json!({"uri": "orchestra://notes/bin"}),
        json!({"uri": "orchestra://notes/a", "from": 1, "to": 99}),
        json!({"uri": "orchestra://docs/x", "from": 1, "to": 2}),
        json!({"uri": "orchestra://notes/nothing"}),
        json!({"uri": "not a uri"}),
    ] {
        id += 1;
        let result = call(&mut server, id, "diff", arguments.clone());
        assert_eq!(result["isError"], true, "{arguments}: {result}");
    }
    // Completion of the version argument: newest first, only versions with bytes.
    id += 1;
    let completion = server.request(
        &json!({"jsonrpc": "2.0", "id": id, "method": "completion/complete",
        "params": {"ref": {"type": "ref/resource", "uri": "orchestra://docs/{+id}{?version}"},
                   "argument": {"name": "version", "value": ""},
                   "context": {"arguments": {"id": "x"}}}}),
    );
    assert_eq!(
        completion["result"]["completion"]["values"],
        json!(["4", "3", "1"]),
        "{completion}"
    );
    // Versioned URIs never appear in listings.
    id += 1;
    let listed = server.request(&json!({"jsonrpc": "2.0", "id": id, "method": "resources/list"}));
    for resource in listed["result"]["resources"].as_array().unwrap() {
        assert!(
            !resource["uri"].as_str().unwrap().contains('?'),
            "{resource}"
        );
    }
    server.close();

    // In the stateless era, a missing version is not found as a missing
    // document is, and a version reads back.
    let mut stateless = Server::start(&p.db(), &[]);
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {}});
    let mut read_stateless = |id: u64, uri: &str| {
        stateless.request(
            &json!({"jsonrpc": "2.0", "id": id, "method": "resources/read",
                                  "params": {"uri": uri, "_meta": meta}}),
        )
    };
    let missing_doc = read_stateless(1, "orchestra://notes/never");
    let missing_version = read_stateless(2, "orchestra://notes/a?version=999");
    assert!(missing_doc["error"]["code"].is_i64(), "{missing_doc}");
    assert_eq!(
        missing_version["error"]["code"],
        missing_doc["error"]["code"]
    );
    let first = read_stateless(3, "orchestra://notes/a?version=1");
    assert_eq!(
        first["result"]["contents"][0]["text"]
            .as_str()
            .unwrap()
            .as_bytes(),
        &a_versions[0].as_ref().unwrap()[..]
    );
    stateless.close();

    // Storage: one body per distinct superseded content, whatever the reverts.
    let mut superseded: Vec<&Vec<u8>> = Vec::new();
    for (key, versions) in &model.versions {
        let current = model.present.get(key);
        for (i, v) in versions.iter().enumerate() {
            let is_current = i + 1 == versions.len() && current.is_some();
            if let Some(body) = v
                && !is_current
                && !superseded.contains(&body)
            {
                superseded.push(body);
            }
        }
    }
    let bodies = Db::open(&p.db()).int("SELECT count(*) FROM bodies", &[]);
    assert_eq!(bodies as usize, superseded.len());
    assert_eq!(history_check(&p.db()), "ok");
}
