//! End-to-end benchmark of orchestra against a raw SQLite baseline on the same bytes.
//!
//! ```text
//! cargo build --release
//! cargo bench --bench orchestra -- --docs 100000 [--docs 1000,10000] [--json FILE] [--1m]
//! ```
//!
//! For each size N it generates a deterministic synthetic backlog of N Markdown
//! files (features, notes, nested docs, ~2 KB each, YAML frontmatter on 90%,
//! a few non-ASCII ids) in a temporary folder, then measures, on those files:
//!
//! * raw: a child process (this binary, `--raw-insert`) that walks the folder,
//!   reads every file and inserts it with one reused prepared statement in one
//!   transaction into a table shaped like orchestra's `documents` (WAL,
//!   synchronous=NORMAL, page_size 16384, unique index on (prefix, id)); then,
//!   in this process, keyset pages of 100 at the start and at the end, point
//!   reads by (prefix, id), and a full keyset listing in pages of 500.
//! * orchestra: the release binary (`$ORCHESTRA_BIN`, default
//!   `target/release/orchestra`): cold import, re-import with nothing changed,
//!   re-import after 1% of the files changed, each with its peak RSS (from
//!   `wait4`); then `orchestra serve` over a pipe with a small pipelined
//!   JSON-RPC client: full listing, page of 100 at the start and the end
//!   (`--page-size 100`), `resources/read` latency and throughput, server RSS;
//!   then notification latency: a server subscribed (`resources/subscribe`)
//!   to 10 documents, and 30 times: one of them rewritten, `orchestra import`
//!   run as a child process, and the time to `notifications/resources/updated`
//!   for that URI on the client from the import's commit (seen by a bench
//!   thread polling `PRAGMA data_version` every 0.5 ms), from its exit, and
//!   from its start.
//! * HTTP load, at the largest size only: `orchestra serve --http
//!   127.0.0.1:0` and 50 client threads (`--http-clients N`), each on its own
//!   keep-alive connection with a minimal HTTP/1.1 client, sending stateless
//!   2026-07-28 requests: the whole listing, then 1,000 random reads. Errors
//!   (must be 0), requests/s, p50/p99 of pages and reads, server `VmHWM`.
//!
//! Flags: `--docs N` (repeatable, or a comma list; default 1000,10000,100000),
//! `--1m` (adds 1,000,000: ~2.1 GB of files plus two ~2.5–2.8 GB databases;
//! about 9 minutes on 2 cores, 3 of them removing the files), `--json FILE` (the same figures as JSON), `--dir
//! DIR` (where the temporary folders go; default `$TMPDIR`), `--reads N`
//! (sequential reads, default 1000), `--pipelined N` (reads with 64 in flight,
//! default 10000), `--seed N`, `--keep` (keep the backlogs and databases, to
//! profile `orchestra import DIR/project --db DIR/orchestra.db` by hand),
//! `--http-clients N` (default 50), `--no-http` (skip the HTTP load).

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::fs;
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::LazyLock;
use std::time::{Duration, Instant, UNIX_EPOCH};

use crossbeam_channel::Receiver;
use rusqlite::{Connection, params};
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::{Value, json};

const DEFAULT_SIZES: [usize; 3] = [1_000, 10_000, 100_000];
const ONE_MILLION: usize = 1_000_000;
const DEFAULT_SEED: u64 = 0x0DC5_EED5_2025;
/// Requests kept in flight by the throughput test (the server's own limit).
const IN_FLIGHT: usize = 64;
/// Samples per page-cost figure.
const PAGE_SAMPLES: usize = 50;
/// Full listings timed per server (the median is reported).
const LISTING_RUNS: usize = 3;
const PROTOCOL_VERSION: &str = "2025-11-25";
/// Clients of the HTTP load test.
const DEFAULT_HTTP_CLIENTS: usize = 50;

// ---------------------------------------------------------------------------
// Command line

struct Options {
    sizes: Vec<usize>,
    json: Option<PathBuf>,
    dir: Option<PathBuf>,
    reads: usize,
    pipelined: usize,
    seed: u64,
    keep: bool,
    /// Concurrent clients of the HTTP load test (0: skipped).
    http_clients: usize,
}

const USAGE: &str = "usage: cargo bench --bench orchestra -- [--docs N[,N...]]... [--1m] [--json FILE] [--dir DIR] [--reads N] [--pipelined N] [--seed N] [--keep] [--http-clients N | --no-http]

  --docs N     backlog sizes to run (repeatable or comma list; default 1000,10000,100000)
  --1m         also run 1,000,000 documents (~2.1 GB of files + ~5.3 GB of databases, ~9 min)
  --json FILE  also write every figure as JSON
  --dir DIR    parent folder of the temporary backlogs (default: $TMPDIR)
  --reads N    sequential resources/read round trips for p50/p99 (default 1000)
  --pipelined N  resources/read requests sent with 64 in flight (default 10000)
  --seed N     PRNG seed of the synthetic backlog
  --keep       keep each backlog and its databases (for profiling); prints where
  --http-clients N  clients of the HTTP load test, run at the largest size (default 50)
  --no-http    skip the HTTP load test

The orchestra binary is $ORCHESTRA_BIN, else <crate>/target/release/orchestra: run `cargo build --release` first.";

fn parse_args(args: &[String]) -> Result<Options, String> {
    let mut opts = Options {
        sizes: Vec::new(),
        json: None,
        dir: None,
        reads: 1000,
        pipelined: 10_000,
        seed: DEFAULT_SEED,
        keep: false,
        http_clients: DEFAULT_HTTP_CLIENTS,
    };
    let mut million = false;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = |name: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{name} needs a value"))
        };
        let number = |text: &str| {
            text.replace('_', "")
                .parse::<usize>()
                .map_err(|_| format!("not a number: {text}"))
        };
        match arg.as_str() {
            // cargo bench passes --bench to harness = false targets.
            "--bench" => {}
            "--docs" => {
                for part in value("--docs")?.split(',').filter(|p| !p.is_empty()) {
                    let n = number(part.trim())?;
                    if n < 200 {
                        return Err(format!("--docs {n}: use at least 200 documents"));
                    }
                    opts.sizes.push(n);
                }
            }
            "--1m" => million = true,
            "--keep" => opts.keep = true,
            "--json" => opts.json = Some(PathBuf::from(value("--json")?)),
            "--dir" => opts.dir = Some(PathBuf::from(value("--dir")?)),
            "--reads" => opts.reads = number(&value("--reads")?)?.max(10),
            "--pipelined" => opts.pipelined = number(&value("--pipelined")?)?.max(IN_FLIGHT),
            "--seed" => opts.seed = number(&value("--seed")?)? as u64,
            "--http-clients" => opts.http_clients = number(&value("--http-clients")?)?,
            "--no-http" => opts.http_clients = 0,
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    if opts.sizes.is_empty() {
        opts.sizes = DEFAULT_SIZES.to_vec();
    }
    if million {
        opts.sizes.push(ONE_MILLION);
    }
    let unique: BTreeSet<usize> = opts.sizes.iter().copied().collect();
    opts.sizes = unique.into_iter().collect();
    Ok(opts)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--raw-insert") {
        if let Err(e) = raw_insert_child(&args[1..]) {
            eprintln!("raw insert: {e}");
            std::process::exit(1);
        }
        return;
    }
    let opts = match parse_args(&args) {
        Ok(opts) => opts,
        Err(e) => {
            if e.is_empty() {
                println!("{USAGE}");
                return;
            }
            eprintln!("error: {e}\n\n{USAGE}");
            std::process::exit(2);
        }
    };
    if let Err(e) = run(&opts) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

type Res<T> = Result<T, Box<dyn std::error::Error>>;

