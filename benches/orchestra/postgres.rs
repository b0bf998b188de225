//! The PostgreSQL store (`--postgres`, on the server the `PG*` variables name): cold import beside a raw binary `COPY` of the same files, pages of 500 through the MCP pipe beside SQLite's, reads beside a raw `SELECT`, notification latency to two servers, and two HTTP servers under 50 clients.
//!
//! Every connection, the bench's and orchestra's, goes without TLS
//! (`sslmode=disable`), so the baseline and orchestra pay the same.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
use postgres::binary_copy::BinaryCopyInWriter;
use postgres::fallible_iterator::FallibleIterator;
use postgres::types::Type;
use postgres::{Client, NoTls};
use serde_json::{Value, json};

use crate::Res;
use crate::backlog::{Backlog, doc_text};
use crate::http_load::{HttpLoad, measure_on};
use crate::import::{ImportReport, import};
use crate::notification::{signed_ms, spread_docs, subscribe};
use crate::process::{Finished, wait4};
use crate::report::{Row, step};
use crate::rng::Rng;
use crate::stats::{micros, percentile_ms};
use crate::stdio_client::Server;
use crate::units::{fmt_value, ratio};

/// Pages of 500 timed on each backend, from random places in the listing.
const PAGE_SAMPLES: usize = 300;
/// Point reads timed through the pipe and by raw `SELECT`.
const READS: usize = 1000;
/// Imports timed, each rewriting one of the documents both servers
/// subscribe to.
const NOTIFY_TRIALS: usize = 30;
/// HTTP servers and clients of the load test.
const HTTP_SERVERS: usize = 2;
const HTTP_CLIENTS: usize = 50;
/// The channel orchestra's import commits NOTIFY on.
const FEED_CHANNEL: &str = "orchestra_feed";

pub struct PgFigures {
    pub raw_copy: Duration,
    pub cold: Finished,
    pub cold_report: ImportReport,
    pub unchanged: Finished,
    pub sqlite_page_us: Vec<f64>,
    pub pg_page_us: Vec<f64>,
    pub raw_read_us: Vec<f64>,
    pub pg_read_us: Vec<f64>,
    /// From the commit (the bench's own LISTEN) to each server's client.
    pub notify_ms: [Vec<f64>; 2],
    pub http: HttpLoad,
    pub database_bytes: i64,
}

/// The server the `PG*` variables name, as pg_virtualenv sets them.
struct PgServer {
    host: String,
    port: u16,
    user: String,
    password: Option<String>,
}

impl PgServer {
    fn from_env() -> Res<PgServer> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        let host = var("PGHOST").ok_or(
            "--postgres needs a PostgreSQL server named by PGHOST (PGPORT, PGUSER, PGPASSWORD): \
             run the bench through `pg_virtualenv -t -v 15`",
        )?;
        if host.starts_with('/') {
            return Err("--postgres needs PGHOST to be a host name, not a socket folder".into());
        }
        Ok(PgServer {
            host,
            port: var("PGPORT").map_or(Ok(5432), |p| p.parse())?,
            user: var("PGUSER").unwrap_or_else(|| "postgres".into()),
            password: var("PGPASSWORD"),
        })
    }

    fn connect(&self, dbname: &str) -> Res<Client> {
        let mut config = postgres::Config::new();
        config
            .host(&self.host)
            .port(self.port)
            .user(&self.user)
            .dbname(dbname);
        if let Some(password) = &self.password {
            config.password(password);
        }
        Ok(config.connect(NoTls)?)
    }

    /// The database `dbname` as orchestra's `--db`.
    fn url(&self, dbname: &str) -> PathBuf {
        let enc = |s: &str| utf8_percent_encode(s, NON_ALPHANUMERIC).to_string();
        let password = self
            .password
            .as_deref()
            .map(|p| format!(":{}", enc(p)))
            .unwrap_or_default();
        PathBuf::from(format!(
            "postgres://{}{password}@{}:{}/{dbname}?sslmode=disable",
            enc(&self.user),
            self.host,
            self.port
        ))
    }

    fn create(&self, dbname: &str) -> Res<()> {
        let mut admin = self.connect("postgres")?;
        // One statement each: CREATE DATABASE runs outside a transaction.
        for sql in [
            format!("DROP DATABASE IF EXISTS {dbname} WITH (FORCE)"),
            format!("CREATE DATABASE {dbname}"),
        ] {
            admin
                .batch_execute(&sql)
                .map_err(|e| format!("{sql}: {e:?}"))?;
        }
        Ok(())
    }

    fn drop_database(&self, dbname: &str) {
        if let Ok(mut admin) = self.connect("postgres") {
            let _ = admin.batch_execute(&format!("DROP DATABASE IF EXISTS {dbname} WITH (FORCE)"));
        }
    }
}

