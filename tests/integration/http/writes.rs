//! Writes over HTTP: offered only to a server with a token (whoever reaches the port could write otherwise), refused without one, and never without the bearer.

use serde_json::{Value, json};

use super::messages::{envelope, fixture_project, rpc};
use super::server::HttpServer;

const WRITE_TOOLS: [&str; 5] = ["create", "write", "edit", "move", "delete"];

fn tool_names(server: &HttpServer, bearer: Option<&str>) -> Vec<String> {
    let mut req = server.post(&rpc(1, "tools/list", envelope(json!({}))));
    if let Some(bearer) = bearer {
        req = req.header("Authorization", bearer);
    }
    let resp = req.send();
    resp.expect(200);
    resp.json()["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

fn append(server: &HttpServer, bearer: Option<&str>) -> (u16, Value) {
    let call = rpc(
        2,
        "tools/call",
        envelope(json!({"name": "edit", "arguments": {
            "uri": "orchestra://notes/retro-sprint-14", "edits": [{"append": "over HTTP\n"}]}})),
    );
    let mut req = server.post(&call);
    if let Some(bearer) = bearer {
        req = req.header("Authorization", bearer);
    }
    let resp = req.send();
    (resp.status, resp.json())
}

#[test]
fn http_writes_only_with_a_token() {
    let p = fixture_project();
    let dir = p.dir();
    let file = p.path("notes/retro-sprint-14.md");
    let before = std::fs::read(&file).unwrap();

    // No token: read-only, whatever --project says.
    let open = HttpServer::start(&p, &["--project", dir.to_str().unwrap()]);
    let names = tool_names(&open, None);
    assert!(
        !names.iter().any(|n| WRITE_TOOLS.contains(&n.as_str())),
        "{names:?}"
    );
    let (status, answer) = append(&open, None);
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    assert_eq!(std::fs::read(&file).unwrap(), before);
    drop(open);

    // A token: the write tools, for requests that carry it.
    let token = "wr1te-T0ken";
    p.outside_file("token", format!("{token}\n"));
    let token_file = p.root_path("token");
    let guarded = HttpServer::start(
        &p,
        &[
            "--project",
            dir.to_str().unwrap(),
            "--token-file",
            token_file.to_str().unwrap(),
        ],
    );
    let bearer = format!("Bearer {token}");
    let names = tool_names(&guarded, Some(&bearer));
    assert!(
        WRITE_TOOLS.iter().all(|t| names.contains(&t.to_string())),
        "{names:?}"
    );
    let (status, _) = append(&guarded, None);
    assert_eq!(status, 401);
    assert_eq!(std::fs::read(&file).unwrap(), before);
    let (status, answer) = append(&guarded, Some(&bearer));
    assert_eq!(status, 200, "{answer}");
    assert_ne!(answer["result"]["isError"], true, "{answer}");
    let mut after = before.clone();
    if !after.ends_with(b"\n") {
        after.push(b'\n');
    }
    after.extend_from_slice(b"over HTTP\n");
    assert_eq!(std::fs::read(&file).unwrap(), after);
}

#[test]
fn hostile_paths_are_refused_over_http() {
    let p = crate::write::with_a_way_out();
    let dir = p.dir();
    let token = "h0stile-T0ken";
    p.outside_file("token", format!("{token}\n"));
    let token_file = p.root_path("token");
    let server = HttpServer::start(
        &p,
        &[
            "--project",
            dir.to_str().unwrap(),
            "--token-file",
            token_file.to_str().unwrap(),
        ],
    );
    let bearer = format!("Bearer {token}");
    for uri in crate::write::HOSTILE {
        for (tool, arguments) in crate::write::hostile_calls(uri) {
            let call = rpc(
                3,
                "tools/call",
                envelope(json!({"name": tool, "arguments": arguments})),
            );
            let resp = server.post(&call).header("Authorization", &bearer).send();
            assert_eq!(resp.status, 200, "{tool} {uri}: {resp:?}");
            assert_eq!(
                resp.json()["result"]["isError"],
                true,
                "{tool} {uri}: {resp:?}"
            );
        }
    }
    drop(server);
    crate::write::nothing_left_the_project(&p);
}

/// Two server processes on one project and 20 clients on each, every one
/// reading a document and appending its own line with the version it read,
/// in a loop: every accepted edit is in the file once, every refused one
/// said the document had changed, and nothing else is there.
#[test]
fn forty_clients_of_two_servers_lose_no_update() {
    let p = fixture_project();
    let dir = p.dir();
    let token = "c0ncurrent-T0ken";
    p.outside_file("token", format!("{token}\n"));
    let token_file = p.root_path("token");
    let args = [
        "--project",
        dir.to_str().unwrap(),
        "--token-file",
        token_file.to_str().unwrap(),
    ];
    let servers = [HttpServer::start(&p, &args), HttpServer::start(&p, &args)];
    let bearer = format!("Bearer {token}");
    const URI: &str = "orchestra://notes/retro-sprint-14";
    const ROUNDS: usize = 4;
    let results: Vec<(Vec<String>, usize)> = std::thread::scope(|scope| {
        let clients: Vec<_> = (0..40)
            .map(|c| {
                let (server, bearer) = (&servers[c % 2], &bearer);
                scope.spawn(move || {
                    let (mut accepted, mut refused) = (Vec::new(), 0);
                    for round in 0..ROUNDS {
                        let read = server
                            .post(&rpc(
                                1,
                                "tools/call",
                                envelope(json!({"name": "read", "arguments": {"uri": URI}})),
                            ))
                            .header("Authorization", bearer)
                            .send()
                            .json();
                        let version = read["result"]["structuredContent"]["version"].clone();
                        let line = format!("- client {c} round {round}\n");
                        let answer = server
                            .post(&rpc(
                                2,
                                "tools/call",
                                envelope(json!({"name": "edit", "arguments": {
                                "uri": URI, "ifVersion": version, "edits": [{"append": line}]}})),
                            ))
                            .header("Authorization", bearer)
                            .send()
                            .json();
                        match answer["result"]["isError"] == true {
                            true => {
                                let why = answer["result"]["content"][0]["text"]
                                    .as_str()
                                    .unwrap_or_default();
                                assert!(why.contains("changed since version"), "{answer}");
                                refused += 1;
                            }
                            false => accepted.push(line),
                        }
                    }
                    (accepted, refused)
                })
            })
            .collect();
        clients.into_iter().map(|c| c.join().unwrap()).collect()
    });
    let accepted: Vec<String> = results.iter().flat_map(|(a, _)| a.clone()).collect();
    let refused: usize = results.iter().map(|(_, r)| r).sum();
    assert_eq!(accepted.len() + refused, 40 * ROUNDS);
    assert!(!accepted.is_empty());
    let text = std::fs::read_to_string(p.path("notes/retro-sprint-14.md")).unwrap();
    let mut added: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("- client "))
        .collect();
    let mut want: Vec<&str> = accepted.iter().map(|l| l.trim_end()).collect();
    added.sort();
    want.sort();
    assert_eq!(added, want, "{refused} refused");
}
