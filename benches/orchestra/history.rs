//! What document history costs: the backlog imported through 10 versions of every document, then current reads and the full listing beside the same database with its history deleted, version reads (warm, and from a cold page cache beside current reads from one), the history's size against the bytes of the versions it keeps, and a 1% re-import beside a binary from before history (`ORCHESTRA_NOHISTORY_BIN`) that went through the same imports.

use std::fs;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::time::Duration;

use rusqlite::Connection;
use serde_json::{Value, json};

use crate::Res;
use crate::backlog::{Backlog, rewrite_all, touch_one_percent};
use crate::import::import;
use crate::report::{Row, step};
use crate::rng::Rng;
use crate::stats::{micros, percentile, percentile_ms};
use crate::stdio_client::Server;
use crate::units::{fmt_value, ratio};

/// Versions of every document: the cold import, then full rewrites.
pub const VERSIONS: u64 = 10;
/// Reads of each kind, sequential, after a warm-up of 100.
const READS: usize = 1000;
/// 1% re-imports per binary, alternated; the medians are compared. A
/// round moves by ±20% on these machines: 3 rounds put the median of the
/// same binary anywhere from 1.13x to 1.23x of the other's.
const ROUNDS: usize = 7;
/// The variants the rewrites use (the 1% rewrites of other steps use 1–4).
const FIRST_VARIANT: u64 = 100;

pub struct HistoryFigures {
    /// Current reads and full listings, with and without history (µs, s).
    read_with_us: Vec<f64>,
    read_without_us: Vec<f64>,
    listing_with_s: Vec<f64>,
    listing_without_s: Vec<f64>,
    /// Version reads: every pass, and the first pass alone (each version
    /// read for the first time).
    version_read_us: Vec<f64>,
    version_first_us: Vec<f64>,
    /// Each pass's p50 of the version reads, in order.
    version_pass_p50_us: Vec<f64>,
    /// First reads after the database's pages were dropped from the page
    /// cache: current documents, then past versions of documents picked
    /// afresh.
    cold_read_us: Vec<f64>,
    cold_version_read_us: Vec<f64>,
    /// Bytes of the stored (compressed) bodies, and the bytes of the
    /// versions they keep (every version that is no longer current).
    stored_bytes: u64,
    kept_bytes: u64,
    /// Past versions kept (with bytes, not current).
    versions: u64,
    /// 1% re-imports, with history and by the binary without (s).
    delta_with_s: Vec<f64>,
    delta_without_s: Vec<f64>,
}

/// Reads `uris` one at a time; the first `warm_up` are not sampled.
fn sample_reads(server: &mut Server, uris: &[String], warm_up: usize) -> Res<Vec<f64>> {
    let mut samples = Vec::with_capacity(uris.len());
    for (i, uri) in uris.iter().enumerate() {
        let line = server.read_line(uri);
        let (took, reply) = server.call_line(&line)?;
        Server::check_read(&reply)?;
        if i >= warm_up {
            samples.push(micros(took));
        }
    }
    Ok(samples)
}

/// Imports `VERSIONS` states of the backlog with `bin` into `db` (a new
/// database): the files as they are, then full rewrites.
fn build(bin: &Path, backlog: &Backlog, db: &Path, n: usize, seed: u64, label: &str) -> Res<()> {
    let _ = fs::remove_file(db);
    for v in 0..VERSIONS {
        step(
            n,
            &format!("history: {label}, version {} of {VERSIONS}", v + 1),
        );
        if v > 0 {
            rewrite_all(backlog, n, seed, FIRST_VARIANT + v)?;
        }
        let (_, report) = import(bin, &backlog.project, db)?;
        let expected = if v == 0 { report.new } else { report.updated };
        if expected != n as u64 {
            return Err(format!("{label}: import {v} changed {expected} of {n} documents").into());
        }
    }
    Ok(())
}