fn run(opts: &Options) -> Res<()> {
    let bin = orchestra_bin()?;
    let machine = machine();
    println!("# orchestra benchmark\n");
    println!("binary: {}", bin.display());
    println!(
        "machine: {} cores, {}, {} RAM, {}",
        machine["nproc"],
        machine["cpu"].as_str().unwrap_or("?"),
        machine["memory"].as_str().unwrap_or("?"),
        machine["rustc"].as_str().unwrap_or("?")
    );
    println!("commit: {}", machine["commit"].as_str().unwrap_or("?"));
    println!(
        "load average at start: {}",
        machine["loadavg"].as_str().unwrap_or("?")
    );
    println!("sizes: {:?}\n", opts.sizes);

    let mut results = Vec::new();
    for &n in &opts.sizes {
        let (result, backlog) = bench_size(&bin, n, opts)?;
        println!("{}", result.table());
        results.push(result);
        if opts.keep {
            let kept = backlog.tmp.keep();
            eprintln!("[{n} docs] kept {}", kept.display());
        } else {
            // Removing a million files takes minutes: say what is going on.
            eprintln!("[{n} docs] removing the temporary backlog");
            drop(backlog);
        }
    }
    let across = across_sizes(&results);
    println!("{across}");

    if let Some(path) = &opts.json {
        let value = json!({
            "machine": machine,
            "binary": bin.display().to_string(),
            "seed": opts.seed,
            "sizes": results.iter().map(SizeResult::to_json).collect::<Vec<_>>(),
            "page_cost_across_sizes": across_json(&results),
        });
        fs::write(path, serde_json::to_string_pretty(&value)? + "\n")?;
        println!("wrote {}", path.display());
    }
    Ok(())
}

fn orchestra_bin() -> Res<PathBuf> {
    let bin = match std::env::var_os("ORCHESTRA_BIN") {
        Some(path) => PathBuf::from(path),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("target/release/orchestra"),
    };
    if !bin.is_file() {
        return Err(format!(
            "no orchestra binary at {}: run `cargo build --release` first (or set ORCHESTRA_BIN)",
            bin.display()
        )
        .into());
    }
    // A stale binary would measure old code: say so loudly.
    let built = fs::metadata(&bin)?.modified()?;
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    if let Some(newest) = newest_mtime(&src)
        && newest > built
    {
        eprintln!(
            "WARNING: {} is older than the newest file in src/: run `cargo build --release`",
            bin.display()
        );
    }
    Ok(bin)
}

fn newest_mtime(dir: &Path) -> Option<std::time::SystemTime> {
    let mut newest = None;
    for entry in fs::read_dir(dir).ok()?.flatten() {
        let meta = entry.metadata().ok()?;
        let time = if meta.is_dir() {
            newest_mtime(&entry.path())
        } else {
            meta.modified().ok()
        };
        newest = newest.max(time);
    }
    newest
}

fn machine() -> Value {
    let cpuinfo = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map_or("unknown".to_string(), |(_, v)| v.trim().to_string());
    let meminfo = fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let memory = meminfo
        .lines()
        .find(|l| l.starts_with("MemTotal"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<f64>().ok())
        .map_or("unknown".to_string(), |kb| {
            format!("{:.1} GiB", kb / 1024.0 / 1024.0)
        });
    let rustc = Command::new(std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_string()))
        .arg("--version")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    let loadavg = fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ");
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let commit = git(&["rev-parse", "--short", "HEAD"]).map(|head| {
        let dirty = git(&["status", "--porcelain", "--", "src", "migrations"])
            .is_some_and(|s| !s.is_empty());
        if dirty {
            format!("{head} + uncommitted changes in src/")
        } else {
            head
        }
    });
    json!({
        "commit": commit,
        "loadavg": loadavg,
        "nproc": std::thread::available_parallelism().map_or(1, |n| n.get()),
        "cpu": cpu,
        "memory": memory,
        "rustc": rustc,
        "date": humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
    })
}

// ---------------------------------------------------------------------------
// Synthetic backlog

/// splitmix64: small, fast, good enough for synthetic data.
struct Rng(u64);