/// Every Markdown file of the project: (prefix, id, path).
fn files(project: &Path) -> Res<Vec<(String, String, PathBuf)>> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
        for entry in fs::read_dir(dir)? {
            let entry = entry?;
            if entry.file_type()?.is_dir() {
                walk(&entry.path(), out)?;
            } else if entry.path().extension().is_some_and(|e| e == "md") {
                out.push(entry.path());
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    for prefix in ["features", "notes", "docs"] {
        let mut paths = Vec::new();
        let root = project.join(prefix);
        if root.is_dir() {
            walk(&root, &mut paths)?;
        }
        for path in paths {
            let id = path
                .strip_prefix(&root)?
                .with_extension("")
                .to_str()
                .ok_or("a path that is not UTF-8")?
                .to_string();
            out.push((prefix.to_string(), id, path));
        }
    }
    Ok(out)
}

/// The raw baseline, as `raw_sqlite`'s: every file read, hashed (blake3,
/// as any incremental import must) and sent by binary `COPY`, in one
/// transaction, into a table shaped like orchestra's `documents` (keys,
/// stats, hash, title, body; no frontmatter parsing, no search, no
/// history) with its primary key.
fn raw_copy(client: &mut Client, project: &Path) -> Res<Duration> {
    client.batch_execute(
        "CREATE TABLE raw_documents (prefix text COLLATE \"C\" NOT NULL,
             id text COLLATE \"C\" NOT NULL, size bigint NOT NULL, mtime_ns bigint NOT NULL,
             hash bytea NOT NULL, is_text boolean NOT NULL, title text NOT NULL,
             description text, frontmatter text, seq bigint NOT NULL, body bytea NOT NULL,
             PRIMARY KEY (prefix, id))",
    )?;
    let started = Instant::now();
    let files = files(project)?;
    let mut tx = client.transaction()?;
    let sink = tx.copy_in(
        "COPY raw_documents (prefix, id, size, mtime_ns, hash, is_text, title, seq, body)
         FROM STDIN BINARY",
    )?;
    let types = [
        Type::TEXT,
        Type::TEXT,
        Type::INT8,
        Type::INT8,
        Type::BYTEA,
        Type::BOOL,
        Type::TEXT,
        Type::INT8,
        Type::BYTEA,
    ];
    let mut writer = BinaryCopyInWriter::new(sink, &types);
    for (prefix, id, path) in &files {
        let mtime_ns = fs::metadata(path)?
            .modified()?
            .duration_since(std::time::UNIX_EPOCH)?
            .as_nanos() as i64;
        let body = fs::read(path)?;
        let hash = blake3::hash(&body);
        writer.write(&[
            prefix,
            id,
            &(body.len() as i64),
            &mtime_ns,
            &&hash.as_bytes()[..],
            &true,
            id,
            &1i64,
            &body,
        ])?;
    }
    writer.finish()?;
    tx.commit()?;
    Ok(started.elapsed())
}

/// Raw point reads of random documents by (prefix, id), prepared once.
fn raw_reads(client: &mut Client, keys: &[(String, String)], rng: &mut Rng) -> Res<Vec<f64>> {
    let statement =
        client.prepare("SELECT body FROM raw_documents WHERE prefix = $1 AND id = $2")?;
    let mut took = Vec::with_capacity(READS);
    for _ in 0..READS + 50 {
        let (prefix, id) = &keys[rng.below(keys.len())];
        let started = Instant::now();
        let row = client.query_one(&statement, &[prefix, id])?;
        let body: &[u8] = row.get(0);
        if body.is_empty() {
            return Err("an empty body".into());
        }
        took.push(micros(started.elapsed()));
    }
    Ok(took.split_off(50))
}

