//! `orchestra import` as a user runs it: cold, again with nothing changed, and after 1% of the files changed, each with its peak RSS; and their rows beside the raw insert.

use std::path::Path;
use std::process::Command;

use serde::Deserialize;

use crate::ONE_MILLION;
use crate::Res;
use crate::backlog::{Backlog, touch_one_percent};
use crate::process::{Finished, run_measured};
use crate::report::{Row, step};
use crate::units::{mb, ratio};

/// What `orchestra import --json` prints.
#[derive(Deserialize)]
pub struct ImportReport {
    pub new: u64,
    pub updated: u64,
    pub unchanged: u64,
    pub seconds: f64,
}

pub struct ImportFigures {
    pub cold: Finished,
    pub cold_report: ImportReport,
    pub same: Finished,
    pub same_report: ImportReport,
    pub delta: Finished,
    pub delta_report: ImportReport,
    /// Files rewritten before the 1% re-import.
    pub changed: usize,
}

/// One `BIN import PROJECT --db DB --json`: its wall time, peak RSS and report.
pub fn import(bin: &Path, project: &Path, db: &Path) -> Res<(Finished, ImportReport)> {
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

/// The three imports into `db`, in order, each checked against what it
/// should have found.
pub fn measure(
    bin: &Path,
    backlog: &Backlog,
    db: &Path,
    n: usize,
    seed: u64,
) -> Res<ImportFigures> {
    step(n, "orchestra cold import");
    let (cold, cold_report) = import(bin, &backlog.project, db)?;
    if cold_report.new != n as u64 {
        return Err(format!("cold import: {} new, expected {n}", cold_report.new).into());
    }
    step(n, "orchestra re-import, nothing changed");
    let (same, same_report) = import(bin, &backlog.project, db)?;
    if same_report.unchanged != n as u64 {
        return Err(format!(
            "unchanged re-import: {} unchanged, expected {n}",
            same_report.unchanged
        )
        .into());
    }
    step(n, "orchestra re-import, 1% changed");
    let changed = touch_one_percent(backlog, n, seed, 1)?;
    let (delta, delta_report) = import(bin, &backlog.project, db)?;
    if delta_report.updated != changed as u64 {
        return Err(format!(
            "1% re-import: {} updated, expected {changed}",
            delta_report.updated
        )
        .into());
    }
    Ok(ImportFigures {
        cold,
        cold_report,
        same,
        same_report,
        delta,
        delta_report,
        changed,
    })
}

impl ImportFigures {
    /// Rates, times and peak RSS, beside the raw insert (`raw`) where it has
    /// one; with `raw_index_s`, the time FTS5 took to build the raw table's
    /// index, the cold import also beside the raw insert and that build.
    pub fn rows(&self, raw: &Finished, raw_index_s: Option<f64>, n: usize) -> Vec<Row> {
        let (cold, same, delta, changed) = (&self.cold, &self.same, &self.delta, self.changed);
        let rate = |s: f64| n as f64 / s;
        let mut rows = Vec::new();
        let (raw_rate, cold_rate) = (rate(raw.seconds), rate(cold.seconds));
        // Issue #15 asks more of the largest backlog.
        let least = if n >= ONE_MILLION { 0.8 } else { 0.5 };
        rows.push(Row {
            figure: "cold import rate".into(),
            unit: "docs/s",
            raw: Some(raw_rate),
            orchestra: Ok(cold_rate),
            ratio: ratio(raw_rate, cold_rate),
            target: format!("≥ {least}× raw"),
            meets: Some(cold_rate >= least * raw_rate),
            why: String::new(),
        });
        if let Some(index_s) = raw_index_s {
            // An import that builds its full-text index in its own
            // transaction (issue 10) leaves at least this to SQLite's one
            // writer: the insert of the rows, then FTS5's own build of the
            // same text (the raw child also reads the files on that thread,
            // which an import may do on others).
            let indexed_rate = rate(raw.seconds + index_s);
            rows.push(Row {
                figure: "cold import rate beside the raw insert with its index (raw: the insert, then FTS5's `'rebuild'` of title + body)".into(),
                unit: "docs/s",
                raw: Some(indexed_rate),
                orchestra: Ok(cold_rate),
                ratio: ratio(indexed_rate, cold_rate),
                target: String::new(),
                meets: None,
                why: format!(
                    "raw with its index: {} of raw alone",
                    ratio(raw_rate, indexed_rate)
                ),
            });
        }
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
        rows
    }
}
