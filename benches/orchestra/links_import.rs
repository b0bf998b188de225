//! What finding links costs an import (issue 34): cold and 1%-changed imports of the same files by the binary under test and by the same commit with link extraction made a no-op (`ORCHESTRA_LINKS_BASELINE_BIN`), alternated, and their rows.

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use orchestra::doc::{DocKey, Prefix};
use rusqlite::Connection;
use serde_json::{Value, json};

use crate::Res;
use crate::backlog::{Backlog, LINKED, backlinkers, touch_one_percent};
use crate::import::import;
use crate::process::Finished;
use crate::report::{Row, step};
use crate::search_import::remove_db;
use crate::stats::percentile_ms;
use crate::units::ratio;

/// Imports of each kind per binary; the medians are compared.
const ROUNDS: usize = 5;
/// The first variant `touch_one_percent` writes here: past those of the
/// import step (1) and of `search_import` (2 to 4).
const FIRST_VARIANT: u64 = 20;
/// Issue 34: an import with links at most this much slower than without.
const TARGET: f64 = 1.15;

pub struct LinksCost {
    /// Cold imports (into an empty database), with and without links.
    pub cold_with: Vec<Finished>,
    pub cold_without: Vec<Finished>,
    /// Re-imports after 1% of the files changed.
    pub delta_with: Vec<Finished>,
    pub delta_without: Vec<Finished>,
    pub changed: usize,
    /// Link rows the binary under test stored (the baseline must store none).
    pub links: u64,
    /// `links::extract` over every file of the project, in this process on
    /// one thread (seconds, one per run), and the links it found.
    pub extract_s: Vec<f64>,
    pub extracted: usize,
}

/// Runs of the in-process extraction; the median is reported.
const EXTRACT_RUNS: usize = 3;

/// Every Markdown file below `dir`, with its path below the project
/// (`/`-separated, without `.md`).
fn markdown_files(project: &Path, dir: &Path, out: &mut Vec<(String, String)>) -> Res<()> {
    for entry in fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            markdown_files(project, &path, out)?;
        } else if let Some(name) = path.to_str().and_then(|p| p.strip_suffix(".md")) {
            let below = Path::new(name).strip_prefix(project)?;
            let below = below.to_str().ok_or("a path that is not UTF-8")?;
            out.push((below.to_string(), fs::read_to_string(&path)?));
        }
    }
    Ok(())
}

/// The time `links::extract` takes over every file, the files already in
/// memory (one thread, this process): what extraction adds to an import's
/// CPU, wherever it runs. Returns the seconds and the links found.
fn extract_all(project: &Path) -> Res<(f64, usize)> {
    let mut files = Vec::new();
    for prefix in ["features", "notes", "docs"] {
        markdown_files(project, &project.join(prefix), &mut files)?;
    }
    let mut took = Duration::ZERO;
    let mut found = 0;
    for (path, text) in &files {
        let (prefix, id) = path.split_once('/').ok_or("a file outside a prefix")?;
        let prefix = Prefix::parse(prefix).ok_or("an unknown prefix")?;
        let key = DocKey::new(prefix, id);
        let started = Instant::now();
        let links = orchestra::links::extract(&key, text);
        took += started.elapsed();
        found += links.len();
    }
    Ok((took.as_secs_f64(), found))
}

/// The link rows of a database, and those that point at `LINKED` (by key
/// or by a mention of its id).
fn link_rows(db: &Path) -> Res<(u64, u64)> {
    let conn = Connection::open(db)?;
    let all: i64 = conn.query_row("SELECT count(*) FROM links", [], |r| r.get(0))?;
    let name = format!("FEAT-{LINKED:07}");
    let to_linked: i64 = conn.query_row(
        "SELECT count(*) FROM links WHERE target_id = ?1 AND target_prefix IN ('', 'features')",
        [&name],
        |r| r.get(0),
    )?;
    Ok((all as u64, to_linked as u64))
}

