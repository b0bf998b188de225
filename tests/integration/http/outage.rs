//! `serve --http` on PostgreSQL while PostgreSQL stops and starts again: both eras' requests get `-32603` meanwhile, the JSON endpoints and the viewer 503, the log warnings (never an error), and the server serves again by itself.

use serde_json::json;

use super::messages::{encode, envelope, rpc};
use super::{FEAT_001, HttpServer};
use crate::support::{PrivateCluster, Project};

#[test]
fn an_http_server_on_postgres_answers_through_a_restart_of_postgres() {
    let cluster = PrivateCluster::start();
    let url = cluster.url();
    let p = Project::fixture();
    p.run(&["import", "project", "--db", &url]).assert_success();
    let s = HttpServer::launch_on(&p, std::path::Path::new(&url), "127.0.0.1:0", &[], &[]);
    let session = s.initialize();
    let reads = [
        (
            Some(session.as_str()),
            rpc(1, "resources/read", json!({"uri": FEAT_001})),
        ),
        (
            None,
            rpc(2, "resources/read", envelope(json!({"uri": FEAT_001}))),
        ),
    ];
    let served = |s: &HttpServer| {
        for (session, read) in &reads {
            let answer = s.call(*session, read);
            assert!(
                answer["result"]["contents"][0]["text"].is_string(),
                "{answer}"
            );
        }
    };
    served(&s);

    cluster.ctl("stop", Some("fast"));
    for (session, read) in &reads {
        let asked = std::time::Instant::now();
        let answer = s.call(*session, read);
        assert_eq!(
            answer["error"],
            json!({"code": -32603, "message": "the database is unavailable; try again shortly"}),
            "{answer}"
        );
        assert!(
            asked.elapsed() < std::time::Duration::from_secs(10),
            "no hang"
        );
    }
    // For scripts and people: 503, worth trying again.
    let resource = format!("/resource?uri={}", encode(FEAT_001, b""));
    let answer = s.request("GET", &resource).send();
    answer.expect(503);
    assert_eq!(
        answer.json(),
        json!({"error": "the database is unavailable; try again shortly"})
    );
    s.request("GET", "/search?q=offline").send().expect(503);
    let page = s.request("GET", "/").send();
    page.expect(503);
    assert!(page.text().contains("Database unavailable"), "{page:?}");
    // The server itself is up: only the database is not.
    s.request("GET", "/healthz").send().expect(200);

    cluster.ctl("start", None);
    served(&s);
    s.request("GET", &resource).send().expect(200);
    s.request("GET", "/").send().expect(200);
    // Dropping the server checks that it logged no error: an outage is
    // a warning.
}