pub fn measure(
    bin: &Path,
    baseline: Option<&Path>,
    backlog: &Backlog,
    n: usize,
    seed: u64,
    keep: bool,
) -> Res<HistoryFigures> {
    let with_db = backlog.root.join("history-with.db");
    let without_db = backlog.root.join("history-without.db");
    let baseline_db = backlog.root.join("history-baseline.db");
    build(bin, backlog, &with_db, n, seed, "with history")?;
    if let Some(baseline) = baseline {
        build(
            baseline,
            backlog,
            &baseline_db,
            n,
            seed,
            "the binary without history",
        )?;
    }

    // The same database, its history deleted.
    step(n, "history: the same database without its history");
    fs::copy(&with_db, &without_db)?;
    let (stored_bytes, kept_bytes, versions) = {
        let conn = Connection::open(&without_db)?;
        let figures = conn.query_row(
            // Past versions: all but the newest of each document (windowed:
            // `versions` is keyed by import, not by document).
            "SELECT (SELECT coalesce(sum(length(zstd)), 0) FROM bodies),
                    coalesce(sum(size), 0), count(*)
             FROM (SELECT hash, size,
                          row_number() OVER (PARTITION BY prefix, id ORDER BY version DESC) AS n
                   FROM versions)
             WHERE hash IS NOT NULL AND n > 1",
            [],
            |r| {
                Ok((
                    r.get::<_, i64>(0)? as u64,
                    r.get::<_, i64>(1)? as u64,
                    r.get::<_, i64>(2)? as u64,
                ))
            },
        )?;
        // Not vacuumed: the documents keep the very pages they have in the
        // database with history, so reads and listings differ only by it.
        conn.execute_batch("DELETE FROM versions; DELETE FROM bodies; DELETE FROM body_hashes; DELETE FROM recent_body_hashes;")?;
        figures
    };

    step(n, "history: reads and listings, with and without");
    let mut rng = Rng::new(seed, 0x415);
    let mut with = Server::start(bin, &with_db, None)?;
    let (_, uris, _) = with.full_listing()?;
    let picks = random_picks(&uris, READS + 100, &mut rng);
    let versioned = past_versions(&picks, &mut rng);
    let mut without = Server::start(bin, &without_db, None)?;
    let (mut read_with_us, mut read_without_us) = (Vec::new(), Vec::new());
    let (mut listing_with_s, mut listing_without_s) = (Vec::new(), Vec::new());
    let (mut version_read_us, mut version_first_us) = (Vec::new(), Vec::new());
    let mut version_pass_p50_us = Vec::new();
    // Alternated, so that a noisy moment costs both alike. The version
    // reads are sampled as the current reads are, three passes over the
    // same picks; on these machines a file page idle for about a minute may
    // be paged out (DAMON), and the first pass's figure shows what first
    // reads cost.
    for pass in 0..3 {
        listing_with_s.push(with.full_listing()?.0.as_secs_f64());
        listing_without_s.push(without.full_listing()?.0.as_secs_f64());
        read_with_us.extend(sample_reads(&mut with, &picks, 100)?);
        read_without_us.extend(sample_reads(&mut without, &picks, 100)?);
        let versions = sample_reads(&mut with, &versioned, 100)?;
        if pass == 0 {
            version_first_us.clone_from(&versions);
        }
        version_pass_p50_us.push(p50_us(&versions));
        version_read_us.extend(versions);
    }
    with.stop()?;
    without.stop()?;

    let (mut delta_with_s, mut delta_without_s) = (Vec::new(), Vec::new());
    if let Some(baseline) = baseline {
        // Building the baseline's database rewrote every file: the database
        // with history holds the same bytes under older mtimes, so its first
        // re-import read and hashed every file again (2.3-2.6 s against
        // 0.6-0.8 s in the rounds after it, at 100k). One import of each,
        // not measured, brings both to the files' mtimes.
        for (bin, db) in [(bin, &with_db), (baseline, &baseline_db)] {
            let (_, report) = import(bin, &backlog.project, db)?;
            if report.new + report.updated > 0 {
                return Err(format!("settling {}: bytes changed", db.display()).into());
            }
        }
        for round in 0..ROUNDS {
            step(n, &format!("history: 1% re-imports, round {}", round + 1));
            let changed =
                touch_one_percent(backlog, n, seed, FIRST_VARIANT + VERSIONS + round as u64)?;
            let both = [(bin, &with_db, true), (baseline, &baseline_db, false)];
            for k in 0..2 {
                let (bin, db, is_with) = both[(round + k) % 2];
                let (finished, report) = import(bin, &backlog.project, db)?;
                if report.updated != changed as u64 {
                    return Err(format!(
                        "1% re-import: {} updated, expected {changed}",
                        report.updated
                    )
                    .into());
                }
                let seconds = finished.seconds;
                if is_with {
                    delta_with_s.push(seconds);
                } else {
                    delta_without_s.push(seconds);
                }
            }
            step(
                n,
                &format!(
                    "history: round {}: {:.3} s with history, {:.3} s without",
                    round + 1,
                    delta_with_s[round],
                    delta_without_s[round]
                ),
            );
        }
    }
    // Last, as nothing after it reads the database: what a read costs when
    // this machine has paged the database out (DAMON does so to file pages
    // idle for about a minute, see BENCHMARKS.md). A new server, the file's
    // pages dropped before each kind, each pick read once.
    step(n, "history: first reads from a cold page cache");
    let mut rng = Rng::new(seed, 0x416);
    let cold_picks = random_picks(&uris, READS, &mut rng);
    let cold_versioned = past_versions(&random_picks(&uris, READS, &mut rng), &mut rng);
    let mut cold = Server::start(bin, &with_db, None)?;
    drop_cached_pages(&with_db)?;
    let cold_read_us = sample_reads(&mut cold, &cold_picks, 0)?;
    drop_cached_pages(&with_db)?;
    let cold_version_read_us = sample_reads(&mut cold, &cold_versioned, 0)?;
    cold.stop()?;

    // Kept with `--keep`: the database with history, to look at.
    for db in [&with_db, &without_db, &baseline_db] {
        if keep && db == &with_db {
            continue;
        }
        for suffix in ["", "-wal", "-shm"] {
            let _ = fs::remove_file(format!("{}{suffix}", db.display()));
        }
    }
    Ok(HistoryFigures {
        read_with_us,
        read_without_us,
        listing_with_s,
        listing_without_s,
        version_read_us,
        version_first_us,
        version_pass_p50_us,
        cold_read_us,
        cold_version_read_us,
        stored_bytes,
        kept_bytes,
        versions,
        delta_with_s,
        delta_without_s,
    })
}