/// Pages of 500 from random cursors of the listing, through the pipe.
fn pages(bin: &Path, db: &Path, n: usize, rng: &mut Rng) -> Res<(Vec<f64>, Vec<String>)> {
    let mut server = Server::start(bin, db, None)?;
    let (_, uris, cursors) = server.full_listing()?;
    if uris.len() != n {
        return Err(format!("the listing has {} resources, not {n}", uris.len()).into());
    }
    let mut took = Vec::with_capacity(PAGE_SAMPLES);
    for i in 0..PAGE_SAMPLES + 20 {
        // Full pages only: not the last.
        let cursor = &cursors[rng.below(cursors.len() - 1)];
        let (t, page) = server.list(cursor.as_deref())?;
        if page.resources.len() != 500 {
            return Err(format!("a page of {}", page.resources.len()).into());
        }
        if i >= 20 {
            took.push(micros(t));
        }
    }
    server.stop()?;
    Ok((took, uris))
}

/// Sequential `resources/read` round trips of random documents.
fn reads(bin: &Path, db: &Path, uris: &[String], rng: &mut Rng) -> Res<Vec<f64>> {
    let mut server = Server::start(bin, db, None)?;
    let mut took = Vec::with_capacity(READS);
    for i in 0..READS + 50 {
        let line = server.read_line(&uris[rng.below(uris.len())]);
        let (t, reply) = server.call_line(&line)?;
        Server::check_read(&reply)?;
        if i >= 50 {
            took.push(micros(t));
        }
    }
    server.stop()?;
    Ok(took)
}

