//! Notification latency: a server subscribed to a few documents, another process's import rewriting one, and the time to `notifications/resources/updated` from the import's commit, exit and start.

use std::fs;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rusqlite::Connection;
use serde_json::{Value, json};

use crate::Res;
use crate::backlog::{Backlog, doc_path, doc_text};
use crate::import::ImportReport;
use crate::process::wait4;
use crate::report::Row;
use crate::rng::Rng;
use crate::stats::percentile_ms;
use crate::stdio_client::{Envelope, Server};

/// Documents subscribed to by the notification test.
const SUBSCRIBED: usize = 10;
/// Imports (each rewriting one subscribed file) timed by the notification test.
const NOTIFY_TRIALS: usize = 30;

pub struct NotifyFigures {
    /// From the import's commit (seen by the bench's own connection, which
    /// polls `PRAGMA data_version` every 0.5 ms) to the notification line.
    pub from_commit_ms: Vec<f64>,
    /// From the import process's exit (reaped by `wait4`) to the notification
    /// line on the client; negative when the server noticed the commit
    /// before the process had exited.
    pub from_exit_ms: Vec<f64>,
    /// From just before the import process was spawned to the notification.
    pub from_start_ms: Vec<f64>,
    /// The import's own duration, as it reports it (`--json` `seconds`).
    pub import_reported_ms: Vec<f64>,
}

/// `later - earlier` in milliseconds, negative when `later` is earlier.
pub fn signed_ms(later: Instant, earlier: Instant) -> f64 {
    match later.checked_duration_since(earlier) {
        Some(d) => d.as_secs_f64() * 1e3,
        None => -(earlier - later).as_secs_f64() * 1e3,
    }
}

/// Watches `db` on a thread of its own, from before the import starts:
/// returns when `project.seq` moved (the import's commit, within ~0.5 ms), or
/// `None` once `stop` is set without a commit.
fn commit_watcher(
    db: &Path,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> Res<std::thread::JoinHandle<Option<Instant>>> {
    let conn = Connection::open(db)?;
    let version = |conn: &Connection| -> rusqlite::Result<i64> {
        conn.pragma_query_value(None, "data_version", |r| r.get(0))
    };
    let seq = |conn: &Connection| -> rusqlite::Result<i64> {
        conn.query_row("SELECT seq FROM project", [], |r| r.get(0))
    };
    let mut seen = version(&conn)?;
    let start_seq = seq(&conn)?;
    Ok(std::thread::spawn(move || {
        loop {
            // Look once more after `stop`: the commit may be that recent.
            let stopping = stop.load(std::sync::atomic::Ordering::Relaxed);
            let now = version(&conn).ok()?;
            if now != seen {
                let at = Instant::now();
                seen = now;
                if seq(&conn).ok()? != start_seq {
                    return Some(at);
                }
            }
            if stopping {
                return None;
            }
            std::thread::sleep(Duration::from_micros(500));
        }
    }))
}

/// `SUBSCRIBED` documents spread over the backlog, from the `first`th of
/// each stretch on: (number, path). ASCII paths only (their URI is the
/// path as it is, no percent-encoding to get right).
pub fn spread_docs(n: usize, seed: u64, first: usize) -> Vec<(usize, String)> {
    let mut docs = Vec::new();
    for k in 0..SUBSCRIBED {
        let mut i = k * (n / SUBSCRIBED) + first;
        loop {
            let path = doc_path(i, &mut Rng::new(seed, i as u64));
            if path.is_ascii() {
                docs.push((i, path));
                break;
            }
            i += 1;
        }
    }
    docs
}

/// `resources/subscribe` to each of `docs` on `server`.
pub fn subscribe(server: &mut Server, docs: &[(usize, String)]) -> Res<()> {
    for (_, path) in docs {
        let line = server.request_line(
            "resources/subscribe",
            &json!({ "uri": format!("orchestra://{path}") }),
        );
        let (_, reply) = server.call_line(&line)?;
        let reply: Envelope<Value> = serde_json::from_str(&reply)?;
        if reply.result != Some(json!({})) {
            return Err(format!("resources/subscribe failed: {:?}", reply.error).into());
        }
    }
    Ok(())
}

/// Subscribes (handshake era) to `SUBSCRIBED` documents, then `NOTIFY_TRIALS`
/// times: rewrites one of them, runs `orchestra import` as a child process,
/// and times the arrival of `notifications/resources/updated` for its URI.
pub fn measure(
    bin: &Path,
    backlog: &Backlog,
    db: &Path,
    n: usize,
    seed: u64,
) -> Res<NotifyFigures> {
    let docs = spread_docs(n, seed, 11);
    let mut server = Server::start(bin, db, None)?;
    subscribe(&mut server, &docs)?;
    let mut jitter = Rng::new(seed, 0x5EED);
    let mut figures = NotifyFigures {
        from_commit_ms: Vec::new(),
        from_exit_ms: Vec::new(),
        from_start_ms: Vec::new(),
        import_reported_ms: Vec::new(),
    };
    for trial in 0..NOTIFY_TRIALS {
        let (i, path) = &docs[trial % docs.len()];
        let uri = format!("orchestra://{path}");
        let mut rng = Rng::new(seed, *i as u64);
        let text = doc_text(*i, n, 1000 + trial as u64, seed, &mut rng, path);
        fs::write(backlog.project.join(format!("{path}.md")), text)?;

        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let watcher = commit_watcher(db, stop.clone())?;
        let started = Instant::now();
        let mut child = Command::new(bin)
            .arg("import")
            .arg(&backlog.project)
            .arg("--db")
            .arg(db)
            .arg("--json")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
        // The report is one short line: it fits in the pipe, so reap first.
        let (status, _) = wait4(&child)?;
        let exited = Instant::now();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let committed = watcher
            .join()
            .map_err(|_| "commit watcher panicked")?
            .ok_or("the bench's connection saw no commit by the import")?;
        let mut out = String::new();
        let mut err = String::new();
        child
            .stdout
            .take()
            .ok_or("no stdout")?
            .read_to_string(&mut out)?;
        child
            .stderr
            .take()
            .ok_or("no stderr")?
            .read_to_string(&mut err)?;
        if status != 0 {
            return Err(format!("notification trial import failed ({status}): {err}").into());
        }
        let report: ImportReport = serde_json::from_str(out.trim())?;
        if report.updated != 1 {
            return Err(format!("trial import updated {}, expected 1", report.updated).into());
        }

        let deadline = Instant::now() + Duration::from_secs(10);
        let arrived = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let (at, line) = server
                .lines
                .recv_timeout(left)
                .map_err(|_| format!("no notifications/resources/updated for {uri} within 10 s"))?;
            let message: Value = serde_json::from_str(&line)?;
            if message["method"] == "notifications/resources/updated"
                && message["params"]["uri"] == uri.as_str()
            {
                break at;
            }
            if message["method"] == "notifications/resources/updated" {
                return Err(format!("unexpected notification: {line}").into());
            }
        };
        figures.from_commit_ms.push(signed_ms(arrived, committed));
        figures.from_exit_ms.push(signed_ms(arrived, exited));
        figures.from_start_ms.push(signed_ms(arrived, started));
        figures.import_reported_ms.push(report.seconds * 1e3);
        // Start the next import at a random phase of the server's poll.
        std::thread::sleep(Duration::from_millis(jitter.below(100) as u64));
    }
    server.stop()?;
    Ok(figures)
}

