//! The raw SQLite baseline: the same files inserted by a child process with one prepared statement, then keyset pages, point reads and a full listing straight from SQLite; and, for search, a plain FTS5 table over the same bytes with its ranked queries, and a frontmatter scan.

use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::{Instant, UNIX_EPOCH};

use rusqlite::{Connection, params};

use crate::Res;
use crate::process::{Finished, run_measured};
use crate::rng::Rng;
use crate::search::Unmarked;
use crate::stats::{LISTING_RUNS, PAGE_SAMPLES, median, micros, percentile, percentile_ms};

/// The first argument that makes this binary the raw insert child.
pub const CHILD_FLAG: &str = "--raw-insert";

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
pub fn insert_child(args: &[String]) -> Res<()> {
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

/// Runs this binary as the raw insert child on `project`, into `db`, and
/// checks it found all `n` files.
pub fn insert(project: &Path, db: &Path, n: usize) -> Res<Finished> {
    let exe = std::env::current_exe()?;
    let mut cmd = Command::new(exe);
    cmd.arg(CHILD_FLAG).arg(project).arg(db);
    let raw = run_measured(cmd)?;
    let raw_count: usize = raw.stdout.trim().parse()?;
    if raw_count != n {
        return Err(format!("raw insert found {raw_count} files, not {n}").into());
    }
    Ok(raw)
}

pub struct RawReads {
    pub page_start_us: f64,
    pub page_end_us: f64,
    pub read_p50_us: f64,
    pub read_p99_us: f64,
    pub reads_per_s: f64,
    pub listing_s: f64,
}

pub fn reads(db: &Path, n: usize, reads: usize, throughput: usize, seed: u64) -> Res<RawReads> {
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

/// Samples of each raw search (after [`RAW_WARMUP`] untimed ones).
const RAW_RARE_SAMPLES: usize = 300;
const RAW_COMMON_SAMPLES: usize = 50;
const RAW_FILTER_SAMPLES: usize = 20;
const RAW_WARMUP: usize = 5;

/// The raw full-text baseline: a plain FTS5 table over the raw table's
/// title and body, built in one pass, and the ranked queries on it.
pub struct RawSearch {
    /// The `'rebuild'` of the index, in one transaction.
    pub build_s: f64,
    /// Pages of the `fts*` tables, and of the whole database with them.
    pub index_bytes: u64,
    pub db_bytes: u64,
    pub rare_us: Vec<f64>,
    pub common_us: Vec<f64>,
    /// Hits of each rare word and of the common word (`count(*)`, untimed).
    pub rare_hits: Vec<u64>,
    pub common_hits: u64,
    /// Snippets of the first page of each word search without the match.
    pub unmarked: Unmarked,
}

impl RawSearch {
    /// p50 (µs) of the rare-word and common-word searches, and of the
    /// frontmatter scan `filter_us` that stands for the filter.
    pub fn p50s(&self, filter_us: &[f64]) -> [f64; 3] {
        [&self.rare_us, &self.common_us, filter_us].map(|us| percentile_ms(us, 50.0))
    }
}

/// Top 20 by the configured rank, with a snippet of the body, materialized.
const RAW_SEARCH_SQL: &str = "SELECT rowid, title, snippet(fts, 1, '**', '**', '…', 32) FROM fts
     WHERE fts MATCH ?1 ORDER BY rank LIMIT 20";

/// Builds `fts(title, body)` over the raw table (external content, the
/// tokenizer and title weight of orchestra's index) and times the same word
/// searches as the server: each rare word in turn, then the common word.
pub fn search(db: &Path, rare: &[&str], common: &str) -> Res<RawSearch> {
    let conn = Connection::open(db)?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.execute_batch(
        "CREATE VIRTUAL TABLE fts USING fts5(title, body, content = 'documents',
             content_rowid = 'rowid', tokenize = 'unicode61 remove_diacritics 2');
         INSERT INTO fts (fts, rank) VALUES ('rank', 'bm25(10.0, 1.0)');",
    )?;
    let t = Instant::now();
    conn.execute_batch("BEGIN; INSERT INTO fts (fts) VALUES ('rebuild'); COMMIT;")?;
    let build_s = t.elapsed().as_secs_f64();
    let (index_bytes, db_bytes) = pages_of(&conn, "name LIKE 'fts%'")?;

    let quoted = |word: &str| format!("\"{word}\"");
    let mut count = conn.prepare("SELECT count(*) FROM fts WHERE fts MATCH ?1")?;
    let mut hits = |word: &str| -> rusqlite::Result<u64> {
        count.query_row([quoted(word)], |r| r.get::<_, i64>(0).map(|c| c as u64))
    };
    let rare_hits = rare
        .iter()
        .map(|w| hits(w))
        .collect::<rusqlite::Result<_>>()?;
    let common_hits = hits(common)?;

    let mut stmt = conn.prepare(RAW_SEARCH_SQL)?;
    let mut top = |word: &str| -> rusqlite::Result<Vec<String>> {
        let mut rows = stmt.query([quoted(word)])?;
        let mut snippets = Vec::with_capacity(20);
        while let Some(r) = rows.next()? {
            let _: (i64, String) = (r.get(0)?, r.get(1)?);
            snippets.push(r.get(2)?);
        }
        Ok(snippets)
    };
    let mut unmarked = Unmarked::default();
    for word in rare.iter().chain([&common]) {
        unmarked.add(word, &top(word)?);
    }
    let mut rare_us = Vec::with_capacity(RAW_RARE_SAMPLES);
    for k in 0..RAW_WARMUP + RAW_RARE_SAMPLES {
        let word = rare[k % rare.len()];
        let t = Instant::now();
        top(word)?;
        if k >= RAW_WARMUP {
            rare_us.push(micros(t.elapsed()));
        }
    }
    let mut common_us = Vec::with_capacity(RAW_COMMON_SAMPLES);
    for k in 0..RAW_WARMUP + RAW_COMMON_SAMPLES {
        let t = Instant::now();
        let got = top(common)?;
        if k >= RAW_WARMUP {
            common_us.push(micros(t.elapsed()));
        }
        assert_eq!(got.len() as u64, common_hits.min(20));
    }
    Ok(RawSearch {
        build_s,
        index_bytes,
        db_bytes,
        rare_us,
        common_us,
        rare_hits,
        common_hits,
        unmarked,
    })
}

/// Bytes of the pages of the tables and indexes `name_filter` selects (from
/// `dbstat`, which the bundled SQLite has), and of the whole database.
pub fn pages_of(conn: &Connection, name_filter: &str) -> Res<(u64, u64)> {
    let selected: i64 = conn.query_row(
        &format!("SELECT coalesce(sum(pgsize), 0) FROM dbstat WHERE {name_filter}"),
        [],
        |r| r.get(0),
    )?;
    let pages: i64 = conn.pragma_query_value(None, "page_count", |r| r.get(0))?;
    let page_size: i64 = conn.pragma_query_value(None, "page_size", |r| r.get(0))?;
    Ok((selected as u64, (pages * page_size) as u64))
}

/// The raw analogue of a search with filters only: FTS has none, so the
/// frontmatter of every document is parsed (`json_extract`) in orchestra's
/// own database (the raw table keeps no frontmatter): the count, then the
/// first 20 in key order, as the server answers. Returns the samples (µs)
/// and the count.
pub fn filter_scan(db: &Path, status: &str) -> Res<(Vec<f64>, u64)> {
    let conn = Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    let mut count = conn.prepare(
        "SELECT count(*) FROM documents WHERE json_extract(frontmatter, '$.status') = ?1",
    )?;
    let mut first = conn.prepare(
        "SELECT prefix, id, title, description, size FROM documents
         WHERE json_extract(frontmatter, '$.status') = ?1 ORDER BY prefix, id LIMIT 21",
    )?;
    let mut samples = Vec::with_capacity(RAW_FILTER_SAMPLES);
    let mut total = 0;
    for k in 0..RAW_WARMUP + RAW_FILTER_SAMPLES {
        let t = Instant::now();
        total = count.query_row([status], |r| r.get::<_, i64>(0))? as u64;
        let mut rows = first.query([status])?;
        while let Some(r) = rows.next()? {
            let _: (String, String, String, Option<String>, i64) =
                (r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?);
        }
        if k >= RAW_WARMUP {
            samples.push(micros(t.elapsed()));
        }
    }
    Ok((samples, total))
}