/// Watches the feed channel from before an import starts: the moment its
/// commit's NOTIFY arrives (within about a millisecond), or `None` once
/// `stop` is set without one.
fn commit_watcher(
    server: &PgServer,
    dbname: &str,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> Res<std::thread::JoinHandle<Option<Instant>>> {
    let mut client = server.connect(dbname)?;
    client.batch_execute(&format!("LISTEN {FEED_CHANNEL}"))?;
    Ok(std::thread::spawn(move || {
        loop {
            let stopping = stop.load(std::sync::atomic::Ordering::Relaxed);
            let mut notifications = client.notifications();
            if let Ok(Some(_)) = notifications.timeout_iter(Duration::from_millis(1)).next() {
                return Some(Instant::now());
            }
            if stopping {
                return None;
            }
        }
    }))
}

/// Two servers of the database subscribed to the same documents; each
/// trial rewrites one, imports, and times the notification on both.
fn notifications(
    bin: &Path,
    pg: &PgServer,
    dbname: &str,
    backlog: &Backlog,
    n: usize,
    seed: u64,
) -> Res<[Vec<f64>; 2]> {
    let db = pg.url(dbname);
    let docs = spread_docs(n, seed, 17);
    let mut servers = [
        Server::start(bin, &db, None)?,
        Server::start(bin, &db, None)?,
    ];
    for server in &mut servers {
        subscribe(server, &docs)?;
    }
    let mut jitter = Rng::new(seed, 0x5E11);
    let mut latencies = [Vec::new(), Vec::new()];
    for trial in 0..NOTIFY_TRIALS {
        let (i, path) = &docs[trial % docs.len()];
        let uri = format!("orchestra://{path}");
        let mut rng = Rng::new(seed, *i as u64);
        let text = doc_text(*i, n, 2000 + trial as u64, seed, &mut rng, path);
        fs::write(backlog.project.join(format!("{path}.md")), text)?;
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let watcher = commit_watcher(pg, dbname, stop.clone())?;
        let mut child = Command::new(bin)
            .arg("import")
            .arg(&backlog.project)
            .arg("--db")
            .arg(&db)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()?;
        let (status, _) = wait4(&child)?;
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let committed = watcher
            .join()
            .map_err(|_| "the commit watcher panicked")?
            .ok_or("the bench's LISTEN heard no commit of the import")?;
        if status != 0 {
            let mut err = String::new();
            if let Some(mut stderr) = child.stderr.take() {
                stderr.read_to_string(&mut err)?;
            }
            return Err(format!("a notification trial's import failed ({status}): {err}").into());
        }
        for (server, took) in servers.iter_mut().zip(&mut latencies) {
            let deadline = Instant::now() + Duration::from_secs(10);
            let arrived = loop {
                let left = deadline.saturating_duration_since(Instant::now());
                let (at, line) = server.lines.recv_timeout(left).map_err(|_| {
                    format!("no notifications/resources/updated for {uri} within 10 s")
                })?;
                let message: Value = serde_json::from_str(&line)?;
                if message["method"] == "notifications/resources/updated"
                    && message["params"]["uri"] == uri.as_str()
                {
                    break at;
                }
            };
            took.push(signed_ms(arrived, committed));
        }
        std::thread::sleep(Duration::from_millis(jitter.below(100) as u64));
    }
    for server in servers {
        server.stop()?;
    }
    Ok(latencies)
}

pub fn measure(
    bin: &Path,
    backlog: &Backlog,
    sqlite_db: &Path,
    n: usize,
    seed: u64,
) -> Res<PgFigures> {
    let pg = PgServer::from_env()?;
    let (raw_name, name) = (
        format!("orchestra_bench_raw_{}", std::process::id()),
        format!("orchestra_bench_{}", std::process::id()),
    );
    let result = (|| {
        step(n, "PostgreSQL: raw COPY");
        pg.create(&raw_name)?;
        let mut raw = pg.connect(&raw_name)?;
        let raw_copy = raw_copy(&mut raw, &backlog.project)?;
        let keys: Vec<(String, String)> = raw
            .query("SELECT prefix, id FROM raw_documents", &[])?
            .iter()
            .map(|row| (row.get(0), row.get(1)))
            .collect();
        let raw_read_us = raw_reads(&mut raw, &keys, &mut Rng::new(seed, 0x9A5))?;
        drop(raw);
        pg.drop_database(&raw_name);

        step(n, "PostgreSQL: orchestra cold import");
        pg.create(&name)?;
        let db = pg.url(&name);
        let (cold, cold_report) = import(bin, &backlog.project, &db)?;
        if cold_report.new != n as u64 {
            return Err(format!("the cold import found {} new, not {n}", cold_report.new).into());
        }
        let (unchanged, report) = import(bin, &backlog.project, &db)?;
        if report.unchanged != n as u64 {
            return Err(format!(
                "the re-import found {} unchanged, not {n}",
                report.unchanged
            )
            .into());
        }
        let database_bytes: i64 = pg
            .connect(&name)?
            .query_one("SELECT pg_database_size(current_database())", &[])?
            .get(0);

        step(n, "PostgreSQL: pages of 500 beside SQLite's, reads");
        let (sqlite_page_us, _) = pages(bin, sqlite_db, n, &mut Rng::new(seed, 0xBA6E))?;
        let (pg_page_us, uris) = pages(bin, &db, n, &mut Rng::new(seed, 0xBA6E))?;
        let pg_read_us = reads(bin, &db, &uris, &mut Rng::new(seed, 0x9A5))?;

        step(n, "PostgreSQL: notification to two servers");
        let notify_ms = notifications(bin, &pg, &name, backlog, n, seed)?;

        step(
            n,
            &format!("PostgreSQL: {HTTP_SERVERS} HTTP servers, {HTTP_CLIENTS} clients"),
        );
        let http = measure_on(bin, &db, n, HTTP_CLIENTS, seed, HTTP_SERVERS)?;
        Ok(PgFigures {
            raw_copy,
            cold,
            cold_report,
            unchanged,
            sqlite_page_us,
            pg_page_us,
            raw_read_us,
            pg_read_us,
            notify_ms,
            http,
            database_bytes,
        })
    })();
    pg.drop_database(&raw_name);
    pg.drop_database(&name);
    result
}

/// Nearest-rank percentiles, as every module of the bench takes them.
fn p50(samples: &[f64]) -> f64 {
    percentile_ms(samples, 50.0)
}

fn p99(samples: &[f64]) -> f64 {
    percentile_ms(samples, 99.0)
}

impl PgFigures {
    pub fn rows(&self, n: usize) -> Vec<Row> {
        let raw_rate = n as f64 / self.raw_copy.as_secs_f64();
        let cold_rate = n as f64 / self.cold.seconds;
        let (sqlite_page, pg_page) = (p50(&self.sqlite_page_us), p50(&self.pg_page_us));
        let (raw_read, pg_read) = (p50(&self.raw_read_us), p50(&self.pg_read_us));
        let notify = [p50(&self.notify_ms[0]), p50(&self.notify_ms[1])];
        let slowest = notify[0].max(notify[1]);
        vec![
            Row {
                figure: "PostgreSQL cold import (raw: binary COPY into a table like `documents`)"
                    .into(),
                unit: "docs/s",
                raw: Some(raw_rate),
                orchestra: Ok(cold_rate),
                ratio: ratio(raw_rate, cold_rate),
                target: "≥ 0.5× raw".into(),
                meets: Some(cold_rate >= 0.5 * raw_rate),
                why: format!(
                    "{:.2} s vs {:.2} s, peak RSS {}",
                    self.cold.seconds,
                    self.raw_copy.as_secs_f64(),
                    fmt_value(self.cold.max_rss_kb as f64 / 1024.0, "MB")
                ),
            },
            Row {
                figure: "PostgreSQL re-import, nothing changed".into(),
                unit: "s",
                raw: None,
                orchestra: Ok(self.unchanged.seconds),
                ratio: String::new(),
                target: String::new(),
                meets: None,
                why: format!(
                    "{:.0}% of the cold import",
                    100.0 * self.unchanged.seconds / self.cold.seconds
                ),
            },
            Row {
                figure: "PostgreSQL page of 500 p50 (raw: SQLite's, through the pipe)".into(),
                unit: "µs",
                raw: Some(sqlite_page),
                orchestra: Ok(pg_page),
                ratio: ratio(sqlite_page, pg_page),
                target: "≤ 3× SQLite".into(),
                meets: Some(pg_page <= 3.0 * sqlite_page),
                why: format!("p99 {}", fmt_value(p99(&self.pg_page_us), "µs")),
            },
            Row {
                figure: "PostgreSQL resources/read p50 (raw: SELECT by key)".into(),
                unit: "µs",
                raw: Some(raw_read),
                orchestra: Ok(pg_read),
                ratio: ratio(raw_read, pg_read),
                target: "≤ 1 ms".into(),
                meets: Some(pg_read <= 1000.0),
                why: format!("p99 {}", fmt_value(p99(&self.pg_read_us), "µs")),
            },
            Row {
                figure: "PostgreSQL notification, commit → client of each of 2 servers, p50".into(),
                unit: "ms",
                raw: None,
                orchestra: Ok(slowest),
                ratio: String::new(),
                target: "≤ 100 ms".into(),
                meets: Some(slowest <= 100.0),
                why: format!(
                    "servers {:.1} and {:.1} ms; p99 {:.1} ms",
                    notify[0],
                    notify[1],
                    p99(&self.notify_ms[0]).max(p99(&self.notify_ms[1]))
                ),
            },
            Row {
                figure: format!(
                    "PostgreSQL: {HTTP_SERVERS} HTTP servers, {} clients: errors",
                    self.http.clients
                ),
                unit: "",
                raw: None,
                orchestra: Ok(self.http.errors as f64),
                ratio: String::new(),
                target: "0".into(),
                meets: Some(self.http.errors == 0),
                why: format!(
                    "{} requests, {:.0}/s; list p50 {} p99 {}; read p50 {} p99 {}",
                    self.http.requests,
                    self.http.requests as f64 / self.http.wall_s,
                    fmt_value(self.http.list_p50_us, "µs"),
                    fmt_value(self.http.list_p99_us, "µs"),
                    fmt_value(self.http.read_p50_us, "µs"),
                    fmt_value(self.http.read_p99_us, "µs"),
                ),
            },
        ]
    }

    pub fn to_json(&self) -> Value {
        json!({
            "raw_copy_s": self.raw_copy.as_secs_f64(),
            "cold_import_s": self.cold.seconds,
            "cold_import_internal_s": self.cold_report.seconds,
            "cold_import_peak_rss_kb": self.cold.max_rss_kb,
            "unchanged_import_s": self.unchanged.seconds,
            "sqlite_page_500_p50_us": p50(&self.sqlite_page_us),
            "page_500_p50_us": p50(&self.pg_page_us),
            "page_500_p99_us": p99(&self.pg_page_us),
            "raw_read_p50_us": p50(&self.raw_read_us),
            "read_p50_us": p50(&self.pg_read_us),
            "read_p99_us": p99(&self.pg_read_us),
            "notification_ms": self.notify_ms,
            "http_errors": self.http.errors,
            "http_requests": self.http.requests,
            "http_list_p99_us": self.http.list_p99_us,
            "http_read_p99_us": self.http.read_p99_us,
            "database_bytes": self.database_bytes,
        })
    }
}
