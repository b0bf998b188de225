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
//!   `wait4`, through a small launcher: this binary with `--launch-measured`,
//!   so that the bench's own size is not counted); then `orchestra serve`
//!   over a pipe with a small pipelined
//!   JSON-RPC client: full listing, page of 100 at the start and the end
//!   (`--page-size 100`), `resources/read` latency and throughput, server RSS;
//!   the JSON bytes per listed resource of a full listing, beside the same
//!   pages with the icons stripped;
//!   then notification latency: a server subscribed (`resources/subscribe`)
//!   to 10 documents, and 30 times: one of them rewritten, `orchestra import`
//!   run as a child process, and the time to `notifications/resources/updated`
//!   for that URI on the client from the import's commit (seen by a bench
//!   thread polling `PRAGMA data_version` every 0.5 ms), from its exit, and
//!   from its start.
//! * HTTP load, at the largest size only: `orchestra serve --http
//!   127.0.0.1:0` and 50 client threads (`--http-clients N`), each on its own
//!   keep-alive connection with a minimal HTTP/1.1 client, sending stateless
//!   2026-07-28 requests: the whole listing (or, when clients × pages would
//!   pass 20,000 pages, a stretch of it from each client's own place), then
//!   1,000 random reads. Errors
//!   (must be 0), requests/s, p50/p99 of pages and reads, server `VmHWM`.
//! * search (unless `--no-search`): the backlog has planted words (three
//!   rare ones in 1, 5 and 10 documents, one in about half); the raw
//!   baseline builds a plain FTS5 table over its title and body (the cold
//!   import is also shown beside the raw insert plus that build: SQLite's
//!   work in an import that indexes in its own transaction, with the raw
//!   child's reading of the files) and times
//!   the top 20 with snippets (at 1M, the ratio to 100k is shown for the
//!   raw queries too); the server answers 1,000 `search` tool calls
//!   (rare word, the half word, `where status=open` with an empty query,
//!   whose raw analogue is a `json_extract` scan), then its RSS and the
//!   index's share of the database (`dbstat`). Last, with
//!   `$ORCHESTRA_BASELINE_BIN` (an orchestra that keeps no search index:
//!   the same commit with the index writes made no-ops, see BENCHMARKS.md,
//!   or one from before search, e.g. 9be2234), cold and 1%-changed
//!   imports of the same files with and without the index, alternated.
//! * viewer: `orchestra serve --http` and one keep-alive client: 1,000
//!   document pages, list pages (100 documents after a random id) and
//!   `/resource` JSON reads of the same random documents, interleaved; p50
//!   and p99; and the bytes of `viewer.js` plus `viewer.css`.
//! * tools (unless `--no-tools`; issue 34): a 5 MB manual imported beside
//!   the backlog, then over a pipe `read` of one of its sections, its
//!   `outline`, and the first page of `links` to the document that 1,000
//!   others link to; beside SQLite's read of the body, the outline computed
//!   in this process and the backlinks page's SQL. The manual is removed
//!   and imported away afterwards.
//! * check (unless `--no-check`; issue 34): `orchestra check PROJECT --db DB
//!   --json`, median of 3, beside the cold import; skipped with a line
//!   that says so when the binary has no `check`.
//! * credentials (unless `--no-auth`; issue 36): one `serve --http` that
//!   takes the static token, API keys and OAuth JWTs (of an issuer served
//!   in this process); `resources/read` p50 with a key and with a JWT
//!   beside the same reads with the token, interleaved; a rare and a common
//!   search with a features-only grant beside the same with every prefix.
//! * writes (unless `--no-writes`; issue 35), last of all: `orchestra
//!   serve --db DB --project DIR` over a pipe, one-line `edit` calls with
//!   `ifVersion` (200 of one document, then one of each of 200 random
//!   ones), each beside a raw write+fsync+rename+fsync of the folder of the
//!   same bytes in this process; edits/s; a second `orchestra serve`
//!   subscribed to ten documents, and the time from an edit's answer to its
//!   `notifications/resources/updated` (30 edits); the writer's VmHWM;
//!   SQLite's commit of one row and the writer's ping, as bounds.
//! * links import cost, with `$ORCHESTRA_LINKS_BASELINE_BIN` (the same
//!   commit with `links::extract` made a no-op, see BENCHMARKS.md): cold
//!   and 1%-changed imports with and without link extraction, alternated.
//!
//! Flags: `--docs N` (repeatable, or a comma list; default 1000,10000,100000),
//! `--1m` (adds 1,000,000: ~2.1 GB of files plus two ~2.5–2.8 GB databases;
//! about 9 minutes on 2 cores, 3 of them removing the files), `--json FILE` (the same figures as JSON), `--dir
//! DIR` (where the temporary folders go; default `$TMPDIR`), `--reads N`
//! (sequential reads, default 1000), `--pipelined N` (reads with 64 in flight,
//! default 10000), `--seed N`, `--keep` (keep the backlogs and databases, to
//! profile `orchestra import DIR/project --db DIR/orchestra.db` by hand),
//! `--http-clients N` (default 50), `--no-http` (skip the HTTP load),
//! `--no-search` (skip the search measurements and the raw FTS5 table),
//! `--no-tools` (skip `read`, `outline` and `links`), `--no-check` (skip
//! `orchestra check`), `--no-writes` (skip the `edit` tool's figures),
//! `--postgres` (the PostgreSQL store at the largest size, on the server
//! the `PG*` variables name: run through `pg_virtualenv -t -v 15`).
//!
//! # Layout
//!
//! This file holds the flags and the order of the measurements (`run`, then
//! `bench_size` for each size). One module per thing measured:
//!
//! * `backlog`: the synthetic Markdown files; `rng`: the seeded PRNG.
//! * `raw_sqlite`: the raw SQLite baseline (insert child and reads).
//! * `import`: cold, unchanged and 1% imports with their peak RSS.
//! * `serve`: listing, pages, reads, throughput and RSS over a pipe, with
//!   `stdio_client`, the pipelined JSON-RPC client it drives.
//! * `page_bytes`: the JSON bytes of a listed resource, with and without
//!   its icon.
//! * `notification`: import commit → `notifications/resources/updated`.
//! * `http_load`: many HTTP clients at once, with `http_client`.
//! * `search`: the `search` tool over a pipe, beside `raw_sqlite`'s FTS5
//!   table; `search_import`: what the index costs an import.
//! * `history`: document history: every document through 10 versions,
//!   reads and listings beside the same database without history, version
//!   reads, the history's size, a 1% re-import beside a binary from before.
//! * `viewer`: the web viewer's document and list pages over HTTP, beside
//!   the JSON read of the same document, and its assets' size.
//! * `tools`: `read` of a section and `outline` of a 5 MB document,
//!   `links` of a document with 1,000 backlinks, beside their bounds.
//! * `check`: `orchestra check`'s wall time.
//! * `links_import`: what finding links costs an import.
//! * `writes`: the `edit` tool's latency and rate beside raw writes of the
//!   same bytes, a second server's notification, the writer's memory.
//! * `postgres`: the PostgreSQL store (`--postgres`): cold import beside a
//!   raw binary COPY, pages beside SQLite's, reads, notification to two
//!   servers, two HTTP servers under load.
//! * `side_by_side`: after the largest size, its pages and reads beside the
//!   smallest size's, two servers at once in alternated rounds (the "1M
//!   costs what 1k costs" target; kept apart from the machine's drift).
//! * `report`: tables, JSON, progress; `units`: how figures are written;
//!   `stats`: sample counts and percentiles; `process`: `wait4`, RSS, CPU;
//!   `machine`: the binary under test and the machine.
//!
//! To add a measurement: write `NAME.rs` starting with a `//!` line that says
//! what it measures, with a `measure(..) -> Res<Figures>` and a
//! `Figures::rows(..) -> Vec<Row>` (rows keep the table's columns; a figure
//! that is not a table row goes into `details`, or gets its own table like
//! `http_load`); declare it below; call it in `bench_size` where it belongs in
//! the order (it sees the files and databases the earlier steps left) and
//! append its rows; then describe it above and in BENCHMARKS.md.