/// `count` of `uris`, drawn at random (with repeats).
fn random_picks(uris: &[String], count: usize, rng: &mut Rng) -> Vec<String> {
    (0..count)
        .map(|_| uris[rng.below(uris.len())].clone())
        .collect()
}

/// Each of `uris` at a random past version (every document has
/// `VERSIONS`; the newest is current).
fn past_versions(uris: &[String], rng: &mut Rng) -> Vec<String> {
    uris.iter()
        .map(|uri| format!("{uri}?version={}", 1 + rng.below(VERSIONS as usize - 1)))
        .collect()
}

/// Asks the kernel to drop `db`'s pages from the page cache (written back
/// first, as dirty pages are not dropped), so the next reads of it go to
/// the disk.
fn drop_cached_pages(db: &Path) -> Res<()> {
    let file = fs::File::open(db)?;
    file.sync_all()?;
    // SAFETY: `file` is an open descriptor for the whole call; the advice
    // reads no memory of ours.
    let error = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    if error != 0 {
        return Err(format!(
            "posix_fadvise({}): {}",
            db.display(),
            std::io::Error::from_raw_os_error(error)
        )
        .into());
    }
    Ok(())
}

fn percentile_us(samples: &[f64], p: f64) -> f64 {
    let mut d: Vec<Duration> = samples
        .iter()
        .map(|us| Duration::from_secs_f64(us / 1e6))
        .collect();
    micros(percentile(&mut d, p))
}

fn p50_us(samples: &[f64]) -> f64 {
    percentile_us(samples, 50.0)
}

