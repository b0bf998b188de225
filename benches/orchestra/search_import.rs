//! What the search index costs an import: cold and 1%-changed imports of the same files by the binary under test and by a binary that keeps no index (`ORCHESTRA_BASELINE_BIN`), alternated, and their rows.

use std::fs;
use std::path::{Path, PathBuf};

use rusqlite::Connection;
use serde_json::{Value, json};

use crate::Res;
use crate::backlog::{Backlog, touch_one_percent};
use crate::import::import;
use crate::process::Finished;
use crate::raw_sqlite::RawSearch;
use crate::report::{Row, step};
use crate::stats::percentile_ms;
use crate::units::ratio;

/// Imports of each kind per binary; the medians are compared.
const ROUNDS: usize = 3;
/// The first variant `touch_one_percent` writes here (the import step used 1).
const FIRST_VARIANT: u64 = 2;

pub struct IndexCost {
    /// Cold imports (into an empty database), with and without the index.
    pub cold_with: Vec<Finished>,
    pub cold_without: Vec<Finished>,
    /// Re-imports after 1% of the files changed.
    pub delta_with: Vec<Finished>,
    pub delta_without: Vec<Finished>,
    pub changed: usize,
}

/// Removes a database and its WAL files, if they exist.
pub fn remove_db(db: &Path) -> Res<()> {
    for suffix in ["", "-wal", "-shm"] {
        let mut path = db.as_os_str().to_owned();
        path.push(suffix);
        match fs::remove_file(PathBuf::from(path)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e.into()),
            _ => {}
        }
    }
    Ok(())
}

/// Whether the database's search index holds any document (a baseline
/// binary may have the index's tables, as migration 0004 makes them, empty).
fn has_search_index(db: &Path) -> Res<bool> {
    let conn = Connection::open(db)?;
    let tables: i64 = conn.query_row(
        "SELECT count(*) FROM sqlite_master WHERE name = 'search_docsize'",
        [],
        |r| r.get(0),
    )?;
    if tables == 0 {
        return Ok(false);
    }
    let rows: i64 = conn.query_row("SELECT count(*) FROM search_docsize", [], |r| r.get(0))?;
    Ok(rows > 0)
}

/// `ROUNDS` cold imports with each binary (each into a new database, the
/// order alternating), then `ROUNDS` times: 1% of the files rewritten and
/// both databases re-imported. Every report is checked. The main database is
/// not touched, but the files are: this runs after every other measurement.
pub fn measure(
    bin: &Path,
    baseline: &Path,
    backlog: &Backlog,
    n: usize,
    seed: u64,
    keep: bool,
) -> Res<IndexCost> {
    let with_db = backlog.root.join("search-with.db");
    let without_db = backlog.root.join("search-without.db");
    let both = [(bin, &with_db, true), (baseline, &without_db, false)];
    let mut cost = IndexCost {
        cold_with: Vec::new(),
        cold_without: Vec::new(),
        delta_with: Vec::new(),
        delta_without: Vec::new(),
        changed: 0,
    };
    for round in 0..ROUNDS {
        step(
            n,
            &format!("search index cost: cold imports, round {}", round + 1),
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
            if round == 0 && has_search_index(db)? != with {
                return Err(format!(
                    "{} {} a search index: ORCHESTRA_BASELINE_BIN must keep none (the same commit with the index writes made no-ops, see BENCHMARKS.md, or one from before search, e.g. 9be2234)",
                    bin.display(),
                    if with { "did not build" } else { "built" }
                )
                .into());
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
            &format!("search index cost: 1% re-imports, round {}", round + 1),
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

/// The import rows; without a baseline binary (`cost` is `None`) they say
/// what they need. The raw FTS5 `'rebuild'` is shown beside the index's
/// share of the cold import.
pub fn rows(cost: Option<&IndexCost>, raw: &RawSearch, n: usize) -> Vec<Row> {
    const NEEDS: &str = "needs ORCHESTRA_BASELINE_BIN";
    let at_100k = n == 100_000;
    let Some(cost) = cost else {
        return vec![
            Row {
                figure: "cold import with the search index (raw: the binary without it)".into(),
                unit: "s",
                raw: None,
                orchestra: Err(NEEDS),
                ratio: String::new(),
                target: "≤ 2× without at 100k".into(),
                meets: None,
                why: String::new(),
            },
            Row {
                figure: "re-import, 1% changed, with the search index (raw: the binary without it)".into(),
                unit: "s",
                raw: None,
                orchestra: Err(NEEDS),
                ratio: String::new(),
                target: "≤ 1.5× without at 100k".into(),
                meets: None,
                why: String::new(),
            },
            Row {
                figure: "search index build (raw: fts5 `'rebuild'` of title + body; orchestra: cold import with − without)".into(),
                unit: "s",
                raw: Some(raw.build_s),
                orchestra: Err(NEEDS),
                ratio: String::new(),
                target: String::new(),
                meets: None,
                why: String::new(),
            },
        ];
    };
    let (cold_with, cold_without) = (median_s(&cost.cold_with), median_s(&cost.cold_without));
    let (delta_with, delta_without) = (median_s(&cost.delta_with), median_s(&cost.delta_without));
    let cold = cold_with / cold_without;
    let delta = delta_with / delta_without;
    vec![
        Row {
            figure: format!(
                "cold import with the search index (raw: the binary without it, `ORCHESTRA_BASELINE_BIN`; median of {ROUNDS}, same files)"
            ),
            unit: "s",
            raw: Some(cold_without),
            orchestra: Ok(cold_with),
            ratio: ratio(cold_without, cold_with),
            target: "≤ 2× without at 100k".into(),
            meets: at_100k.then_some(cold <= 2.0),
            why: String::new(),
        },
        Row {
            figure: format!(
                "re-import, 1% changed ({} files), with the search index (raw: without it; median of {ROUNDS})",
                cost.changed
            ),
            unit: "s",
            raw: Some(delta_without),
            orchestra: Ok(delta_with),
            ratio: ratio(delta_without, delta_with),
            target: "≤ 1.5× without at 100k".into(),
            meets: at_100k.then_some(delta <= 1.5),
            why: String::new(),
        },
        Row {
            figure: "search index build (raw: fts5 `'rebuild'` of title + body; orchestra: cold import with − without)".into(),
            unit: "s",
            raw: Some(raw.build_s),
            orchestra: Ok(cold_with - cold_without),
            ratio: ratio(raw.build_s, cold_with - cold_without),
            target: String::new(),
            meets: None,
            why: String::new(),
        },
    ]
}

impl IndexCost {
    /// The times of every import. (Not their peak RSS: `wait4` reports at
    /// least the bench's own peak RSS at the spawn, which is larger by then.)
    pub fn to_json(&self) -> Value {
        let seconds = |runs: &[Finished]| runs.iter().map(|f| f.seconds).collect::<Vec<_>>();
        json!({
            "rounds": ROUNDS,
            "changed_files": self.changed,
            "cold_with_s": seconds(&self.cold_with),
            "cold_without_s": seconds(&self.cold_without),
            "delta_with_s": seconds(&self.delta_with),
            "delta_without_s": seconds(&self.delta_without),
        })
    }
}