mod auth;
mod backlog;
mod check;
mod history;
mod http_client;
mod http_load;
mod import;
mod links_import;
mod machine;
mod notification;
mod page_bytes;
mod postgres;
mod process;
mod raw_sqlite;
mod report;
mod rng;
mod search;
mod search_import;
mod serve;
mod side_by_side;
mod stats;
mod stdio_client;
mod tools;
mod units;
mod viewer;
mod writes;

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::backlog::{Backlog, HALF_WORD, RARE_WORDS};
use crate::report::{SizeResult, across_json, across_sizes, step};
use crate::serve::IN_FLIGHT;

const DEFAULT_SIZES: [usize; 3] = [1_000, 10_000, 100_000];
const ONE_MILLION: usize = 1_000_000;
const DEFAULT_SEED: u64 = 0x0DC5_EED5_2025;
/// Clients of the HTTP load test.
const DEFAULT_HTTP_CLIENTS: usize = 50;

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
    /// Measure what document history costs (10 versions of every document).
    history: bool,
    /// Measure search (the raw FTS5 table, the `search` tool, the index's
    /// import cost).
    search: bool,
    /// Measure the PostgreSQL store, on the server the `PG*` variables name.
    postgres: bool,
    /// Measure the `read`, `outline` and `links` tools (issue 34).
    tools: bool,
    /// Time `orchestra check` (issue 34).
    check: bool,
    /// Measure the `edit` tool (issue 35).
    writes: bool,
    /// Measure what credentials cost (issue 36).
    auth: bool,
}

