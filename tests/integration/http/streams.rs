//! Notifications over SSE, and shutdown closing the streams.

use std::time::{Duration, Instant};

use serde_json::json;

use super::messages::{edit_and_import, envelope, fixture_project, listen, rpc};
use super::server::HttpServer;
use super::{FEAT_001, NOTIFY_TIMEOUT, SUBSCRIPTION_ID};
use crate::support::{companion_files, wait_exit};

// 4. Notifications over SSE.

#[test]
fn a_session_stream_carries_updates_after_an_import() {
    let p = fixture_project();
    let s = HttpServer::start(&p, &[]);
    let sid = s.initialize();
    let mut stream = s
        .request("GET", "/mcp")
        .session(&sid)
        .header("Accept", "text/event-stream")
        .open();
    let subscribed = s.call(
        Some(&sid),
        &rpc(1, "resources/subscribe", json!({"uri": FEAT_001})),
    );
    assert_eq!(subscribed["result"], json!({}), "{subscribed}");

    edit_and_import(&p, "Edited over HTTP.");
    let updated = stream.wait_for(NOTIFY_TIMEOUT, |m| {
        m["method"] == "notifications/resources/updated"
    });
    assert_eq!(updated["params"]["uri"], FEAT_001, "{updated}");
    assert!(updated.get("id").is_none(), "{updated}");
    let read = s.call(
        Some(&sid),
        &rpc(2, "resources/read", json!({"uri": FEAT_001})),
    );
    let text = read["result"]["contents"][0]["text"].as_str().unwrap();
    assert!(text.ends_with("Edited over HTTP.\n"), "{read}");

    // A new document: list_changed on the same stream.
    p.file("notes/new-note.md", "# New note\n");
    p.import(&[]).assert_success();
    stream.wait_for(NOTIFY_TIMEOUT, |m| {
        m["method"] == "notifications/resources/list_changed"
    });

    // Ending the session ends its stream.
    let deleted = s.request("DELETE", "/mcp").session(&sid).send();
    assert!((200..300).contains(&deleted.status), "{deleted:?}");
    stream.expect_end(NOTIFY_TIMEOUT);
}

#[test]
fn a_listen_is_a_stream_of_its_own_until_the_client_closes_it() {
    let p = fixture_project();
    let s = HttpServer::start(&p, &[]);

    let mut stream = s.post(&listen("listen-1", &[FEAT_001], true)).open();
    let ack = stream.message(NOTIFY_TIMEOUT);
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );
    assert_eq!(ack["params"]["_meta"][SUBSCRIPTION_ID], "listen-1", "{ack}");
    assert_eq!(
        ack["params"]["notifications"],
        json!({"resourceSubscriptions": [FEAT_001], "resourcesListChanged": true}),
        "{ack}"
    );

    edit_and_import(&p, "Edited for a listen.");
    let updated = stream.wait_for(NOTIFY_TIMEOUT, |m| {
        m["method"] == "notifications/resources/updated"
    });
    assert_eq!(updated["params"]["uri"], FEAT_001, "{updated}");
    assert_eq!(
        updated["params"]["_meta"][SUBSCRIPTION_ID], "listen-1",
        "{updated}"
    );

    p.file("notes/new-note.md", "# New note\n");
    p.import(&[]).assert_success();
    let changed = stream.wait_for(NOTIFY_TIMEOUT, |m| {
        m["method"] == "notifications/resources/list_changed"
    });
    assert_eq!(
        changed["params"]["_meta"][SUBSCRIPTION_ID], "listen-1",
        "{changed}"
    );

    // The client hangs up; the next commit finds the stream gone, and the
    // server goes on answering.
    drop(stream);
    edit_and_import(&p, "Edited after the listen closed.");
    std::thread::sleep(Duration::from_millis(500));
    let discover = s.call(None, &rpc(2, "server/discover", envelope(json!({}))));
    assert_eq!(discover["result"]["resultType"], "complete", "{discover}");
    let mut second = s.post(&listen("listen-2", &[FEAT_001], false)).open();
    assert_eq!(
        second.message(NOTIFY_TIMEOUT)["params"]["_meta"][SUBSCRIPTION_ID],
        "listen-2"
    );
    edit_and_import(&p, "Edited for the second listen.");
    let updated = second.wait_for(NOTIFY_TIMEOUT, |m| {
        m["method"] == "notifications/resources/updated"
    });
    assert_eq!(
        updated["params"]["_meta"][SUBSCRIPTION_ID], "listen-2",
        "{updated}"
    );

    // GET without a session: 2026-07-28 clients listen instead.
    let get = s.request("GET", "/mcp").send();
    get.expect(405);
    assert!(
        get.header("allow").is_some_and(|a| a.contains("POST")),
        "{get:?}"
    );
}

#[test]
fn sigterm_closes_the_streams_and_exits_0() {
    let p = fixture_project();
    let mut s = HttpServer::start(&p, &[]);
    let sid = s.initialize();
    let mut session_stream = s.request("GET", "/mcp").session(&sid).open();
    let mut listen_stream = s.post(&listen("listen-1", &[FEAT_001], true)).open();
    listen_stream.message(NOTIFY_TIMEOUT);
    // An idle keep-alive connection, as client libraries keep in a pool.
    let (resp, mut idle) = s.request("GET", "/healthz").keep_alive();
    resp.expect(200);

    let started = Instant::now();
    s.terminate();
    let limit = Duration::from_secs(2);
    session_stream.expect_end(limit);
    listen_stream.expect_end(limit);
    let deadline = started + limit;
    while idle.fill(deadline).expect("the idle connection is closed") {}
    let (_, status) = wait_exit(&mut s.child);
    let took = started.elapsed();
    assert!(status.success(), "{status}; stderr:\n{}", s.stderr());
    assert!(took < limit, "took {took:?}");
    // Every connection closed, the change watcher's last or not.
    assert_eq!(companion_files(&p.db()), Vec::<String>::new());
}