/// `ROUNDS` cold imports with each binary (each into a new database, the
/// order alternating: A B, B A, A B, …), then `ROUNDS` times: 1% of the
/// files rewritten and both databases re-imported, alternating alike.
/// Every report is checked, and the first cold databases' links. The main
/// database is not touched, but the files are: this runs after the
/// measurements that expect them unchanged.
pub fn measure(
    bin: &Path,
    baseline: &Path,
    backlog: &Backlog,
    n: usize,
    seed: u64,
    keep: bool,
) -> Res<LinksCost> {
    let with_db = backlog.root.join("links-with.db");
    let without_db = backlog.root.join("links-without.db");
    let both = [(bin, &with_db, true), (baseline, &without_db, false)];
    let mut cost = LinksCost {
        cold_with: Vec::new(),
        cold_without: Vec::new(),
        delta_with: Vec::new(),
        delta_without: Vec::new(),
        changed: 0,
        links: 0,
        extract_s: Vec::new(),
        extracted: 0,
    };
    for round in 0..ROUNDS {
        step(
            n,
            &format!("links import cost: cold imports, round {}", round + 1),
        );
        for k in 0..2 {
            let (bin, db, with) = both[(round + k) % 2];
            remove_db(db)?;
            let (finished, report) = import(bin, &backlog.project, db)?;
            if report.new != n as u64 {
                return Err(format!(
                    "cold import ({}): {} new, expected {n}",
                    bin.display(),
                    report.new
                )
                .into());
            }
            if round == 0 {
                let (all, to_linked) = link_rows(db)?;
                if with && to_linked != backlinkers(n) as u64 {
                    return Err(format!(
                        "{}: {to_linked} links to FEAT-{LINKED:07}, expected {}",
                        bin.display(),
                        backlinkers(n)
                    )
                    .into());
                }
                if !with && all != 0 {
                    return Err(format!(
                        "{} stored {all} links: ORCHESTRA_LINKS_BASELINE_BIN must store none (the same commit with `links::extract` returning `Vec::new()` at once, see BENCHMARKS.md)",
                        bin.display()
                    )
                    .into());
                }
                if with {
                    cost.links = all;
                }
            }
            if with {
                &mut cost.cold_with
            } else {
                &mut cost.cold_without
            }
            .push(finished);
        }
    }
    for round in 0..ROUNDS {
        step(
            n,
            &format!("links import cost: 1% re-imports, round {}", round + 1),
        );
        cost.changed = touch_one_percent(backlog, n, seed, FIRST_VARIANT + round as u64)?;
        for k in 0..2 {
            let (bin, db, with) = both[(round + k) % 2];
            let (finished, report) = import(bin, &backlog.project, db)?;
            if report.updated != cost.changed as u64 {
                return Err(format!(
                    "1% re-import ({}): {} updated, expected {}",
                    bin.display(),
                    report.updated,
                    cost.changed
                )
                .into());
            }
            if with {
                &mut cost.delta_with
            } else {
                &mut cost.delta_without
            }
            .push(finished);
        }
    }
    step(
        n,
        "links import cost: links::extract over every file, in process",
    );
    for _ in 0..EXTRACT_RUNS {
        let (seconds, found) = extract_all(&backlog.project)?;
        cost.extract_s.push(seconds);
        cost.extracted = found;
    }
    if !keep {
        remove_db(&with_db)?;
        remove_db(&without_db)?;
    }
    Ok(cost)
}

fn median_s(runs: &[Finished]) -> f64 {
    let seconds: Vec<f64> = runs.iter().map(|f| f.seconds).collect();
    percentile_ms(&seconds, 50.0)
}

fn median_cpu(runs: &[Finished]) -> f64 {
    let seconds: Vec<f64> = runs.iter().map(|f| f.cpu_s).collect();
    percentile_ms(&seconds, 50.0)
}

/// The median of the ratios of the runs made next to each other (with
/// over without, round by round).
fn paired(with: &[Finished], without: &[Finished]) -> f64 {
    let ratios: Vec<f64> = with
        .iter()
        .zip(without)
        .map(|(a, b)| a.seconds / b.seconds)
        .collect();
    percentile_ms(&ratios, 50.0)
}