const USAGE: &str = "usage: cargo bench --bench orchestra -- [--docs N[,N...]]... [--1m] [--json FILE] [--dir DIR] [--reads N] [--pipelined N] [--seed N] [--keep] [--http-clients N | --no-http] [--no-search] [--no-tools] [--no-check] [--no-writes] [--no-auth] [--postgres] [--history]

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
  --no-search  skip the search measurements (raw FTS5 table, search tool, index import cost)
  --no-tools   skip the read (a section of a 5 MB document), outline and links tools
  --no-check   skip timing `orchestra check`
  --no-auth    skip what credentials cost (reads with a key and a JWT, searches with a grant)
  --no-writes  skip the edit tool's figures (edits beside raw writes, edits/s, a second server's
               notification, the writer's memory)
  --postgres   measure the PostgreSQL store at the largest size, on the server the PG* variables
               name (run through `pg_virtualenv -t -v 15`): cold import beside a raw binary COPY,
               pages of 500 beside SQLite's, reads, notification to two servers, two HTTP servers
  --history    measure document history: every document through 10 versions (slow: 10 imports
               per binary); $ORCHESTRA_NOHISTORY_BIN, an orchestra from before history (e.g.
               eca5907), adds the 1% re-import beside it

The orchestra binary is $ORCHESTRA_BIN, else <crate>/target/release/orchestra: run `cargo build --release` first.
$ORCHESTRA_BASELINE_BIN, if set, is an orchestra that keeps no search index (the same commit with
the index writes made no-ops, see BENCHMARKS.md, or one from before search, e.g. 9be2234): the
import cost of the search index is measured against it.
$ORCHESTRA_LINKS_BASELINE_BIN, if set, is the same commit with `links::extract` returning
`Vec::new()` at once (see BENCHMARKS.md): the import cost of links is measured against it.";

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
        search: true,
        history: false,
        postgres: false,
        tools: true,
        check: true,
        writes: true,
        auth: true,
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
            "--no-search" => opts.search = false,
            "--no-tools" => opts.tools = false,
            "--no-check" => opts.check = false,
            "--no-writes" => opts.writes = false,
            "--no-auth" => opts.auth = false,
            "--history" => opts.history = true,
            "--postgres" => opts.postgres = true,
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
    if args.first().map(String::as_str) == Some(process::LAUNCH_FLAG) {
        match process::launch(&args[1..]) {
            Ok(status) => std::process::exit(status),
            Err(e) => {
                eprintln!("launcher: {e}");
                std::process::exit(1);
            }
        }
    }
    if args.first().map(String::as_str) == Some(raw_sqlite::CHILD_FLAG) {
        if let Err(e) = raw_sqlite::insert_child(&args[1..]) {
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
    let bin = machine::orchestra_bin()?;
    let baseline = machine::baseline_bin()?;
    let links_baseline = machine::links_baseline_bin()?;
    let machine = machine::machine();
    println!("# orchestra benchmark\n");
    println!("binary: {}", bin.display());
    if opts.search {
        match &baseline {
            Some(path) => println!("baseline binary (without search): {}", path.display()),
            None => println!(
                "baseline binary (without search): unset; set ORCHESTRA_BASELINE_BIN for the import cost of the index"
            ),
        }
    }
    match &links_baseline {
        Some(path) => println!(
            "baseline binary (without link extraction): {}",
            path.display()
        ),
        None => println!(
            "baseline binary (without link extraction): unset; set ORCHESTRA_LINKS_BASELINE_BIN for the import cost of links"
        ),
    }
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
    // The smallest size's database, kept (with its backlog) until the
    // largest size measures its pages and reads beside it.
    let mut smallest: Option<(PathBuf, usize, Option<Backlog>)> = None;
    let mut side = None;
    let largest = opts.sizes.iter().max().copied();
    for &n in &opts.sizes {
        let (result, backlog) = bench_size(
            &bin,
            Baselines {
                search: baseline.as_deref(),
                links: links_baseline.as_deref(),
            },
            n,
            opts,
        )?;
        println!("{}", result.table());
        results.push(result);
        let db = backlog.root.join("orchestra.db");
        if let Some((small_db, small_n, _)) = &smallest
            && Some(n) == largest
        {
            step(n, &format!("pages and reads beside {small_n} documents"));
            side = Some(side_by_side::measure(
                &bin,
                (small_db, *small_n),
                (&db, n),
                opts.seed,
            )?);
        }
        let backlog = if opts.keep {
            let kept = backlog.tmp.keep();
            eprintln!("[{n} docs] kept {}", kept.display());
            None
        } else {
            Some(backlog)
        };
        if smallest.is_none() && opts.sizes.len() > 1 {
            smallest = Some((db, n, backlog));
        } else if let Some(backlog) = backlog {
            // Removing a million files takes minutes: say what is going on.
            eprintln!("[{n} docs] removing the temporary backlog");
            drop(backlog);
        }
    }
    drop(smallest);
    let across = across_sizes(&results, side.as_ref());
    println!("{across}");

    if let Some(path) = &opts.json {
        let value = json!({
            "machine": machine,
            "binary": bin.display().to_string(),
            "baseline_binary": baseline.as_ref().map(|b| b.display().to_string()),
            "links_baseline_binary": links_baseline.as_ref().map(|b| b.display().to_string()),
            "seed": opts.seed,
            "sizes": results.iter().map(SizeResult::to_json).collect::<Vec<_>>(),
            "page_cost_across_sizes": across_json(&results),
            "side_by_side": side.as_ref().map(side_by_side::SideBySide::to_json),
        });
        fs::write(path, serde_json::to_string_pretty(&value)? + "\n")?;
        println!("wrote {}", path.display());
    }
    Ok(())
}

/// The binaries that measure what a feature costs an import: the same
/// commit without the search index's writes, and without link extraction.
#[derive(Clone, Copy)]
struct Baselines<'a> {
    search: Option<&'a Path>,
    links: Option<&'a Path>,
}