impl Rng {
    fn new(seed: u64, stream: u64) -> Rng {
        let mut rng = Rng(seed ^ stream.wrapping_mul(0xA24B_AED4_963E_E407));
        rng.next();
        rng
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

/// Body vocabulary, split on spaces (a few non-ASCII words on purpose).
const WORDS: &str = "the backlog feature user should be able to import export search filter notes document server client request response latency cache \
    index page cursor listing resource template migration schema database transaction commit rollback error retry timeout config option default value and \
    or with without when then given a an of in on for is are must may not every team release milestone sprint review design naïve über café déjà-vu façade rôle";
const TAGS: &str =
    "api ui backend frontend perf security docs infra mcp import search ux tech-debt";
const STATUSES: &str = "open in-progress review done blocked";

fn split(text: &'static str) -> Vec<&'static str> {
    text.split_whitespace().collect()
}
static WORD_LIST: LazyLock<Vec<&str>> = LazyLock::new(|| split(WORDS));
static TAG_LIST: LazyLock<Vec<&str>> = LazyLock::new(|| split(TAGS));
static STATUS_LIST: LazyLock<Vec<&str>> = LazyLock::new(|| split(STATUSES));

/// The path (below the backlog root, `/`-separated) of document `i`.
fn doc_path(i: usize, rng: &mut Rng) -> String {
    match i % 10 {
        0..=2 if i % 1000 == 500 => format!("features/FEAT-{i:07}-ü"),
        0..=2 => format!("features/FEAT-{i:07}"),
        3..=5 if i % 1000 == 3 => format!("notes/café-{i}"),
        3..=5 if i % 5000 == 13 => format!("notes/メモ-{i}"),
        3 | 4 => format!("notes/note-{i:07}"),
        5 => format!("notes/team-{}/note-{i:07}", rng.below(8)),
        _ if i % 1000 == 7 => format!("docs/área-{}/résumé-{i}", rng.below(20)),
        _ => format!(
            "docs/area-{:02}/topic-{}/page-{i:07}",
            rng.below(20),
            rng.below(10)
        ),
    }
}

/// Every folder `doc_path` can produce, so generation never has to create one.
fn all_folders() -> Vec<String> {
    let mut dirs = vec!["features".to_string(), "notes".to_string()];
    for t in 0..8 {
        dirs.push(format!("notes/team-{t}"));
    }
    for a in 0..20 {
        dirs.push(format!("docs/área-{a}"));
        for t in 0..10 {
            dirs.push(format!("docs/area-{a:02}/topic-{t}"));
        }
    }
    dirs
}

fn words(rng: &mut Rng, out: &mut String, count: usize) {
    for k in 0..count {
        if k > 0 {
            out.push(' ');
        }
        out.push_str(rng.pick(&WORD_LIST));
    }
}

/// The bytes of document `i`; `variant` > 0 gives the same document rewritten.
fn doc_text(i: usize, variant: u64, seed: u64, rng: &mut Rng, path: &str) -> String {
    let mut body_rng = Rng::new(seed ^ variant.wrapping_mul(0x1234_5678_9ABC_DEF1), i as u64);
    let rng = if variant == 0 { rng } else { &mut body_rng };
    let target = 1500 + rng.below(1000);
    let mut text = String::with_capacity(target + 200);
    let mut title = format!("{} {i}: ", path.split('/').next().unwrap_or("doc"));
    let title_words = 3 + rng.below(5);
    words(rng, &mut title, title_words);
    if variant > 0 {
        write!(title, " (rev {variant})").unwrap();
    }
    if rng.below(10) != 0 {
        text.push_str("---\ntitle: \"");
        text.push_str(&title);
        text.push_str("\"\ndescription: \"");
        let n = 8 + rng.below(12);
        words(rng, &mut text, n);
        text.push_str("\"\nstatus: ");
        text.push_str(rng.pick(&STATUS_LIST));
        text.push_str("\ntags: [");
        for k in 0..1 + rng.below(4) {
            if k > 0 {
                text.push_str(", ");
            }
            text.push_str(rng.pick(&TAG_LIST));
        }
        text.push_str("]\n---\n");
    }
    text.push_str("# ");
    text.push_str(&title);
    text.push_str("\n\n");
    while text.len() < target {
        let n = 20 + rng.below(40);
        words(rng, &mut text, n);
        text.push_str(".\n\n");
    }
    text
}

struct Backlog {
    tmp: tempfile::TempDir,
    root: PathBuf,
    project: PathBuf,
    bytes: u64,
    seconds: f64,
}

/// Writes N documents, on as many threads as there are cores; the bytes
/// depend only on the seed and N.
fn generate(n: usize, seed: u64, parent: Option<&Path>) -> Res<Backlog> {
    let started = Instant::now();
    let tmp = match parent {
        Some(dir) => tempfile::Builder::new()
            .prefix("orchestra-bench-")
            .tempdir_in(dir)?,
        None => tempfile::Builder::new()
            .prefix("orchestra-bench-")
            .tempdir()?,
    };
    let root = tmp.path().to_path_buf();
    let project = root.join("project");
    for dir in all_folders() {
        fs::create_dir_all(project.join(dir))?;
    }
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let bytes = std::thread::scope(|scope| -> Res<u64> {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let project = &project;
                scope.spawn(move || -> std::io::Result<u64> {
                    let mut bytes = 0;
                    for i in (t..n).step_by(threads) {
                        let mut rng = Rng::new(seed, i as u64);
                        let path = doc_path(i, &mut rng);
                        let text = doc_text(i, 0, seed, &mut rng, &path);
                        fs::write(project.join(format!("{path}.md")), &text)?;
                        bytes += text.len() as u64;
                    }
                    Ok(bytes)
                })
            })
            .collect();
        let mut total = 0;
        for handle in handles {
            total += handle.join().map_err(|_| "generator thread panicked")??;
        }
        Ok(total)
    })?;
    Ok(Backlog {
        tmp,
        root,
        project,
        bytes,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// Rewrites the bodies of 1% of the documents (every 100th); returns how many.
fn touch_one_percent(backlog: &Backlog, n: usize, seed: u64) -> Res<usize> {
    let mut changed = 0;
    for i in (37..n).step_by(100) {
        let mut rng = Rng::new(seed, i as u64);
        let path = doc_path(i, &mut rng);
        let text = doc_text(i, 1, seed, &mut rng, &path);
        fs::write(backlog.project.join(format!("{path}.md")), text)?;
        changed += 1;
    }
    Ok(changed)
}

// ---------------------------------------------------------------------------
// Child processes and their peak memory

struct Finished {
    seconds: f64,
    max_rss_kb: u64,
    stdout: String,
}

/// Runs `cmd` to completion; its peak RSS comes from `wait4`.
fn run_measured(mut cmd: Command) -> Res<Finished> {
    let started = Instant::now();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let mut stderr = child.stderr.take().ok_or("no stderr")?;
    let err_thread = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let mut stdout = String::new();
    child
        .stdout
        .take()
        .ok_or("no stdout")?
        .read_to_string(&mut stdout)?;
    let (status, max_rss_kb) = wait4(&child)?;
    let seconds = started.elapsed().as_secs_f64();
    let stderr = err_thread.join().unwrap_or_default();
    if status != 0 {
        return Err(format!("{cmd:?} failed (status {status}):\n{stderr}").into());
    }
    Ok(Finished {
        seconds,
        max_rss_kb,
        stdout,
    })
}

/// Reaps `child` and returns its exit status and peak RSS (KiB).
fn wait4(child: &Child) -> Res<(i32, u64)> {
    let pid = child.id() as libc::pid_t;
    let mut status: libc::c_int = 0;
    // SAFETY: plain syscall on our own child; rusage is a POD out-parameter.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    if r != pid {
        return Err(format!("wait4: {}", std::io::Error::last_os_error()).into());
    }
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -1
    };
    Ok((code, usage.ru_maxrss as u64))
}

/// `VmRSS` and `VmHWM` of a live process, in KiB.
fn proc_rss(pid: u32) -> (u64, u64) {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

// ---------------------------------------------------------------------------
// Raw SQLite baseline

const RAW_SCHEMA: &str = "
CREATE TABLE documents (
    prefix TEXT NOT NULL, id TEXT NOT NULL, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
    hash BLOB NOT NULL, is_text INTEGER NOT NULL, title TEXT NOT NULL, description TEXT,
    frontmatter TEXT, seq INTEGER NOT NULL, body BLOB NOT NULL
);
CREATE UNIQUE INDEX documents_key ON documents (prefix, id);";

const PAGE_SQL: &str = "SELECT prefix, id, title, description, size, mtime_ns FROM documents
     WHERE (prefix, id) > (?1, ?2) ORDER BY prefix, id LIMIT ?3";
const GET_SQL: &str = "SELECT title, description, frontmatter, mtime_ns, is_text, body
     FROM documents WHERE prefix = ?1 AND id = ?2";

/// `--raw-insert DIR DB`: the baseline import, in its own process so that its
/// peak RSS is measured like orchestra's. Reads every file, hashes it (blake3,
/// as any incremental import must) and inserts it: no frontmatter parsing.
fn raw_insert_child(args: &[String]) -> Res<()> {
    let [dir, db] = args else {
        return Err("usage: --raw-insert DIR DB".into());
    };
    let conn = Connection::open(db)?;
    conn.pragma_update(None, "page_size", 16384)?;
    conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get::<_, String>(0))?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.execute_batch(RAW_SCHEMA)?;
    conn.execute_batch("BEGIN IMMEDIATE")?;
    let mut count = 0u64;
    {
        let mut stmt = conn.prepare(
            "INSERT INTO documents
                (prefix, id, size, mtime_ns, hash, is_text, title, description, frontmatter, seq, body)
             VALUES (?1, ?2, ?3, ?4, ?5, 1, ?6, NULL, NULL, 1, ?7)",
        )?;
        for prefix in ["docs", "features", "notes"] {
            let base = Path::new(dir).join(prefix);
            let mut stack = vec![base.clone()];
            while let Some(folder) = stack.pop() {
                for entry in fs::read_dir(&folder)? {
                    let entry = entry?;
                    let path = entry.path();
                    let kind = entry.file_type()?;
                    if kind.is_dir() {
                        stack.push(path);
                        continue;
                    }
                    let Some(rel) = path.strip_prefix(&base)?.to_str() else {
                        continue;
                    };
                    let Some(id) = rel.strip_suffix(".md") else {
                        continue;
                    };
                    let meta = entry.metadata()?;
                    let mtime_ns = meta
                        .modified()?
                        .duration_since(UNIX_EPOCH)?
                        .as_nanos()
                        .min(i64::MAX as u128) as i64;
                    let body = fs::read(&path)?;
                    let hash = blake3::hash(&body);
                    stmt.execute(params![
                        prefix,
                        id,
                        body.len() as i64,
                        mtime_ns,
                        &hash.as_bytes()[..],
                        id,
                        body
                    ])?;
                    count += 1;
                }
            }
        }
    }
    conn.execute_batch("COMMIT")?;
    println!("{count}");
    Ok(())
}

struct RawReads {
    page_start_us: f64,
    page_end_us: f64,
    read_p50_us: f64,
    read_p99_us: f64,
    reads_per_s: f64,
    listing_s: f64,
}

fn raw_reads(db: &Path, n: usize, reads: usize, throughput: usize, seed: u64) -> Res<RawReads> {
    let conn = Connection::open(db)?;
    let keys: Vec<(String, String)> = conn
        .prepare("SELECT prefix, id FROM documents ORDER BY prefix, id")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    if keys.len() != n {
        return Err(format!("raw table holds {} documents, not {n}", keys.len()).into());
    }
    let mut page = conn.prepare(PAGE_SQL)?;
    let mut get = conn.prepare(GET_SQL)?;
    let mut page_of = |prefix: &str, id: &str, limit: usize| -> rusqlite::Result<usize> {
        let mut rows = page.query(params![prefix, id, limit as i64])?;
        let mut count = 0;
        while let Some(r) = rows.next()? {
            // Materialize what the server would.
            let _: (String, String, String, Option<String>, i64, i64) = (
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
            );
            count += 1;
        }
        Ok(count)
    };

    let end = &keys[n - 101];
    let mut start_samples = Vec::new();
    let mut end_samples = Vec::new();
    for _ in 0..PAGE_SAMPLES {
        let t = Instant::now();
        page_of("", "", 100)?;
        start_samples.push(t.elapsed());
        let t = Instant::now();
        let got = page_of(&end.0, &end.1, 100)?;
        end_samples.push(t.elapsed());
        assert_eq!(got, 100);
    }

    let mut listing = Vec::new();
    for _ in 0..LISTING_RUNS {
        let t = Instant::now();
        let (mut prefix, mut id) = (String::new(), String::new());
        let mut total = 0;
        loop {
            let mut rows = page_of(&prefix, &id, 501)?;
            // Same shape as the server: one extra row tells whether more follow.
            let more = rows > 500;
            rows = rows.min(500);
            total += rows;
            if !more {
                break;
            }
            (prefix, id) = keys[total - 1].clone();
        }
        listing.push(t.elapsed());
        assert_eq!(total, n);
    }

    let mut rng = Rng::new(seed, 0xBEEF);
    let mut get_one = |key: &(String, String)| -> rusqlite::Result<usize> {
        get.query_row(params![key.0, key.1], |r| {
            let body: Vec<u8> = r.get(5)?;
            let _: (String, Option<String>, Option<String>, i64, bool) =
                (r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?);
            Ok(body.len())
        })
    };
    let mut latencies = Vec::with_capacity(reads);
    for _ in 0..reads {
        let key = &keys[rng.below(n)];
        let t = Instant::now();
        get_one(key)?;
        latencies.push(t.elapsed());
    }
    let t = Instant::now();
    for _ in 0..throughput {
        get_one(&keys[rng.below(n)])?;
    }
    let reads_per_s = throughput as f64 / t.elapsed().as_secs_f64();
    Ok(RawReads {
        page_start_us: micros(median(&mut start_samples)),
        page_end_us: micros(median(&mut end_samples)),
        read_p50_us: micros(percentile(&mut latencies, 50.0)),
        read_p99_us: micros(percentile(&mut latencies, 99.0)),
        reads_per_s,
        listing_s: median(&mut listing).as_secs_f64(),
    })
}

// ---------------------------------------------------------------------------
// A minimal pipelined JSON-RPC client for `orchestra serve`

struct Server {
    child: Child,
    stdin: BufWriter<ChildStdin>,
    lines: Receiver<(Instant, String)>,
    next_id: u64,
}

#[derive(Deserialize)]
struct Envelope<T> {
    id: Option<u64>,
    result: Option<T>,
    error: Option<Value>,
}

#[derive(Deserialize)]
struct ListResult {
    resources: Vec<ListedResource>,
    #[serde(rename = "nextCursor")]
    next_cursor: Option<String>,
}

#[derive(Deserialize)]
struct ListedResource {
    uri: String,
}

impl Server {
    fn start(bin: &Path, db: &Path, page_size: Option<u32>) -> Res<Server> {
        let mut cmd = Command::new(bin);
        cmd.arg("serve").arg("--db").arg(db);
        if let Some(size) = page_size {
            cmd.arg("--page-size").arg(size.to_string());
        }
        let mut server = Server::spawn(cmd)?;
        let init = server.request_line(
            "initialize",
            &json!({
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "orchestra-bench", "version": "0"},
            }),
        );
        let (_, line) = server.call_line(&init)?;
        let reply: Envelope<Value> = serde_json::from_str(&line)?;
        let version = reply
            .result
            .as_ref()
            .and_then(|r| r.get("protocolVersion"))
            .and_then(Value::as_str);
        if version != Some(PROTOCOL_VERSION) {
            return Err(format!("unexpected initialize reply: {line}").into());
        }
        server
            .stdin
            .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")?;
        server.stdin.flush()?;
        Ok(server)
    }

    /// Any line-oriented child on a pipe (`orchestra serve`, or `cat` for the
    /// round-trip floor), its output lines timestamped by a reader thread.
    fn spawn(mut cmd: Command) -> Res<Server> {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let stdin = BufWriter::with_capacity(64 * 1024, child.stdin.take().ok_or("no stdin")?);
        let (tx, lines) = crossbeam_channel::unbounded();
        std::thread::spawn(move || {
            let mut reader = BufReader::with_capacity(1 << 20, stdout);
            loop {
                let mut line = String::new();
                match reader.read_line(&mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        if tx.send((Instant::now(), line)).is_err() {
                            break;
                        }
                    }
                }
            }
        });
        Ok(Server {
            child,
            stdin,
            lines,
            next_id: 1,
        })
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// A request line with the next id.
    fn request_line(&mut self, method: &str, params: &Value) -> String {
        let id = self.next_id;
        self.next_id += 1;
        format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"{method}\",\"params\":{params}}}\n")
    }

