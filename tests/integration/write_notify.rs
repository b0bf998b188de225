//! Everyone sees a write: a writing server that also watches the folder (`serve --watch`) and a read-only server in another process, both subscribed; after a write's answer both read the new bytes, find its words and its version, and each hears exactly one notification of it (the watcher, alive, does not import the write again).

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::{BIN, Project};

/// The longest a notification may take to arrive (CI machines are loaded).
const HEARD_WITHIN: Duration = Duration::from_secs(10);
/// How long nothing more may arrive after the first notification: longer
/// than the watcher's debounce (150 ms) and its import, and than the feed's
/// poll (100 ms on SQLite, a few seconds' fallback read on PostgreSQL is
/// woken by NOTIFY).
const QUIET_AFTER: Duration = Duration::from_millis(1500);

const FEAT: &str = "orchestra://features/FEAT-001";
const FEAT_TEXT: &str = "---\ntitle: Sync\nstatus: open\n---\n# Sync\n\nThe first text.\n";

/// An `orchestra serve` in the handshake era whose stdout a thread reads,
/// so that the test can wait for a message with a deadline, and keeps the
/// notifications it passes over.
struct Peer {
    name: &'static str,
    child: Child,
    stdin: Option<ChildStdin>,
    /// Each line of stdout, with when it arrived.
    lines: Receiver<(Instant, String)>,
    next_id: u64,
    /// Notifications received and not yet taken, with when they arrived.
    heard: Vec<(Instant, Value)>,
    /// The summary line of each import the server ran (its log at `info`):
    /// at start, and each of its watcher's.
    imports: Arc<Mutex<Vec<(Instant, String)>>>,
}