/// One size: the backlog, then every measurement on it, in this order.
fn bench_size(
    bin: &Path,
    baselines: Baselines,
    n: usize,
    opts: &Options,
) -> Res<(SizeResult, Backlog)> {
    step(n, "generating");
    let backlog = backlog::generate(n, opts.seed, opts.dir.as_deref())?;
    eprintln!(
        "[{n} docs] {:.1} MB in {:.1} s",
        backlog.bytes as f64 / 1e6,
        backlog.seconds
    );
    let raw_db = backlog.root.join("raw.db");
    let db = backlog.root.join("orchestra.db");

    // Raw first, then orchestra: both find the files in the page cache
    // (they were just written), so neither pays for the disk.
    step(n, "raw insert");
    let raw = raw_sqlite::insert(&backlog.project, &raw_db, n)?;
    step(n, "raw reads");
    let raw_reads = raw_sqlite::reads(&raw_db, n, opts.reads, opts.pipelined, opts.seed)?;
    // Before the FTS5 table is added to it.
    let raw_db_bytes = fs::metadata(&raw_db)?.len();
    let raw_search = if opts.search {
        step(n, "raw FTS5 table and searches");
        Some(raw_sqlite::search(&raw_db, &RARE_WORDS, HALF_WORD)?)
    } else {
        None
    };
    let imports = import::measure(bin, &backlog, &db, n, opts.seed)?;

    step(n, "orchestra serve");
    let serve = serve::measure(bin, &db, n, opts)?;
    step(n, "orchestra serve: bytes per listed resource");
    let listed = page_bytes::measure(bin, &db, n)?;
    let searched = match &raw_search {
        Some(raw) => {
            step(n, "raw frontmatter scan");
            let (raw_filter_us, filter_hits) = raw_sqlite::filter_scan(&db, search::STATUS)?;
            step(n, "orchestra serve: search");
            let figures = search::measure(bin, &db, n, opts.seed, raw, filter_hits)?;
            Some((figures, raw_filter_us))
        }
        None => None,
    };
    step(n, "orchestra serve: notification latency");
    let notify = notification::measure(bin, &backlog, &db, n, opts.seed)?;
    let largest = opts.sizes.iter().max() == Some(&n);
    let http = if largest && opts.http_clients > 0 {
        step(
            n,
            &format!("orchestra serve --http: {} clients", opts.http_clients),
        );
        Some(http_load::measure(
            bin,
            &db,
            n,
            opts.http_clients,
            opts.seed,
        )?)
    } else {
        None
    };
    step(n, "orchestra serve --http: viewer pages");
    let viewer = viewer::measure(bin, &db, n, opts.seed)?;
    // It imports a 5 MB document into the database and away again.
    let tools = if opts.tools {
        Some(tools::measure(bin, &backlog, &db, n, opts.seed)?)
    } else {
        None
    };
    let auth = if opts.auth {
        Some(auth::measure(bin, &db, n, opts.seed)?)
    } else {
        None
    };
    let check = if opts.check {
        step(n, "orchestra check");
        Some(check::measure(bin, &backlog.project, &db, n)?)
    } else {
        None
    };
    let postgres = if opts.postgres && largest {
        Some(postgres::measure(bin, &backlog, &db, n, opts.seed)?)
    } else {
        None
    };
    // Last: it rewrites files the earlier steps expect unchanged.
    let index_cost = match (&raw_search, baselines.search) {
        (Some(_), Some(baseline)) => Some(search_import::measure(
            bin, baseline, &backlog, n, opts.seed, opts.keep,
        )?),
        _ => None,
    };
    // As last: it rewrites 1% of the files five times.
    let links_cost = match baselines.links {
        Some(baseline) => Some(links_import::measure(
            bin, baseline, &backlog, n, opts.seed, opts.keep,
        )?),
        None => None,
    };
    // Last of all: it rewrites every file ten times.
    let history = if opts.history && largest {
        let no_history = machine::no_history_bin()?;
        Some(history::measure(
            bin,
            no_history.as_deref(),
            &backlog,
            n,
            opts.seed,
            opts.keep,
        )?)
    } else {
        None
    };
    let db_bytes = fs::metadata(&db)?.len();
    // After everything, the database's size included: the edits change
    // files and database together.
    let writes = if opts.writes {
        step(n, "orchestra serve --project: edits");
        Some(writes::measure(bin, &backlog, &db, n, opts.seed)?)
    } else {
        None
    };

    let mut rows = imports.rows(&raw, raw_search.as_ref().map(|r| r.build_s), n);
    rows.extend(serve.rows(&raw_reads, n));
    rows.extend(listed.rows());
    rows.extend(notify.rows());
    if let (Some(raw), Some((figures, raw_filter_us))) = (&raw_search, &searched) {
        rows.extend(figures.rows(raw, raw_filter_us, n));
        rows.extend(search_import::rows(index_cost.as_ref(), raw, n));
    }
    rows.extend(links_import::rows(links_cost.as_ref(), n));
    rows.extend(viewer.rows());
    if let Some(tools) = &tools {
        rows.extend(tools.rows(n));
    }
    if let Some(auth) = &auth {
        rows.extend(auth.rows());
    }
    if let Some(check) = &check {
        rows.extend(check.rows(imports.cold.seconds, n));
    }
    if let Some(history) = &history {
        rows.extend(history.rows());
    }
    if let Some(postgres) = &postgres {
        rows.extend(postgres.rows(n));
    }
    if let Some(writes) = &writes {
        rows.extend(writes.rows(n));
    }

    let details = json!({
        "viewer": viewer.to_json(),
        "listed_resource_bytes": listed.to_json(),
        "history": history.as_ref().map(history::HistoryFigures::to_json),
        "postgres": postgres.as_ref().map(postgres::PgFigures::to_json),
        "files_bytes": backlog.bytes,
        "generate_s": backlog.seconds,
        "raw_db_bytes": raw_db_bytes,
        "orchestra_db_bytes": db_bytes,
        "import_internal_seconds": {
            "cold": imports.cold_report.seconds,
            "unchanged": imports.same_report.seconds,
            "one_percent": imports.delta_report.seconds,
        },
        "one_percent_changed_files": imports.changed,
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
        "search": match (&raw_search, &searched) {
            (Some(raw), Some((figures, raw_filter_us))) => figures.to_json(raw, raw_filter_us),
            _ => Value::Null,
        },
        "search_index_cost": index_cost.as_ref().map(search_import::IndexCost::to_json),
        "links_import_cost": links_cost.as_ref().map(links_import::LinksCost::to_json),
        "tools": tools.as_ref().map(tools::ToolFigures::to_json),
        "check": check.as_ref().map(check::CheckFigures::to_json),
        "writes": writes.as_ref().map(writes::WriteFigures::to_json),
        "auth": auth.as_ref().map(auth::AuthFigures::to_json),
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
            read_p50_us: serve.read_p50_us,
            search_p50_us: searched.as_ref().map(|(figures, _)| figures.p50s()),
            raw_search_p50_us: match (&raw_search, &searched) {
                (Some(raw), Some((_, raw_filter_us))) => Some(raw.p50s(raw_filter_us)),
                _ => None,
            },
            http,
        },
        backlog,
    ))
}
