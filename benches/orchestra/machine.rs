//! The binary under test (`$ORCHESTRA_BIN`, warned about when older than `src/`), the optional baseline binaries (without a search index: `$ORCHESTRA_BASELINE_BIN`; without link extraction: `$ORCHESTRA_LINKS_BASELINE_BIN`; from before history: `$ORCHESTRA_NOHISTORY_BIN`), and the machine, toolchain and commit a run reports.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::Res;

pub fn orchestra_bin() -> Res<PathBuf> {
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

/// `$ORCHESTRA_BASELINE_BIN`: an orchestra that keeps no search index (the
/// same commit with the index writes made no-ops, or one from before search,
/// e.g. 9be2234), for the import cost of the index; `None` when unset.
pub fn baseline_bin() -> Res<Option<PathBuf>> {
    let Some(path) = std::env::var_os("ORCHESTRA_BASELINE_BIN") else {
        return Ok(None);
    };
    let bin = PathBuf::from(path);
    if !bin.is_file() {
        return Err(format!("ORCHESTRA_BASELINE_BIN: no binary at {}", bin.display()).into());
    }
    Ok(Some(bin))
}

/// `$ORCHESTRA_NOHISTORY_BIN`: an orchestra from before history, for the
/// 1% re-import beside it.
pub fn no_history_bin() -> Res<Option<PathBuf>> {
    let Some(path) = std::env::var_os("ORCHESTRA_NOHISTORY_BIN") else {
        return Ok(None);
    };
    let bin = PathBuf::from(path);
    if !bin.is_file() {
        return Err(format!("ORCHESTRA_NOHISTORY_BIN: no binary at {}", bin.display()).into());
    }
    Ok(Some(bin))
}

/// `$ORCHESTRA_LINKS_BASELINE_BIN`: an orchestra built from the same commit
/// with `links::extract` made a no-op (see BENCHMARKS.md), for the import
/// cost of links; `None` when unset.
pub fn links_baseline_bin() -> Res<Option<PathBuf>> {
    let Some(path) = std::env::var_os("ORCHESTRA_LINKS_BASELINE_BIN") else {
        return Ok(None);
    };
    let bin = PathBuf::from(path);
    if !bin.is_file() {
        return Err(format!(
            "ORCHESTRA_LINKS_BASELINE_BIN: no binary at {}",
            bin.display()
        )
        .into());
    }
    Ok(Some(bin))
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

pub fn machine() -> Value {
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