impl HistoryFigures {
    pub fn rows(&self) -> Vec<Row> {
        let (with, without) = (p50_us(&self.read_with_us), p50_us(&self.read_without_us));
        let (lw, lo) = (
            percentile_ms(&self.listing_with_s, 50.0),
            percentile_ms(&self.listing_without_s, 50.0),
        );
        let version = p50_us(&self.version_read_us);
        let share = 100.0 * self.stored_bytes as f64 / self.kept_bytes.max(1) as f64;
        let mut rows = vec![
            Row {
                figure: format!(
                    "history: current read p50, {VERSIONS} versions per document (raw: the same database without history)"
                ),
                unit: "µs",
                raw: Some(without),
                orchestra: Ok(with),
                ratio: ratio(without, with),
                target: "≤ 1.1× without".into(),
                meets: Some(with <= 1.1 * without),
                why: String::new(),
            },
            Row {
                figure: "history: full listing (raw: the same database without history)".into(),
                unit: "s",
                raw: Some(lo),
                orchestra: Ok(lw),
                ratio: ratio(lo, lw),
                target: "≤ 1.1× without".into(),
                meets: Some(lw <= 1.1 * lo),
                why: String::new(),
            },
            Row {
                figure: "history: version read p50 (`?version=N`, a random past version; three passes over the same ones, as the current reads)".into(),
                unit: "µs",
                raw: None,
                orchestra: Ok(version),
                ratio: String::new(),
                target: "< 250 µs".into(),
                meets: Some(version < 250.0),
                why: format!(
                    "p99 {}; the first pass alone (each version's first read) p50 {}, p99 {}; p50 pass by pass {}",
                    fmt_value(percentile_us(&self.version_read_us, 99.0), "µs"),
                    fmt_value(p50_us(&self.version_first_us), "µs"),
                    fmt_value(percentile_us(&self.version_first_us, 99.0), "µs"),
                    self.version_pass_p50_us
                        .iter()
                        .map(|us| fmt_value(*us, "µs"))
                        .collect::<Vec<_>>()
                        .join(", "),
                ),
            },
            Row {
                figure: "history: version read p50 from a cold page cache (the database's pages dropped, each a first read; raw: a current read, the same)".into(),
                unit: "µs",
                raw: Some(p50_us(&self.cold_read_us)),
                orchestra: Ok(p50_us(&self.cold_version_read_us)),
                ratio: ratio(
                    p50_us(&self.cold_read_us),
                    p50_us(&self.cold_version_read_us),
                ),
                target: String::new(),
                meets: None,
                why: format!(
                    "p99 {} (current: {})",
                    fmt_value(percentile_us(&self.cold_version_read_us, 99.0), "µs"),
                    fmt_value(percentile_us(&self.cold_read_us, 99.0), "µs"),
                ),
            },
            Row {
                figure: format!(
                    "history: stored size / bytes of the {} past versions it keeps",
                    self.versions
                ),
                unit: "%",
                raw: None,
                orchestra: Ok(share),
                ratio: String::new(),
                target: "≤ 40%".into(),
                meets: Some(share <= 40.0),
                why: format!(
                    "{:.1} of {:.1} MB",
                    self.stored_bytes as f64 / 1e6,
                    self.kept_bytes as f64 / 1e6
                ),
            },
        ];
        if !self.delta_with_s.is_empty() {
            let (w, o) = (
                percentile_ms(&self.delta_with_s, 50.0),
                percentile_ms(&self.delta_without_s, 50.0),
            );
            rows.push(Row {
                figure: format!("history: 1% re-import (raw: the binary without history, same imports before; median of {ROUNDS})"),
                unit: "s",
                raw: Some(o),
                orchestra: Ok(w),
                ratio: ratio(o, w),
                target: "≤ 1.2× without".into(),
                meets: Some(w <= 1.2 * o),
                why: format!(
                    "round by round (the pair run back to back): median {:.2}×",
                    {
                        let pairs: Vec<f64> = self
                            .delta_with_s
                            .iter()
                            .zip(&self.delta_without_s)
                            .map(|(w, o)| w / o)
                            .collect();
                        percentile_ms(&pairs, 50.0)
                    }
                ),
            });
        }
        rows
    }

    pub fn to_json(&self) -> Value {
        json!({
            "read_with_p50_us": p50_us(&self.read_with_us),
            "read_without_p50_us": p50_us(&self.read_without_us),
            "listing_with_s": self.listing_with_s,
            "listing_without_s": self.listing_without_s,
            "version_read_p50_us": p50_us(&self.version_read_us),
            "version_read_first_pass_p50_us": p50_us(&self.version_first_us),
            "version_read_pass_p50_us": self.version_pass_p50_us,
            "cold_read_p50_us": p50_us(&self.cold_read_us),
            "cold_version_read_p50_us": p50_us(&self.cold_version_read_us),
            "stored_bytes": self.stored_bytes,
            "kept_bytes": self.kept_bytes,
            "versions": self.versions,
            "delta_with_s": self.delta_with_s,
            "delta_without_s": self.delta_without_s,
        })
    }
}
