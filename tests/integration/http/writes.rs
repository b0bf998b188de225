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