impl NotifyFigures {
    /// The percentiles of each delay; the target is on the one from the commit.
    pub fn rows(&self) -> Vec<Row> {
        let mut rows = Vec::new();
        let commit_p50 = percentile_ms(&self.from_commit_ms, 50.0);
        rows.push(Row {
            figure: format!(
                "notification p50, import commit → client ({NOTIFY_TRIALS} imports; server polls every 100 ms)"
            ),
            unit: "ms",
            raw: None,
            orchestra: Ok(commit_p50),
            ratio: String::new(),
            target: "< 300 ms".into(),
            meets: Some(commit_p50 < 300.0),
            why: String::new(),
        });
        let early = self.from_exit_ms.iter().filter(|&&ms| ms < 0.0).count();
        for (figure, samples, p) in [
            (
                "notification p99, import commit → client",
                &self.from_commit_ms,
                99.0,
            ),
            (
                "notification p50, import exit → client",
                &self.from_exit_ms,
                50.0,
            ),
            (
                "notification p99, import exit → client",
                &self.from_exit_ms,
                99.0,
            ),
            (
                "notification p50, import start → client",
                &self.from_start_ms,
                50.0,
            ),
            (
                "notification p99, import start → client",
                &self.from_start_ms,
                99.0,
            ),
        ] {
            let exit_p50 = p == 50.0 && figure.contains("exit") && early > 0;
            rows.push(Row {
                figure: figure.into(),
                unit: "ms",
                raw: None,
                orchestra: Ok(percentile_ms(samples, p)),
                ratio: String::new(),
                target: String::new(),
                meets: None,
                why: if exit_p50 {
                    format!("{early} of {NOTIFY_TRIALS} before the exit")
                } else {
                    String::new()
                },
            });
        }
        rows
    }
}