impl Peer {
    /// `serve --db DB ARGS`, initialized (protocol 2025-11-25) and subscribed
    /// to `subscribe`.
    fn start(name: &'static str, p: &Project, args: &[&str], subscribe: &str) -> Peer {
        let mut child = Command::new(BIN)
            .arg("serve")
            .arg("--db")
            .arg(p.db())
            .args(args)
            .current_dir(p.root())
            .env_remove("ORCHESTRA_DB")
            .env("RUST_LOG", "info")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start orchestra serve");
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let (lines_tx, lines) = channel();
        std::thread::spawn(move || {
            for line in stdout.lines() {
                let Ok(line) = line else { return };
                if lines_tx.send((Instant::now(), line)).is_err() {
                    return;
                }
            }
        });
        let imports = Arc::new(Mutex::new(Vec::new()));
        let stderr = BufReader::new(child.stderr.take().unwrap());
        let summaries = imports.clone();
        std::thread::spawn(move || {
            for line in stderr.lines().map_while(Result::ok) {
                if line.contains(" imported ") && line.contains(" updated, ") {
                    summaries.lock().unwrap().push((Instant::now(), line));
                }
            }
        });
        let mut peer = Peer {
            name,
            stdin: child.stdin.take(),
            child,
            lines,
            next_id: 0,
            heard: Vec::new(),
            imports,
        };
        let init = peer.request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "write-notify", "version": "1"}}),
        );
        assert!(init["result"].is_object(), "{name}: {init}");
        peer.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        let subscribed = peer.request("resources/subscribe", json!({"uri": subscribe}));
        assert_eq!(subscribed["result"], json!({}), "{name}: {subscribed}");
        peer
    }

    /// How many imports the server has logged so far.
    fn import_count(&self) -> usize {
        self.imports.lock().unwrap().len()
    }

    /// The first import logged after the first `seen`: when it was read and
    /// its `(new, updated, removed)`; `None` when none within `within`.
    fn next_import(&self, seen: usize, within: Duration) -> Option<(Instant, (u64, u64, u64))> {
        let deadline = Instant::now() + within;
        loop {
            if let Some((at, line)) = self.imports.lock().unwrap().get(seen) {
                let count = |what: &str| -> u64 {
                    let head = line.split(&format!(" {what},")).next().unwrap();
                    let number = head.rsplit([' ', ',']).next().unwrap();
                    number
                        .parse()
                        .unwrap_or_else(|_| panic!("{what} in {line:?}"))
                };
                return Some((*at, (count("new"), count("updated"), count("removed"))));
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(message.to_string().as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// The next message and when it arrived, or `None` when `deadline`
    /// passed first.
    fn next(&mut self, deadline: Instant) -> Option<(Instant, Value)> {
        let left = deadline.saturating_duration_since(Instant::now());
        match self.lines.recv_timeout(left) {
            Ok((at, line)) => Some((at, serde_json::from_str(&line).unwrap())),
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => {
                panic!("{}: the server closed stdout", self.name)
            }
        }
    }

    /// Sends a request and returns its response; the notifications that
    /// come before it are kept in `heard`.
    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let (at, message) = self
                .next(deadline)
                .unwrap_or_else(|| panic!("{}: no answer to {method} within 60 s", self.name));
            match message.get("id") {
                Some(got) => {
                    assert_eq!(got, &json!(id), "{}: {message}", self.name);
                    return message;
                }
                None => self.heard.push((at, message)),
            }
        }
    }

    /// `tools/call`'s result, which must not be an error.
    fn call(&mut self, tool: &str, arguments: Value) -> Value {
        let response = self.request("tools/call", json!({"name": tool, "arguments": arguments}));
        let result = &response["result"];
        assert!(
            result.is_object() && result["isError"] != true,
            "{}: {tool}: {response}",
            self.name
        );
        result.clone()
    }

    /// The text `resources/read` returns for `uri`.
    fn read(&mut self, uri: &str) -> String {
        let response = self.request("resources/read", json!({"uri": uri}));
        let text = response["result"]["contents"][0]["text"].as_str();
        text.unwrap_or_else(|| panic!("{}: {response}", self.name))
            .to_string()
    }

    /// Every notification of `method` (for `uri`, when given) that arrives
    /// from `since` until `QUIET_AFTER` after the first of them (or after
    /// `settled`, if later); fails when none comes within `HEARD_WITHIN`.
    /// The others are left in `heard`.
    fn hear(
        &mut self,
        since: Instant,
        settled: Option<Instant>,
        method: &str,
        uri: Option<&str>,
    ) -> Vec<Duration> {
        let matches = |message: &Value| {
            message["method"] == method && uri.is_none_or(|uri| message["params"]["uri"] == uri)
        };
        let mut deadline = since + HEARD_WITHIN;
        let mut first: Option<Instant> = None;
        let mut times = Vec::new();
        let mut kept = Vec::new();
        for (at, message) in std::mem::take(&mut self.heard) {
            match matches(&message) {
                true => times.push(at),
                false => kept.push((at, message)),
            }
        }
        loop {
            if first.is_none()
                && let Some(&at) = times.first()
            {
                first = Some(at);
                deadline = at.max(settled.unwrap_or(at)) + QUIET_AFTER;
            }
            let Some((at, message)) = self.next(deadline) else {
                break;
            };
            match matches(&message) {
                true => times.push(at),
                false => kept.push((at, message)),
            }
        }
        self.heard = kept;
        assert!(
            first.is_some(),
            "{}: no {method} {uri:?} within {HEARD_WITHIN:?}",
            self.name
        );
        times.iter().map(|at| at.duration_since(since)).collect()
    }

    /// Closes stdin; the server must exit cleanly.
    fn close(mut self) {
        drop(self.stdin.take());
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                assert!(status.success(), "{}: {status}", self.name);
                return;
            }
            if started.elapsed() > Duration::from_secs(10) {
                let _ = self.child.kill();
                panic!("{}: did not exit within 10 s of stdin's end", self.name);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        // A failed test must not leave a server behind.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The URIs of a `search` tool result's hits.
fn hit_uris(result: &Value) -> Vec<String> {
    result["structuredContent"]["hits"]
        .as_array()
        .unwrap_or_else(|| panic!("{result}"))
        .iter()
        .map(|hit| hit["uri"].as_str().unwrap().to_string())
        .collect()
}

/// `(version, current)` of each entry of a `history` result, newest first.
fn history_of(result: &Value) -> Vec<(u64, bool)> {
    result["structuredContent"]["versions"]
        .as_array()
        .unwrap_or_else(|| panic!("{result}"))
        .iter()
        .map(|v| (v["version"].as_u64().unwrap(), v["current"] == true))
        .collect()
}

/// How long A's watcher may take to run its import after a change: its
/// debounce closes 150 ms after the last event (3 s at most), then it imports.
const WATCHER_WITHIN: Duration = Duration::from_secs(10);

/// Waits for the import A's watcher runs after a change (the `seen`-th
/// logged) and checks what it found: `(new, updated, removed)`. Returns
/// when it was logged: the notifications are counted until well after it.
/// A watcher that ran no import (it may leave its own writes alone) is
/// fine for a write; `None` then.
#[track_caller]
fn watcher_import(a: &Peer, seen: usize, what: &str, want: (u64, u64, u64)) -> Option<Instant> {
    let (at, found) = a.next_import(seen, WATCHER_WITHIN)?;
    assert_eq!(
        found, want,
        "A's watcher, after {what}: (new, updated, removed); a write must not be imported twice"
    );
    Some(at)
}

#[test]
fn a_write_is_seen_by_every_process_and_notified_once_in_each() {
    let started = Instant::now();
    let p = Project::new();
    p.file("features/FEAT-001.md", FEAT_TEXT);
    p.file("notes/other.md", "# Other\n\nUnrelated.\n");
    p.import(&[]).assert_success();
    let dir = p.dir();
    let dir = dir.to_str().unwrap();
    let mut a = Peer::start("A (--watch, writes)", &p, &["--watch", dir], FEAT);
    let mut b = Peer::start("B (--db, reads)", &p, &[], FEAT);
    // A imported the folder before it served: nothing had changed.
    let startup = a.next_import(0, Duration::from_secs(10));
    assert_eq!(startup.map(|(_, counts)| counts), Some((0, 0, 0)));

    // An edit through A, answered after its commit.
    let seen = a.import_count();
    let sent = Instant::now();
    let edited = a.call(
        "edit",
        json!({"uri": FEAT, "ifVersion": 1,
               "edits": [{"append": "A zebrafinch was seen.\n"}]}),
    );
    let answered = sent.elapsed();
    let new_text = format!("{FEAT_TEXT}A zebrafinch was seen.\n");
    assert_eq!(edited["structuredContent"]["version"], 2, "{edited}");
    assert_eq!(
        std::fs::read_to_string(p.path("features/FEAT-001.md")).unwrap(),
        new_text
    );
    // The next request of either process sees the commit: no waiting.
    for peer in [&mut a, &mut b] {
        assert_eq!(peer.read(FEAT), new_text, "{}", peer.name);
        let found = peer.call("search", json!({"query": "zebrafinch"}));
        assert_eq!(hit_uris(&found), [FEAT], "{}: {found}", peer.name);
        let history = peer.call("history", json!({"uri": FEAT}));
        assert_eq!(
            history_of(&history),
            [(2, true), (1, false)],
            "{}: {history}",
            peer.name
        );
    }
    // One `updated` each. A's watcher sees the renamed file: its import
    // finds it as the write stored it, and notifies nothing more.
    let settled = watcher_import(&a, seen, "the edit", (0, 0, 0));
    let mut timings = vec![format!("edit answered in {answered:?}")];
    for peer in [&mut a, &mut b] {
        let times = peer.hear(sent, settled, "notifications/resources/updated", Some(FEAT));
        assert_eq!(
            times.len(),
            1,
            "{}: notifications/resources/updated for {FEAT} at {times:?} after the edit was sent",
            peer.name
        );
        timings.push(format!("{} heard updated after {:?}", peer.name, times[0]));
    }
    if let Some(at) = settled {
        timings.push(format!(
            "A's watcher imported nothing after {:?}",
            at.duration_since(sent)
        ));
    }

    // A create: list_changed, once, in both.
    let seen = a.import_count();
    let sent = Instant::now();
    let made = a.call(
        "create",
        json!({"uri": "orchestra://notes/new-plan", "content": "# New plan\n\nQuokka.\n"}),
    );
    assert_eq!(made["structuredContent"]["version"], 1, "{made}");
    for peer in [&mut a, &mut b] {
        assert_eq!(
            peer.read("orchestra://notes/new-plan"),
            "# New plan\n\nQuokka.\n",
            "{}",
            peer.name
        );
        let found = peer.call("search", json!({"query": "quokka"}));
        assert_eq!(
            hit_uris(&found),
            ["orchestra://notes/new-plan"],
            "{}: {found}",
            peer.name
        );
    }
    let settled = watcher_import(&a, seen, "the create", (0, 0, 0));
    for peer in [&mut a, &mut b] {
        let times = peer.hear(sent, settled, "notifications/resources/list_changed", None);
        assert_eq!(
            times.len(),
            1,
            "{}: notifications/resources/list_changed at {times:?} after the create was sent",
            peer.name
        );
        timings.push(format!(
            "{} heard list_changed after {:?}",
            peer.name, times[0]
        ));
    }

    // A move: list_changed once too.
    let seen = a.import_count();
    let sent = Instant::now();
    a.call(
        "move",
        json!({"uri": "orchestra://notes/new-plan", "to": "orchestra://notes/plans/new-plan"}),
    );
    let settled = watcher_import(&a, seen, "the move", (0, 0, 0));
    for peer in [&mut a, &mut b] {
        let times = peer.hear(sent, settled, "notifications/resources/list_changed", None);
        assert_eq!(
            times.len(),
            1,
            "{}: notifications/resources/list_changed at {times:?} after the move was sent",
            peer.name
        );
    }

    // The control: A's watcher is alive, so its silence above meant
    // something. An editor's save is imported by it and heard once by each.
    let seen = a.import_count();
    let sent = Instant::now();
    let saved = format!("{new_text}An editor's line.\n");
    p.file("features/FEAT-001.md", &saved);
    let imported = a.next_import(seen, WATCHER_WITHIN);
    assert_eq!(
        imported.map(|(_, counts)| counts),
        Some((0, 1, 0)),
        "A's watcher, after an editor's save"
    );
    for peer in [&mut a, &mut b] {
        let times = peer.hear(
            sent,
            imported.map(|(at, _)| at),
            "notifications/resources/updated",
            Some(FEAT),
        );
        assert_eq!(
            times.len(),
            1,
            "{}: notifications/resources/updated for {FEAT} at {times:?} after an editor saved",
            peer.name
        );
        assert_eq!(peer.read(FEAT), saved, "{}", peer.name);
    }

    // Nothing else was said, in either.
    for peer in [&mut a, &mut b] {
        let others: Vec<&Value> = peer.heard.iter().map(|(_, m)| m).collect();
        assert!(
            others.is_empty(),
            "{}: unexpected notifications {others:?}",
            peer.name
        );
    }
    a.close();
    b.close();
    let report = p.import_json(&[]);
    let counts = report.counts();
    assert_eq!(
        (counts.new, counts.updated, counts.removed),
        (0, 0, 0),
        "{report:?}"
    );
    eprintln!(
        "write_notify: {} (test {:?})",
        timings.join("; "),
        started.elapsed()
    );
}
