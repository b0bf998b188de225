//! `orchestra check` (issue 34): its wall time on the database and the project folder (`check PROJECT --db DB --json`), median of 3, beside the cold import's for scale; skipped, with a line that says so, when the binary under test has no `check` (`orchestra check --help` fails).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use serde_json::{Value, json};

use crate::Res;
use crate::report::{Row, step};
use crate::stats::percentile_ms;
use crate::units::ratio;

/// Runs timed; the median is reported.
const RUNS: usize = 3;
/// Issue 34: `orchestra check` at 100k in at most this many seconds.
const TARGET_S: f64 = 5.0;

pub enum CheckFigures {
    /// The binary has no `check`: why (the first line of what it said).
    Skipped(String),
    Ran {
        seconds: Vec<f64>,
        /// 0: clean, 1: problems found.
        status: i32,
        /// Problems reported (`--json` prints one JSON line each), by kind.
        problems: BTreeMap<String, u64>,
    },
    /// `check` ended in an error (exit 2, or anything but 0 and 1).
    Failed { status: i32, stderr: String },
}

fn first_line(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes)
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim()
        .to_string()
}

/// `BIN check PROJECT --db DB --json`, `RUNS` times.
pub fn measure(bin: &Path, project: &Path, db: &Path, n: usize) -> Res<CheckFigures> {
    let help = Command::new(bin)
        .args(["check", "--help"])
        .stdin(Stdio::null())
        .output()?;
    if !help.status.success() {
        let why = first_line(&help.stderr);
        println!("[{n} docs] orchestra check: skipped: `orchestra check --help` failed ({why})");
        return Ok(CheckFigures::Skipped(why));
    }
    let mut seconds = Vec::with_capacity(RUNS);
    let mut last = None;
    for run in 0..RUNS {
        step(n, &format!("orchestra check, run {}", run + 1));
        let started = Instant::now();
        let output = Command::new(bin)
            .arg("check")
            .arg(project)
            .arg("--db")
            .arg(db)
            .arg("--json")
            .stdin(Stdio::null())
            .output()?;
        seconds.push(started.elapsed().as_secs_f64());
        let status = output.status.code().unwrap_or(-1);
        if status != 0 && status != 1 {
            let stderr = first_line(&output.stderr);
            eprintln!("[{n} docs] orchestra check failed (exit {status}): {stderr}");
            return Ok(CheckFigures::Failed { status, stderr });
        }
        last = Some((status, output.stdout));
    }
    let (status, stdout) = last.unwrap_or_default();
    let mut problems = BTreeMap::new();
    for line in String::from_utf8_lossy(&stdout).lines() {
        let problem: Value = serde_json::from_str(line)
            .map_err(|e| format!("orchestra check --json printed {line:?}: {e}"))?;
        let kind = problem["kind"].as_str().unwrap_or("?").to_string();
        *problems.entry(kind).or_default() += 1;
    }
    Ok(CheckFigures::Ran {
        seconds,
        status,
        problems,
    })
}

impl CheckFigures {
    /// One row: the median beside the cold import's time (`cold_s`).
    pub fn rows(&self, cold_s: f64, n: usize) -> Vec<Row> {
        let figure = format!(
            "`orchestra check --json` (raw: the cold import of the same files; median of {RUNS})"
        );
        let target = "≤ 5 s at 100k".to_string();
        let row = match self {
            CheckFigures::Skipped(why) => Row {
                figure,
                unit: "s",
                raw: Some(cold_s),
                orchestra: Err("skipped"),
                ratio: String::new(),
                target,
                meets: None,
                why: format!("no `check` in this binary: {why}"),
            },
            CheckFigures::Failed { status, stderr } => Row {
                figure,
                unit: "s",
                raw: Some(cold_s),
                orchestra: Err("failed"),
                ratio: String::new(),
                target,
                meets: None,
                why: format!("exit {status}: {stderr}"),
            },
            CheckFigures::Ran {
                seconds,
                status,
                problems,
            } => {
                let median = percentile_ms(seconds, 50.0);
                Row {
                    figure,
                    unit: "s",
                    raw: Some(cold_s),
                    orchestra: Ok(median),
                    ratio: ratio(cold_s, median),
                    target,
                    meets: (n == 100_000).then_some(median <= TARGET_S),
                    why: match status {
                        0 => "exit 0: clean".to_string(),
                        _ => format!(
                            "exit 1: {}",
                            problems
                                .iter()
                                .map(|(kind, count)| format!("{count} {kind}"))
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    },
                }
            }
        };
        vec![row]
    }

    pub fn to_json(&self) -> Value {
        match self {
            CheckFigures::Skipped(why) => json!({"skipped": why}),
            CheckFigures::Failed { status, stderr } => {
                json!({"failed": {"status": status, "stderr": stderr}})
            }
            CheckFigures::Ran {
                seconds,
                status,
                problems,
            } => json!({"seconds": seconds, "status": status, "problems": problems}),
        }
    }
}