    fn read_line(&mut self, uri: &str) -> String {
        let uri = serde_json::to_string(uri).unwrap_or_default();
        let id = self.next_id;
        self.next_id += 1;
        format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"resources/read\",\"params\":{{\"uri\":{uri}}}}}\n"
        )
    }

    fn recv(&self) -> Res<(Instant, String)> {
        self.lines
            .recv_timeout(Duration::from_secs(120))
            .map_err(|_| "the server closed its output or stopped answering".into())
    }

    /// One round trip: the time from the write to the reply line.
    fn call_line(&mut self, line: &str) -> Res<(Duration, String)> {
        let started = Instant::now();
        self.stdin.write_all(line.as_bytes())?;
        self.stdin.flush()?;
        let (at, reply) = self.recv()?;
        Ok((at - started, reply))
    }

    fn list(&mut self, cursor: Option<&str>) -> Res<(Duration, ListResult)> {
        let params = match cursor {
            Some(cursor) => json!({ "cursor": cursor }),
            None => json!({}),
        };
        let line = self.request_line("resources/list", &params);
        let (took, reply) = self.call_line(&line)?;
        let reply: Envelope<ListResult> = serde_json::from_str(&reply)?;
        match (reply.result, reply.error) {
            (Some(result), None) => Ok((took, result)),
            (_, error) => Err(format!("resources/list failed: {error:?}").into()),
        }
    }

    /// Follows `nextCursor` to the end: the wall time, every URI, and the
    /// cursor that starts each page (`None` for the first).
    fn full_listing(&mut self) -> Res<(Duration, Vec<String>, Vec<Option<String>>)> {
        let started = Instant::now();
        let mut uris = Vec::new();
        let mut cursors = vec![None];
        let mut cursor: Option<String> = None;
        loop {
            let (_, page) = self.list(cursor.as_deref())?;
            uris.extend(page.resources.into_iter().map(|r| r.uri));
            match page.next_cursor {
                Some(next) => {
                    cursors.push(Some(next.clone()));
                    cursor = Some(next);
                }
                None => break,
            }
        }
        Ok((started.elapsed(), uris, cursors))
    }

    fn check_read(reply: &str) -> Res<()> {
        let reply: Envelope<IgnoredAny> = serde_json::from_str(reply)?;
        if reply.error.is_some() || reply.result.is_none() || reply.id.is_none() {
            return Err(format!("resources/read failed: {reply:?}", reply = reply.error).into());
        }
        Ok(())
    }

    /// Sends every line with at most `window` unanswered; returns the wall time.
    fn pipelined(&mut self, lines: &[String], window: usize) -> Res<Duration> {
        let started = Instant::now();
        let mut sent = 0;
        let mut answered = 0;
        while answered < lines.len() {
            while sent < lines.len() && sent - answered < window {
                self.stdin.write_all(lines[sent].as_bytes())?;
                sent += 1;
            }
            self.stdin.flush()?;
            let (_, reply) = self.recv()?;
            Server::check_read(&reply)?;
            answered += 1;
            // Take whatever else already arrived before writing more.
            while let Ok((_, reply)) = self.lines.try_recv() {
                Server::check_read(&reply)?;
                answered += 1;
            }
        }
        Ok(started.elapsed())
    }

    fn stop(mut self) -> Res<()> {
        drop(self.stdin);
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if self.child.try_wait()?.is_some() {
                return Ok(());
            }
            if Instant::now() > deadline {
                self.child.kill()?;
                self.child.wait()?;
                return Err("the server did not exit when its input closed".into());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

struct ServeFigures {
    listing_s: f64,
    listing_runs_s: Vec<f64>,
    pages_500: usize,
    server_rss_kb: u64,
    server_rss_after_reads_kb: u64,
    server_hwm_kb: u64,
    read_p50_us: f64,
    read_p99_us: f64,
    ping_p50_us: f64,
    /// Round trip of a read-sized line through `cat`: the pipe floor.
    echo_p50_us: Option<f64>,
    reads_per_s: f64,
    page_start_us: f64,
    page_end_us: f64,
    page_listing_s: f64,
}

/// p50 round trip of a `len`-byte line through `cat`, or `None` without `cat`.
fn echo_floor(len: usize, samples: usize) -> Res<Option<f64>> {
    let Ok(mut echo) = Server::spawn(Command::new("cat")) else {
        return Ok(None);
    };
    let line = format!("{}\n", "x".repeat(len.saturating_sub(1).max(1)));
    let mut took = Vec::with_capacity(samples);
    for _ in 0..samples + 50 {
        took.push(echo.call_line(&line)?.0);
    }
    echo.stop()?;
    Ok(Some(micros(median(&mut took[50..]))))
}

fn serve_figures(bin: &Path, db: &Path, n: usize, opts: &Options) -> Res<ServeFigures> {
    // Default page size: full listing, reads, memory.
    let mut server = Server::start(bin, db, None)?;
    let mut runs = Vec::new();
    let mut uris = Vec::new();
    let mut pages_500 = 0;
    for _ in 0..LISTING_RUNS {
        let (took, listed, cursors) = server.full_listing()?;
        if listed.len() != n {
            return Err(format!("the listing has {} resources, not {n}", listed.len()).into());
        }
        runs.push(took);
        uris = listed;
        pages_500 = cursors.len();
    }
    let (server_rss_kb, _) = proc_rss(server.pid());
    let listing_runs_s: Vec<f64> = runs.iter().map(Duration::as_secs_f64).collect();

    let mut rng = Rng::new(opts.seed, 0xFEED);
    // Warm-up, then sequential round trips.
    for _ in 0..50 {
        let line = server.read_line(&uris[rng.below(n)]);
        let (_, reply) = server.call_line(&line)?;
        Server::check_read(&reply)?;
    }
    let mut reply_len = 0;
    let mut pings = Vec::with_capacity(opts.reads);
    for _ in 0..opts.reads {
        let line = server.request_line("ping", &json!({}));
        let (took, reply) = server.call_line(&line)?;
        Server::check_read(&reply)?;
        pings.push(took);
    }
    let mut latencies = Vec::with_capacity(opts.reads);
    for _ in 0..opts.reads {
        let line = server.read_line(&uris[rng.below(n)]);
        let (took, reply) = server.call_line(&line)?;
        Server::check_read(&reply)?;
        latencies.push(took);
        reply_len += reply.len();
    }
    let echo_p50_us = echo_floor(reply_len / opts.reads, opts.reads)?;
    let lines: Vec<String> = (0..opts.pipelined)
        .map(|_| {
            let uri = &uris[rng.below(n)];
            server.read_line(uri)
        })
        .collect();
    let took = server.pipelined(&lines, IN_FLIGHT)?;
    let reads_per_s = opts.pipelined as f64 / took.as_secs_f64();
    let (server_rss_after_reads_kb, server_hwm_kb) = proc_rss(server.pid());
    server.stop()?;

    // Page of 100 at the start and at the end.
    let mut server = Server::start(bin, db, Some(100))?;
    let (page_listing, listed, cursors) = server.full_listing()?;
    if listed.len() != n {
        return Err(format!("the listing has {} resources, not {n}", listed.len()).into());
    }
    // The last page that is full: the last one when N is a multiple of 100.
    let end_cursor = if n.is_multiple_of(100) {
        cursors[cursors.len() - 1].clone()
    } else {
        cursors[cursors.len() - 2].clone()
    };
    let mut start_samples = Vec::new();
    let mut end_samples = Vec::new();
    for _ in 0..PAGE_SAMPLES {
        let (took, page) = server.list(None)?;
        assert_eq!(page.resources.len(), 100);
        start_samples.push(took);
        let (took, page) = server.list(end_cursor.as_deref())?;
        assert_eq!(page.resources.len(), 100);
        end_samples.push(took);
    }
    server.stop()?;

    Ok(ServeFigures {
        listing_s: median(&mut runs).as_secs_f64(),
        listing_runs_s,
        pages_500,
        server_rss_kb,
        server_rss_after_reads_kb,
        server_hwm_kb,
        read_p50_us: micros(percentile(&mut latencies, 50.0)),
        read_p99_us: micros(percentile(&mut latencies, 99.0)),
        ping_p50_us: micros(median(&mut pings)),
        echo_p50_us,
        reads_per_s,
        page_start_us: micros(median(&mut start_samples)),
        page_end_us: micros(median(&mut end_samples)),
        page_listing_s: page_listing.as_secs_f64(),
    })
}

// ---------------------------------------------------------------------------
// Notification latency: another process's import → `notifications/resources/updated`

/// Documents subscribed to by the notification test.
const SUBSCRIBED: usize = 10;
/// Imports (each rewriting one subscribed file) timed by the notification test.
const NOTIFY_TRIALS: usize = 30;

struct NotifyFigures {
    /// From the import's commit (seen by the bench's own connection, which
    /// polls `PRAGMA data_version` every 0.5 ms) to the notification line.
    from_commit_ms: Vec<f64>,
    /// From the import process's exit (reaped by `wait4`) to the notification
    /// line on the client; negative when the server noticed the commit
    /// before the process had exited.
    from_exit_ms: Vec<f64>,
    /// From just before the import process was spawned to the notification.
    from_start_ms: Vec<f64>,
    /// The import's own duration, as it reports it (`--json` `seconds`).
    import_reported_ms: Vec<f64>,
}

/// `later - earlier` in milliseconds, negative when `later` is earlier.
fn signed_ms(later: Instant, earlier: Instant) -> f64 {
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

/// Nearest-rank percentile of milliseconds.
fn percentile_ms(samples: &[f64], p: f64) -> f64 {
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Subscribes (handshake era) to `SUBSCRIBED` documents, then `NOTIFY_TRIALS`
/// times: rewrites one of them, runs `orchestra import` as a child process,
/// and times the arrival of `notifications/resources/updated` for its URI.
fn notify_figures(
    bin: &Path,
    backlog: &Backlog,
    db: &Path,
    n: usize,
    seed: u64,
) -> Res<NotifyFigures> {
    // Documents spread over the backlog, ASCII paths only (their URI is the
    // path as it is, no percent-encoding to get right).
    let mut docs: Vec<(usize, String)> = Vec::new();
    for k in 0..SUBSCRIBED {
        let mut i = k * (n / SUBSCRIBED) + 11;
        loop {
            let path = doc_path(i, &mut Rng::new(seed, i as u64));
            if path.is_ascii() {
                docs.push((i, path));
                break;
            }
            i += 1;
        }
    }
    let mut server = Server::start(bin, db, None)?;
    for (_, path) in &docs {
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
        let text = doc_text(*i, 1000 + trial as u64, seed, &mut rng, path);
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

// ---------------------------------------------------------------------------
// HTTP load: many clients, each on its own keep-alive connection

/// `params._meta` of a stateless 2026-07-28 request: no session needed.
const STATELESS_META: &str = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;
/// `resources/read` requests each HTTP client sends after its listing.
const HTTP_READS: usize = 1000;
/// Error messages kept (the count is exact).
const ERRORS_KEPT: usize = 5;

/// `orchestra serve --http 127.0.0.1:0`, its port read from its stderr.
struct HttpServer {
    child: Child,
    port: u16,
}

impl HttpServer {
    fn start(bin: &Path, db: &Path) -> Res<HttpServer> {
        let mut child = Command::new(bin)
            .arg("serve")
            .arg("--db")
            .arg(db)
            .arg("--http")
            .arg("127.0.0.1:0")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()?;
        let stderr = child.stderr.take().ok_or("no stderr")?;
        let (tx, rx) = crossbeam_channel::bounded(1);
        // Reads the port from `orchestra: serving MCP on http://ADDR/mcp`,
        // then passes anything else the server says on to our stderr.
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                let port = line
                    .split_once("serving MCP on http://")
                    .and_then(|(_, rest)| rest.split('/').next())
                    .and_then(|addr| addr.rsplit(':').next())
                    .and_then(|port| port.parse::<u16>().ok());
                match port {
                    Some(port) => {
                        let _ = tx.try_send(port);
                    }
                    None => eprintln!("[orchestra serve --http] {line}"),
                }
            }
        });
        match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(port) => Ok(HttpServer { child, port }),
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                Err("orchestra serve --http did not print its address within 30 s".into())
            }
        }
    }

    /// SIGTERM, then waits (the server lets requests finish).
    fn stop(mut self) -> Res<()> {
        // SAFETY: a signal to our own child, not yet reaped.
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if self.child.try_wait()?.is_some() {
                return Ok(());
            }
            if Instant::now() > deadline {
                self.child.kill()?;
                self.child.wait()?;
                return Err("the HTTP server did not exit on SIGTERM".into());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// A minimal HTTP/1.1 client: one keep-alive connection, `POST /mcp` with
/// a JSON body, responses with `Content-Length` only.
struct HttpClient {
    reader: BufReader<std::net::TcpStream>,
    writer: std::net::TcpStream,
    port: u16,
    request: Vec<u8>,
    line: String,
    /// The server said `Connection: close`: reconnect before the next request.
    closed: bool,
}

impl HttpClient {
    fn connect(port: u16) -> Res<HttpClient> {
        let stream = std::net::TcpStream::connect(("127.0.0.1", port))?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(Duration::from_secs(120)))?;
        Ok(HttpClient {
            reader: BufReader::with_capacity(256 * 1024, stream.try_clone()?),
            writer: stream,
            port,
            request: Vec::with_capacity(4096),
            line: String::new(),
            closed: false,
        })
    }

    /// One `POST /mcp`: the status and the body.
    fn post(&mut self, body: &str) -> Res<(u16, Vec<u8>)> {
        if self.closed {
            *self = HttpClient::connect(self.port)?;
        }
        self.request.clear();
        write!(
            self.request,
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n",
            self.port,
            body.len()
        )?;
        self.request.extend_from_slice(body.as_bytes());
        self.writer.write_all(&self.request)?;

        self.line.clear();
        if self.reader.read_line(&mut self.line)? == 0 {
            self.closed = true;
            return Err("the server closed the connection".into());
        }
        let status: u16 = self
            .line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| format!("bad status line {:?}", self.line))?;
        let mut length = None;
        loop {
            self.line.clear();
            if self.reader.read_line(&mut self.line)? == 0 {
                self.closed = true;
                return Err("the server closed the connection in the headers".into());
            }
            let header = self.line.trim_end();
            if header.is_empty() {
                break;
            }
            let Some((name, value)) = header.split_once(':') else {
                continue;
            };
            let value = value.trim();
            if name.eq_ignore_ascii_case("content-length") {
                length = Some(value.parse::<usize>()?);
            } else if name.eq_ignore_ascii_case("transfer-encoding") {
                self.closed = true;
                return Err(format!("unsupported Transfer-Encoding: {value}").into());
            } else if name.eq_ignore_ascii_case("connection") && value.eq_ignore_ascii_case("close")
            {
                self.closed = true;
            }
        }
        let length = length.ok_or("a response without Content-Length")?;
        let mut reply = vec![0; length];
        self.reader.read_exact(&mut reply)?;
        Ok((status, reply))
    }
}

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

/// One client: the whole listing (following `nextCursor`), then `reads`
/// random documents from it. Every request is a stateless 2026-07-28 one.
fn http_client(
    port: u16,
    n: usize,
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
    let mut uris = Vec::with_capacity(n);
    let mut cursor: Option<String> = None;
    loop {
        next_id += 1;
        let cursor_param = match &cursor {
            Some(c) => format!("\"cursor\":{},", Value::from(c.as_str())),
            None => String::new(),
        };
        let body = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{next_id},\"method\":\"resources/list\",\"params\":{{{cursor_param}\"_meta\":{STATELESS_META}}}}}"
        );
        let started = Instant::now();
        let answer = client.post(&body);
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
        uris.extend(page.resources.into_iter().map(|r| r.uri));
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    run.listed = uris.len();
    if uris.len() != n {
        run.error(format!("the listing has {} resources, not {n}", uris.len()));
    }
    if uris.is_empty() {
        return run;
    }
    for _ in 0..reads {
        next_id += 1;
        let uri = Value::from(uris[rng.below(uris.len())].as_str());
        let body = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{next_id},\"method\":\"resources/read\",\"params\":{{\"uri\":{uri},\"_meta\":{STATELESS_META}}}}}"
        );
        let started = Instant::now();
        let answer = client.post(&body);
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

struct HttpLoad {
    clients: usize,
    reads_per_client: usize,
    requests: usize,
    list_requests: usize,
    pages_per_client: usize,
    errors: usize,
    messages: Vec<String>,
    wall_s: f64,
    list_p50_us: f64,
    list_p99_us: f64,
    read_p50_us: f64,
    read_p99_us: f64,
    server_hwm_kb: u64,
    server_cpu_s: f64,
    bench_cpu_s: f64,
}

/// User + system CPU seconds of a live process, from `/proc/PID/stat`.
fn proc_cpu_s(pid: u32) -> f64 {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which may contain spaces): state is
    // field 3, utime 14 and stime 15.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or(Vec::new(), |(_, rest)| rest.split_whitespace().collect());
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    (ticks(14 - 3) + ticks(15 - 3)) / hz
}

/// User + system CPU seconds of this process so far (all its threads).
fn self_cpu_s() -> f64 {
    // SAFETY: rusage is a POD out-parameter.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

/// `clients` threads, each on its own keep-alive connection to a fresh
/// `orchestra serve --http`: the whole listing, then `HTTP_READS` reads.
fn http_load(bin: &Path, db: &Path, n: usize, clients: usize, seed: u64) -> Res<HttpLoad> {
    let server = HttpServer::start(bin, db)?;
    let port = server.port;
    let pid = server.child.id();
    let start = std::sync::Barrier::new(clients + 1);
    let (runs, wall, server_cpu_s, bench_cpu_s) = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..clients)
            .map(|c| {
                let start = &start;
                std::thread::Builder::new()
                    .stack_size(256 * 1024)
                    .spawn_scoped(scope, move || {
                        let mut rng = Rng::new(seed, 0x4854_5450 + c as u64);
                        http_client(port, n, HTTP_READS, &mut rng, start)
                    })
            })
            .collect::<std::io::Result<_>>()?;
        let (server_cpu, bench_cpu) = (proc_cpu_s(pid), self_cpu_s());
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
            proc_cpu_s(pid) - server_cpu,
            self_cpu_s() - bench_cpu,
        ))
    })?;
    let (_, server_hwm_kb) = proc_rss(pid);
    server.stop()?;

    let mut list = Vec::new();
    let mut read = Vec::new();
    let mut errors = 0;
    let mut messages = Vec::new();
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
    fn table(&self, docs: usize) -> String {
        let mut out = format!(
            "## HTTP load: {} clients, {} documents\n\n\
             `orchestra serve --http 127.0.0.1:0`; each client on its own keep-alive connection, \
             stateless 2026-07-28 requests: the whole listing (pages of 500, following \
             `nextCursor`), then {} `resources/read` of random documents from it.\n\n",
            self.clients,
            thousands(docs as u64),
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
        row(
            "server peak RSS (VmHWM)".into(),
            fmt_value(self.server_hwm_kb as f64 / 1024.0, "MB"),
            "—",
            "",
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

    fn to_json(&self) -> Value {
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

// ---------------------------------------------------------------------------
// One size

struct Row {
    figure: String,
    unit: &'static str,
    raw: Option<f64>,
    orchestra: Result<f64, &'static str>,
    ratio: String,
    target: String,
    meets: Option<bool>,
    /// Shown after yes/NO, e.g. the compared quantity.
    why: String,
}

struct SizeResult {
    docs: usize,
    bytes: u64,
    generate_s: f64,
    rows: Vec<Row>,
    details: Value,
    page_start_us: f64,
    page_end_us: f64,
    /// The HTTP load test, run at the largest size only.
    http: Option<HttpLoad>,
}

#[derive(Deserialize)]
struct ImportReport {
    new: u64,
    updated: u64,
    unchanged: u64,
    seconds: f64,
}

fn import(bin: &Path, project: &Path, db: &Path) -> Res<(Finished, ImportReport)> {
    let mut cmd = Command::new(bin);
    cmd.arg("import")
        .arg(project)
        .arg("--db")
        .arg(db)
        .arg("--json");
    let finished = run_measured(cmd)?;
    let report: ImportReport = serde_json::from_str(finished.stdout.trim())
        .map_err(|e| format!("cannot parse the import report {:?}: {e}", finished.stdout))?;
    Ok((finished, report))
}

fn bench_size(bin: &Path, n: usize, opts: &Options) -> Res<(SizeResult, Backlog)> {
    let step = |what: &str| eprintln!("[{n} docs] {what}");
    step("generating");
    let backlog = generate(n, opts.seed, opts.dir.as_deref())?;
    eprintln!(
        "[{n} docs] {:.1} MB in {:.1} s",
        backlog.bytes as f64 / 1e6,
        backlog.seconds
    );
    let raw_db = backlog.root.join("raw.db");
    let db = backlog.root.join("orchestra.db");

    // Raw first, then orchestra: both find the files in the page cache
    // (they were just written), so neither pays for the disk.
    step("raw insert");
    let exe = std::env::current_exe()?;
    let mut cmd = Command::new(exe);
    cmd.arg("--raw-insert").arg(&backlog.project).arg(&raw_db);
    let raw = run_measured(cmd)?;
    let raw_count: usize = raw.stdout.trim().parse()?;
    if raw_count != n {
        return Err(format!("raw insert found {raw_count} files, not {n}").into());
    }
    step("raw reads");
    let raw_reads = raw_reads(&raw_db, n, opts.reads, opts.pipelined, opts.seed)?;

    step("orchestra cold import");
    let (cold, cold_report) = import(bin, &backlog.project, &db)?;
    if cold_report.new != n as u64 {
        return Err(format!("cold import: {} new, expected {n}", cold_report.new).into());
    }
    step("orchestra re-import, nothing changed");
    let (same, same_report) = import(bin, &backlog.project, &db)?;
    if same_report.unchanged != n as u64 {
        return Err(format!(
            "unchanged re-import: {} unchanged, expected {n}",
            same_report.unchanged
        )
        .into());
    }
    step("orchestra re-import, 1% changed");
    let changed = touch_one_percent(&backlog, n, opts.seed)?;
    let (delta, delta_report) = import(bin, &backlog.project, &db)?;
    if delta_report.updated != changed as u64 {
        return Err(format!(
            "1% re-import: {} updated, expected {changed}",
            delta_report.updated
        )
        .into());
    }

    step("orchestra serve");
    let serve = serve_figures(bin, &db, n, opts)?;
    step("orchestra serve: notification latency");
    let notify = notify_figures(bin, &backlog, &db, n, opts.seed)?;
    let largest = opts.sizes.iter().max() == Some(&n);
    let http = if largest && opts.http_clients > 0 {
        step(&format!(
            "orchestra serve --http: {} clients",
            opts.http_clients
        ));
        Some(http_load(bin, &db, n, opts.http_clients, opts.seed)?)
    } else {
        None
    };
    let db_bytes = fs::metadata(&db)?.len();
    let raw_db_bytes = fs::metadata(&raw_db)?.len();

    let rate = |s: f64| n as f64 / s;
    let mb = |kb: u64| kb as f64 / 1024.0;
    let ratio = |raw: f64, orch: f64| format!("{:.2}×", orch / raw);
    let mut rows = Vec::new();
    let (raw_rate, cold_rate) = (rate(raw.seconds), rate(cold.seconds));
    rows.push(Row {
        figure: "cold import rate".into(),
        unit: "docs/s",
        raw: Some(raw_rate),
        orchestra: Ok(cold_rate),
        ratio: ratio(raw_rate, cold_rate),
        target: "≥ 0.5× raw".into(),
        meets: Some(cold_rate >= 0.5 * raw_rate),
        why: String::new(),
    });
    rows.push(Row {
        figure: "cold import time".into(),
        unit: "s",
        raw: Some(raw.seconds),
        orchestra: Ok(cold.seconds),
        ratio: ratio(raw.seconds, cold.seconds),
        target: String::new(),
        meets: None,
        why: String::new(),
    });
    let speedup = cold.seconds / same.seconds;
    rows.push(Row {
        figure: "re-import, nothing changed".into(),
        unit: "s",
        raw: None,
        orchestra: Ok(same.seconds),
        ratio: format!("{speedup:.1}× faster than cold"),
        target: "≥ 10× faster than cold".into(),
        meets: Some(speedup >= 10.0),
        why: String::new(),
    });
    rows.push(Row {
        figure: format!("re-import, 1% changed ({changed} files)"),
        unit: "s",
        raw: None,
        orchestra: Ok(delta.seconds),
        ratio: format!("{:.1}× faster than cold", cold.seconds / delta.seconds),
        target: String::new(),
        meets: None,
        why: String::new(),
    });
    for (figure, finished, raw_kb) in [
        ("import peak RSS, cold", &cold, Some(raw.max_rss_kb)),
        ("import peak RSS, unchanged", &same, None),
        ("import peak RSS, 1% changed", &delta, None),
    ] {
        let orch = mb(finished.max_rss_kb);
        rows.push(Row {
            figure: figure.into(),
            unit: "MB",
            raw: raw_kb.map(mb),
            orchestra: Ok(orch),
            ratio: raw_kb.map_or(String::new(), |kb| ratio(mb(kb), orch)),
            target: "< 100 MB".into(),
            meets: Some(orch < 100.0),
            why: String::new(),
        });
    }
    rows.push(Row {
        figure: "page of 100 at the start".into(),
        unit: "µs",
        raw: Some(raw_reads.page_start_us),
        orchestra: Ok(serve.page_start_us),
        ratio: ratio(raw_reads.page_start_us, serve.page_start_us),
        target: String::new(),
        meets: None,
        why: String::new(),
    });
    let end_over_start = serve.page_end_us / serve.page_start_us;
    rows.push(Row {
        figure: "page of 100 at the end".into(),
        unit: "µs",
        raw: Some(raw_reads.page_end_us),
        orchestra: Ok(serve.page_end_us),
        ratio: ratio(raw_reads.page_end_us, serve.page_end_us),
        target: "≤ 1.5× start".into(),
        meets: Some(end_over_start <= 1.5),
        why: format!("{end_over_start:.2}× start"),
    });
    rows.push(Row {
        figure: "resources/read p50".into(),
        unit: "µs",
        raw: Some(raw_reads.read_p50_us),
        orchestra: Ok(serve.read_p50_us),
        ratio: ratio(raw_reads.read_p50_us, serve.read_p50_us),
        target: "< 250 µs".into(),
        meets: Some(serve.read_p50_us < 250.0),
        why: String::new(),
    });
    rows.push(Row {
        figure: "resources/read p99".into(),
        unit: "µs",
        raw: Some(raw_reads.read_p99_us),
        orchestra: Ok(serve.read_p99_us),
        ratio: ratio(raw_reads.read_p99_us, serve.read_p99_us),
        target: String::new(),
        meets: None,
        why: String::new(),
    });
    rows.push(Row {
        figure: "round-trip floor: ping p50 (raw: `cat` echo of a read-sized line)".into(),
        unit: "µs",
        raw: serve.echo_p50_us,
        orchestra: Ok(serve.ping_p50_us),
        ratio: serve
            .echo_p50_us
            .map_or(String::new(), |echo| ratio(echo, serve.ping_p50_us)),
        target: String::new(),
        meets: None,
        why: String::new(),
    });
    rows.push(Row {
        figure: "reads/s, 64 in flight (raw: 1 thread)".into(),
        unit: "reads/s",
        raw: Some(raw_reads.reads_per_s),
        orchestra: Ok(serve.reads_per_s),
        ratio: ratio(raw_reads.reads_per_s, serve.reads_per_s),
        target: String::new(),
        meets: None,
        why: String::new(),
    });
    rows.push(Row {
        figure: format!("full listing ({} pages of 500)", serve.pages_500),
        unit: "s",
        raw: Some(raw_reads.listing_s),
        orchestra: Ok(serve.listing_s),
        ratio: ratio(raw_reads.listing_s, serve.listing_s),
        target: "< 1.5 s at 100k".into(),
        meets: (n == 100_000).then_some(serve.listing_s < 1.5),
        why: String::new(),
    });
    rows.push(Row {
        figure: "server RSS after the listing".into(),
        unit: "MB",
        raw: None,
        orchestra: Ok(mb(serve.server_rss_kb)),
        ratio: String::new(),
        target: "< 60 MB".into(),
        meets: Some(mb(serve.server_rss_kb) < 60.0),
        why: String::new(),
    });
    let commit_p50 = percentile_ms(&notify.from_commit_ms, 50.0);
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
    let early = notify.from_exit_ms.iter().filter(|&&ms| ms < 0.0).count();
    for (figure, samples, p) in [
        (
            "notification p99, import commit → client",
            &notify.from_commit_ms,
            99.0,
        ),
        (
            "notification p50, import exit → client",
            &notify.from_exit_ms,
            50.0,
        ),
        (
            "notification p99, import exit → client",
            &notify.from_exit_ms,
            99.0,
        ),
        (
            "notification p50, import start → client",
            &notify.from_start_ms,
            50.0,
        ),
        (
            "notification p99, import start → client",
            &notify.from_start_ms,
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

    let details = json!({
        "files_bytes": backlog.bytes,
        "generate_s": backlog.seconds,
        "raw_db_bytes": raw_db_bytes,
        "orchestra_db_bytes": db_bytes,
        "import_internal_seconds": {
            "cold": cold_report.seconds,
            "unchanged": same_report.seconds,
            "one_percent": delta_report.seconds,
        },
        "one_percent_changed_files": changed,
        "listing_runs_s": serve.listing_runs_s,
        "listing_page_size_100_s": serve.page_listing_s,
        "server_rss_after_reads_kb": serve.server_rss_after_reads_kb,
        "server_vmhwm_kb": serve.server_hwm_kb,
        "reads_sequential": opts.reads,
        "reads_pipelined": opts.pipelined,
        "notification_from_commit_ms": notify.from_commit_ms,
        "notification_from_exit_ms": notify.from_exit_ms,
        "notification_from_start_ms": notify.from_start_ms,
        "notification_trial_import_reported_ms": notify.import_reported_ms,
    });
    Ok((
        SizeResult {
            docs: n,
            bytes: backlog.bytes,
            generate_s: backlog.seconds,
            rows,
            details,
            page_start_us: serve.page_start_us,
            page_end_us: serve.page_end_us,
            http,
        },
        backlog,
    ))
}

// ---------------------------------------------------------------------------
// Output

fn fmt_value(v: f64, unit: &str) -> String {
    match unit {
        "docs/s" | "reads/s" => format!("{}/s", thousands(v.round() as u64)),
        "s" if v < 0.1 => format!("{:.1} ms", v * 1000.0),
        "s" => format!("{v:.2} s"),
        "µs" if v >= 1000.0 => format!("{:.2} ms", v / 1000.0),
        "µs" => format!("{v:.0} µs"),
        "MB" => format!("{v:.1} MB"),
        "ms" => format!("{v:.1} ms"),
        _ => format!("{v:.2} {unit}"),
    }
}

fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

impl Row {
    fn meets_text(&self) -> String {
        let verdict = match self.meets {
            Some(true) => "yes",
            Some(false) => "**NO**",
            None if !self.why.is_empty() => return self.why.clone(),
            None => return if self.target.is_empty() { "" } else { "—" }.to_string(),
        };
        if self.why.is_empty() {
            verdict.to_string()
        } else {
            format!("{verdict} ({})", self.why)
        }
    }

    fn to_json(&self) -> Value {
        json!({
            "figure": self.figure,
            "unit": self.unit,
            "raw": self.raw,
            "orchestra": match self.orchestra {
                Ok(v) => json!(v),
                Err(text) => json!(text),
            },
            "ratio": self.ratio,
            "target": self.target,
            "meets": self.meets,
            "note": self.why,
        })
    }
}

impl SizeResult {
    fn table(&self) -> String {
        let mut out = format!(
            "## {} documents ({:.0} MB of Markdown, generated in {:.1} s)\n\n",
            thousands(self.docs as u64),
            self.bytes as f64 / 1e6,
            self.generate_s
        );
        out.push_str("| figure | raw | orchestra | ratio | target | meets? |\n");
        out.push_str("|---|---:|---:|---:|---|---|\n");
        for row in &self.rows {
            let raw = row.raw.map_or("—".to_string(), |v| fmt_value(v, row.unit));
            let orch = match row.orchestra {
                Ok(v) => fmt_value(v, row.unit),
                Err(text) => text.to_string(),
            };
            let ratio = if row.ratio.is_empty() {
                "—"
            } else {
                &row.ratio
            };
            let target = if row.target.is_empty() {
                "—"
            } else {
                &row.target
            };
            writeln!(
                out,
                "| {} | {raw} | {orch} | {ratio} | {target} | {} |",
                row.figure,
                row.meets_text()
            )
            .unwrap();
        }
        if let Some(http) = &self.http {
            out.push('\n');
            out.push_str(&http.table(self.docs));
        }
        out
    }

    fn to_json(&self) -> Value {
        json!({
            "docs": self.docs,
            "rows": self.rows.iter().map(Row::to_json).collect::<Vec<_>>(),
            "details": self.details,
            "http_load": self.http.as_ref().map(HttpLoad::to_json),
        })
    }
}

/// The page-of-100 cost at every size, for the "page at 1M ≤ 1.5× page at
/// 1k" target (the end-of-listing page, the worse of the two, is compared).
fn across_sizes(results: &[SizeResult]) -> String {
    let mut out = String::from("## Page of 100 across sizes\n\n");
    out.push_str(
        "| documents | page at the start | page at the end | end ÷ smallest size's end |\n",
    );
    out.push_str("|---:|---:|---:|---:|\n");
    let base = results.first().map_or(1.0, |r| r.page_end_us);
    for r in results {
        writeln!(
            out,
            "| {} | {:.0} µs | {:.0} µs | {:.2}× |",
            thousands(r.docs as u64),
            r.page_start_us,
            r.page_end_us,
            r.page_end_us / base
        )
        .unwrap();
    }
    let small = results.iter().find(|r| r.docs == 1_000);
    let large = results.iter().find(|r| r.docs == ONE_MILLION);
    match (small, large) {
        (Some(small), Some(large)) => {
            let factor = large.page_end_us / small.page_end_us;
            writeln!(
                out,
                "\nTarget page at 1M ≤ 1.5× page at 1k: {factor:.2}× → {}",
                if factor <= 1.5 {
                    "meets"
                } else {
                    "**NOT MET**"
                }
            )
            .unwrap();
        }
        _ => out.push_str(
            "\nTarget page at 1M ≤ 1.5× page at 1k: not evaluated (run with `--docs 1000 --1m`).\n",
        ),
    }
    out
}

fn across_json(results: &[SizeResult]) -> Value {
    results
        .iter()
        .map(|r| json!({"docs": r.docs, "page_start_us": r.page_start_us, "page_end_us": r.page_end_us}))
        .collect()
}

// ---------------------------------------------------------------------------
// Statistics

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn median(samples: &mut [Duration]) -> Duration {
    percentile(samples, 50.0)
}

/// Nearest-rank percentile.
fn percentile(samples: &mut [Duration], p: f64) -> Duration {
    samples.sort();
    let rank = ((p / 100.0) * samples.len() as f64).ceil() as usize;
    samples[rank.clamp(1, samples.len()) - 1]
}