/// The two import rows; without a baseline binary (`cost` is `None`) they
/// say what they need.
pub fn rows(cost: Option<&LinksCost>, n: usize) -> Vec<Row> {
    const NEEDS: &str = "needs ORCHESTRA_LINKS_BASELINE_BIN";
    let at_100k = n == 100_000;
    let target = format!("≤ {TARGET}× without at 100k");
    let Some(cost) = cost else {
        return [
            "cold import with links",
            "re-import, 1% changed, with links",
        ]
        .into_iter()
        .map(|figure| Row {
            figure: format!("{figure} (raw: the same commit without link extraction)"),
            unit: "s",
            raw: None,
            orchestra: Err(NEEDS),
            ratio: String::new(),
            target: target.clone(),
            meets: None,
            why: String::new(),
        })
        .collect();
    };
    let (cold_with, cold_without) = (median_s(&cost.cold_with), median_s(&cost.cold_without));
    let (delta_with, delta_without) = (median_s(&cost.delta_with), median_s(&cost.delta_without));
    let cpu = |with: &[Finished], without: &[Finished]| (median_cpu(with), median_cpu(without));
    let (cold_cpu_with, cold_cpu_without) = cpu(&cost.cold_with, &cost.cold_without);
    let (delta_cpu_with, delta_cpu_without) = cpu(&cost.delta_with, &cost.delta_without);
    let extract_s = percentile_ms(&cost.extract_s, 50.0);
    vec![
        Row {
            figure: format!(
                "cold import with links, {} link rows (raw: the same commit without link extraction, `ORCHESTRA_LINKS_BASELINE_BIN`; median of {ROUNDS}, alternated)",
                crate::units::thousands(cost.links)
            ),
            unit: "s",
            raw: Some(cold_without),
            orchestra: Ok(cold_with),
            ratio: ratio(cold_without, cold_with),
            target: target.clone(),
            meets: at_100k.then_some(cold_with <= TARGET * cold_without),
            why: format!(
                "round by round: {:.2}×",
                paired(&cost.cold_with, &cost.cold_without)
            ),
        },
        Row {
            figure: format!(
                "re-import, 1% changed ({} files), with links (raw: without; median of {ROUNDS}, alternated)",
                cost.changed
            ),
            unit: "s",
            raw: Some(delta_without),
            orchestra: Ok(delta_with),
            ratio: ratio(delta_without, delta_with),
            target,
            meets: at_100k.then_some(delta_with <= TARGET * delta_without),
            why: format!(
                "round by round: {:.2}×",
                paired(&cost.delta_with, &cost.delta_without)
            ),
        },
        Row {
            figure: "CPU of the cold import, user + system, with links (raw: without; median of the same runs)".into(),
            unit: "s",
            raw: Some(cold_cpu_without),
            orchestra: Ok(cold_cpu_with),
            ratio: ratio(cold_cpu_without, cold_cpu_with),
            target: String::new(),
            meets: None,
            why: String::new(),
        },
        Row {
            figure: "CPU of the 1% re-import, user + system, with links (raw: without)".into(),
            unit: "s",
            raw: Some(delta_cpu_without),
            orchestra: Ok(delta_cpu_with),
            ratio: ratio(delta_cpu_without, delta_cpu_with),
            target: String::new(),
            meets: None,
            why: String::new(),
        },
        Row {
            figure: format!(
                "`links::extract` over every file, in process on one thread, the files in memory (raw: the cold import without links; median of {EXTRACT_RUNS})"
            ),
            unit: "s",
            raw: Some(cold_without),
            orchestra: Ok(extract_s),
            ratio: ratio(cold_without, extract_s),
            target: String::new(),
            meets: None,
            why: format!("{} links found", crate::units::thousands(cost.extracted as u64)),
        },
    ]
}

impl LinksCost {
    /// The times of every import, in the order they ran.
    pub fn to_json(&self) -> Value {
        let seconds = |runs: &[Finished]| runs.iter().map(|f| f.seconds).collect::<Vec<_>>();
        let cpu = |runs: &[Finished]| runs.iter().map(|f| f.cpu_s).collect::<Vec<_>>();
        json!({
            "rounds": ROUNDS,
            "changed_files": self.changed,
            "link_rows": self.links,
            "cold_with_s": seconds(&self.cold_with),
            "cold_without_s": seconds(&self.cold_without),
            "delta_with_s": seconds(&self.delta_with),
            "delta_without_s": seconds(&self.delta_without),
            "cold_with_cpu_s": cpu(&self.cold_with),
            "cold_without_cpu_s": cpu(&self.cold_without),
            "delta_with_cpu_s": cpu(&self.delta_with),
            "delta_without_cpu_s": cpu(&self.delta_without),
            "extract_in_process_s": self.extract_s,
            "extracted_links": self.extracted,
        })
    }
}
