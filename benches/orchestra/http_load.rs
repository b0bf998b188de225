//! HTTP load: many clients, each on its own keep-alive connection to one `orchestra serve --http`, listing everything and then reading at random; and its table.

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use serde::de::IgnoredAny;
use serde_json::{Value, json};

use crate::Res;
use crate::http_client::{HttpClient, HttpServer};
use crate::process::{proc_cpu_s, proc_rss, self_cpu_s};
use crate::rng::Rng;
use crate::stats::{micros, percentile};
use crate::stdio_client::{Envelope, ListResult};
use crate::units::{fmt_value, thousands};

/// `params._meta` of a stateless 2026-07-28 request: no session needed.
const STATELESS_META: &str = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;
/// `resources/read` requests each HTTP client sends after its listing.
const HTTP_READS: usize = 1000;
/// List pages all clients fetch together, at most: each client lists the
/// whole backlog when that fits (50 clients at 100k: 200 pages each), else
/// a stretch of it (200 clients at 1M: 100 pages of the 2,000 each, every
/// client from another place).
const PAGES_BUDGET: usize = 20_000;
/// Where a client's stretch of the listing starts: after nothing, or at a
/// cursor from the bench's own listing.
type Start = Option<String>;
/// Error messages kept (the count is exact).
const ERRORS_KEPT: usize = 5;

/// What one HTTP client saw.
#[derive(Default)]
struct ClientRun {
    list: Vec<Duration>,
    read: Vec<Duration>,
    listed: usize,
    errors: usize,
    messages: Vec<String>,
}

impl ClientRun {
    fn error(&mut self, message: String) {
        self.errors += 1;
        if self.messages.len() < ERRORS_KEPT {
            self.messages.push(message);
        }
    }
}

/// A stateless `resources/list` request, after `cursor` when given.
fn list_body(id: u64, cursor: Option<&str>) -> String {
    let cursor_param = match cursor {
        Some(c) => format!("\"cursor\":{},", Value::from(c)),
        None => String::new(),
    };
    format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"resources/list\",\"params\":{{{cursor_param}\"_meta\":{STATELESS_META}}}}}"
    )
}

/// Resources per list page: the server's default page size.
const PAGE: usize = 500;

/// The whole listing, one page at a time: every URI, and the cursor that
/// fetches each page (`None` for the first).
fn listing(port: u16) -> Res<(Vec<String>, Vec<Start>)> {
    let mut client = HttpClient::connect(port)?;
    let (mut uris, mut cursors): (Vec<String>, Vec<Start>) = (Vec::new(), vec![None]);
    for id in 1u64.. {
        let body = list_body(id, cursors.last().and_then(Option::as_deref));
        let (status, reply) = client.post("resources/list", None, &body)?;
        if status != 200 {
            return Err(format!("resources/list: HTTP {status}").into());
        }
        let page = serde_json::from_slice::<Envelope<ListResult>>(&reply)?
            .result
            .ok_or("resources/list: an error")?;
        if page.resources.len() != PAGE && page.next_cursor.is_some() {
            return Err(format!("a page of {}, not {PAGE}", page.resources.len()).into());
        }
        uris.extend(page.resources.into_iter().map(|r| r.uri));
        match page.next_cursor {
            Some(next) => cursors.push(Some(next)),
            None => break,
        }
    }
    Ok((uris, cursors))
}

/// One client: `pages` pages of the listing from `from` (following
/// `nextCursor`, from the start again at the end), then `reads` random
/// documents of the backlog (`uris`). Every request is a stateless
/// 2026-07-28 one.
fn client(
    port: u16,
    (from, pages): (Start, usize),
    uris: &[String],
    reads: usize,
    rng: &mut Rng,
    start: &std::sync::Barrier,
) -> ClientRun {
    let mut run = ClientRun::default();
    let connected = HttpClient::connect(port);
    // Everybody starts together, connected or not.
    start.wait();
    let mut client = match connected {
        Ok(client) => client,
        Err(e) => {
            run.error(format!("connect: {e}"));
            return run;
        }
    };
    let mut next_id = 0u64;
    let mut cursor = from;
    for _ in 0..pages {
        next_id += 1;
        let body = list_body(next_id, cursor.as_deref());
        let started = Instant::now();
        let answer = client.post("resources/list", None, &body);
        run.list.push(started.elapsed());
        let page = match answer {
            Ok((200, reply)) => match serde_json::from_slice::<Envelope<ListResult>>(&reply) {
                Ok(Envelope {
                    result: Some(page),
                    error: None,
                    ..
                }) => page,
                Ok(reply) => {
                    run.error(format!("resources/list: {:?}", reply.error));
                    break;
                }
                Err(e) => {
                    run.error(format!("resources/list: unreadable reply: {e}"));
                    break;
                }
            },
            Ok((status, reply)) => {
                run.error(format!(
                    "resources/list: HTTP {status}: {}",
                    String::from_utf8_lossy(&reply)
                ));
                break;
            }
            Err(e) => {
                run.error(format!("resources/list: {e}"));
                client.closed = true;
                break;
            }
        };
        run.listed += page.resources.len();
        cursor = page.next_cursor;
    }
    if run.errors > 0 {
        return run;
    }
    for _ in 0..reads {
        next_id += 1;
        let uri_text = uris[rng.below(uris.len())].as_str();
        let uri = Value::from(uri_text);
        let body = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{next_id},\"method\":\"resources/read\",\"params\":{{\"uri\":{uri},\"_meta\":{STATELESS_META}}}}}"
        );
        let started = Instant::now();
        let answer = client.post("resources/read", Some(uri_text), &body);
        run.read.push(started.elapsed());
        match answer {
            Ok((200, reply)) => match serde_json::from_slice::<Envelope<IgnoredAny>>(&reply) {
                Ok(Envelope {
                    result: Some(_),
                    error: None,
                    id: Some(id),
                }) if id == next_id => {}
                Ok(reply) => run.error(format!("resources/read {uri}: {:?}", reply.error)),
                Err(e) => run.error(format!("resources/read {uri}: unreadable reply: {e}")),
            },
            Ok((status, reply)) => run.error(format!(
                "resources/read {uri}: HTTP {status}: {}",
                String::from_utf8_lossy(&reply)
            )),
            Err(e) => {
                run.error(format!("resources/read {uri}: {e}"));
                client.closed = true;
            }
        }
    }
    run
}

pub struct HttpLoad {
    pub clients: usize,
    pub reads_per_client: usize,
    pub requests: usize,
    pub list_requests: usize,
    pub pages_per_client: usize,
    pub errors: usize,
    pub messages: Vec<String>,
    pub wall_s: f64,
    pub list_p50_us: f64,
    pub list_p99_us: f64,
    pub read_p50_us: f64,
    pub read_p99_us: f64,
    pub server_hwm_kb: u64,
    pub server_cpu_s: f64,
    pub bench_cpu_s: f64,
}

/// `clients` threads, each on its own keep-alive connection to a fresh
/// `orchestra serve --http`: their stretch of the listing, then
/// `HTTP_READS` reads.
pub fn measure(bin: &Path, db: &Path, n: usize, clients: usize, seed: u64) -> Res<HttpLoad> {
    measure_on(bin, db, n, clients, seed, 1)
}

/// [`measure`] with `servers` servers of the same database, client `c` on
/// server `c % servers` (a team's instances behind a load balancer).
/// Server CPU is their sum, server memory the largest.
pub fn measure_on(
    bin: &Path,
    db: &Path,
    n: usize,
    clients: usize,
    seed: u64,
    servers: usize,
) -> Res<HttpLoad> {
    let servers: Vec<HttpServer> = (0..servers.max(1))
        .map(|_| HttpServer::start(bin, db))
        .collect::<Res<_>>()?;
    let ports: Vec<u16> = servers.iter().map(|s| s.port).collect();
    let pids: Vec<u32> = servers.iter().map(|s| s.child.id()).collect();
    let servers_cpu = || pids.iter().map(|&pid| proc_cpu_s(pid)).sum::<f64>();
    // One listing first, on a connection of its own: the documents to read
    // and where each client's stretch starts.
    let (uris, cursors) = listing(ports[0])?;
    if uris.len() != n {
        return Err(format!("the listing has {} resources, not {n}", uris.len()).into());
    }
    let total = cursors.len();
    let pages = total.min(PAGES_BUDGET / clients.max(1)).max(1);
    let expected: Vec<usize> = (0..clients)
        .map(|c| {
            let first = c * total / clients.max(1);
            (0..pages)
                .map(|p| {
                    let page = (first + p) % total;
                    if page + 1 == total {
                        n - page * PAGE
                    } else {
                        PAGE
                    }
                })
                .sum()
        })
        .collect();
    let start = std::sync::Barrier::new(clients + 1);
    let (mut runs, wall, server_cpu_s, bench_cpu_s) = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..clients)
            .map(|c| {
                let start = &start;
                std::thread::Builder::new()
                    .stack_size(256 * 1024)
                    .spawn_scoped(scope, {
                        let first = c * total / clients.max(1);
                        let from = cursors[first].clone();
                        let uris = &uris;
                        let port = ports[c % ports.len()];
                        move || {
                            let mut rng = Rng::new(seed, 0x4854_5450 + c as u64);
                            client(port, (from, pages), uris, HTTP_READS, &mut rng, start)
                        }
                    })
            })
            .collect::<std::io::Result<_>>()?;
        let (server_cpu, bench_cpu) = (servers_cpu(), self_cpu_s());
        start.wait();
        let started = Instant::now();
        let mut runs = Vec::with_capacity(clients);
        for handle in handles {
            runs.push(
                handle
                    .join()
                    .map_err(|_| "an HTTP client thread panicked")?,
            );
        }
        let wall = started.elapsed();
        Ok::<_, Box<dyn std::error::Error>>((
            runs,
            wall,
            servers_cpu() - server_cpu,
            self_cpu_s() - bench_cpu,
        ))
    })?;
    let server_hwm_kb = pids.iter().map(|&pid| proc_rss(pid).1).max().unwrap_or(0);
    for server in servers {
        server.stop()?;
    }

    let mut list = Vec::new();
    let mut read = Vec::new();
    let mut errors = 0;
    let mut messages = Vec::new();
    for (run, expected) in runs.iter_mut().zip(&expected) {
        if run.errors == 0 && run.listed != *expected {
            run.error(format!(
                "listed {} resources in {pages} pages, not {expected}",
                run.listed
            ));
        }
    }
    for run in &runs {
        list.extend_from_slice(&run.list);
        read.extend_from_slice(&run.read);
        errors += run.errors;
        messages.extend(
            run.messages
                .iter()
                .take(ERRORS_KEPT - messages.len().min(ERRORS_KEPT))
                .cloned(),
        );
    }
    for message in &messages {
        eprintln!("[{n} docs] HTTP error: {message}");
    }
    let us = |samples: &mut Vec<Duration>, p: f64| {
        if samples.is_empty() {
            0.0
        } else {
            micros(percentile(samples, p))
        }
    };
    Ok(HttpLoad {
        clients,
        reads_per_client: HTTP_READS,
        requests: list.len() + read.len(),
        list_requests: list.len(),
        pages_per_client: runs.iter().map(|r| r.list.len()).max().unwrap_or(0),
        errors,
        messages,
        wall_s: wall.as_secs_f64(),
        list_p50_us: us(&mut list, 50.0),
        list_p99_us: us(&mut list, 99.0),
        read_p50_us: us(&mut read, 50.0),
        read_p99_us: us(&mut read, 99.0),
        server_hwm_kb,
        server_cpu_s,
        bench_cpu_s,
    })
}

impl HttpLoad {
    pub fn table(&self, docs: usize) -> String {
        let mut out = format!(
            "## HTTP load: {} clients, {} documents\n\n\
             `orchestra serve --http 127.0.0.1:0`; each client on its own keep-alive connection, \
             stateless 2026-07-28 requests: {} pages of the listing (pages of 500, following \
             `nextCursor`; the whole listing when {} clients × its pages fit in {} pages, \
             else a stretch of it, each client from its own place), then {} `resources/read` \
             of random documents.\n\n",
            self.clients,
            thousands(docs as u64),
            self.pages_per_client,
            self.clients,
            thousands(PAGES_BUDGET as u64),
            thousands(self.reads_per_client as u64),
        );
        out.push_str("| figure | value | target | meets? |\n|---|---:|---|---|\n");
        let mut row = |figure: String, value: String, target: &str, meets: &str| {
            writeln!(out, "| {figure} | {value} | {target} | {meets} |").unwrap();
        };
        row(
            "errors (JSON-RPC errors, non-200 statuses, failed connections, short listings)".into(),
            thousands(self.errors as u64),
            "no errors",
            if self.errors == 0 { "yes" } else { "**NO**" },
        );
        row(
            format!(
                "requests ({} × ({} list pages + {} reads))",
                self.clients,
                self.pages_per_client,
                thousands(self.reads_per_client as u64)
            ),
            thousands(self.requests as u64),
            "—",
            "",
        );
        row("wall time".into(), fmt_value(self.wall_s, "s"), "—", "");
        row(
            "requests/s".into(),
            format!(
                "{}/s",
                thousands((self.requests as f64 / self.wall_s).round() as u64)
            ),
            "—",
            "",
        );
        row(
            "list page of 500 p50".into(),
            fmt_value(self.list_p50_us, "µs"),
            "—",
            "",
        );
        row(
            "list page of 500 p99".into(),
            fmt_value(self.list_p99_us, "µs"),
            "—",
            "",
        );
        row(
            "resources/read p50".into(),
            fmt_value(self.read_p50_us, "µs"),
            "—",
            "",
        );
        row(
            "resources/read p99".into(),
            fmt_value(self.read_p99_us, "µs"),
            "—",
            "",
        );
        let peak_mb = self.server_hwm_kb as f64 / 1024.0;
        row(
            "server peak RSS (VmHWM)".into(),
            fmt_value(peak_mb, "MB"),
            "< 150 MB",
            if peak_mb < 150.0 { "yes" } else { "**NO**" },
        );
        row(
            "server CPU (user + system)".into(),
            format!(
                "{:.1} s ({:.2} cores)",
                self.server_cpu_s,
                self.server_cpu_s / self.wall_s
            ),
            "—",
            "",
        );
        row(
            "bench clients' CPU (same machine)".into(),
            format!(
                "{:.1} s ({:.2} cores)",
                self.bench_cpu_s,
                self.bench_cpu_s / self.wall_s
            ),
            "—",
            "",
        );
        out
    }

    pub fn to_json(&self) -> Value {
        json!({
            "clients": self.clients,
            "reads_per_client": self.reads_per_client,
            "requests": self.requests,
            "list_requests": self.list_requests,
            "errors": self.errors,
            "error_samples": self.messages,
            "wall_s": self.wall_s,
            "requests_per_s": self.requests as f64 / self.wall_s,
            "list_p50_us": self.list_p50_us,
            "list_p99_us": self.list_p99_us,
            "read_p50_us": self.read_p50_us,
            "read_p99_us": self.read_p99_us,
            "server_vmhwm_kb": self.server_hwm_kb,
            "server_cpu_s": self.server_cpu_s,
            "bench_cpu_s": self.bench_cpu_s,
            "meets_no_errors": self.errors == 0,
        })
    }
}
