//! `orchestra stats`: what the database holds: documents and bytes per prefix, the history (versions, past bodies and their compression), its size and the search index's share, the project, the schema version and the last import.

use std::collections::BTreeMap;
use std::io::Write;

use anyhow::Result;
use clap::Args;
use serde::Serialize;

use orchestra::store::{HistoryStats, StoreStats};

use super::DbArg;
use super::out::{self, Out};

#[derive(Args)]
pub struct StatsArgs {
    /// Print one JSON object, sizes in bytes.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    db: DbArg,
}

/// `stats --json`.
#[derive(Serialize)]
struct JsonStats {
    documents: u64,
    bytes: u64,
    /// By prefix name, every prefix.
    prefixes: BTreeMap<&'static str, Count>,
    history: JsonHistory,
    database_bytes: u64,
    index_bytes: u64,
    project_root: Option<String>,
    schema_version: usize,
    /// `null` before any import changed anything.
    last_import: Option<Import>,
}

/// What the history holds.
#[derive(Serialize)]
struct JsonHistory {
    /// Every version, current ones and removals included.
    versions: u64,
    /// Documents with more than one version.
    documents_with_history: u64,
    /// Past bodies stored (once per distinct content), their bytes as
    /// stored (compressed) and as they were.
    bodies: u64,
    stored_bytes: u64,
    raw_bytes: u64,
    /// `raw_bytes / stored_bytes`; `null` when nothing is stored.
    compression_ratio: Option<f64>,
}

#[derive(Serialize)]
struct Count {
    documents: u64,
    bytes: u64,
}

#[derive(Serialize)]
struct Import {
    seq: i64,
    time: Option<String>,
}

/// Prints the statistics; there always are some.
pub fn run(args: &StatsArgs) -> Result<bool> {
    let reader = super::open(&args.db)?;
    // The documents and their history from one commit.
    let (stats, history) =
        reader.in_transaction(|| Ok((reader.stats()?, reader.history_stats()?)))?;
    let documents = stats.prefixes.iter().map(|p| p.documents).sum();
    let bytes = stats.prefixes.iter().map(|p| p.bytes).sum();
    let last_import = (stats.last_seq > 0).then(|| Import {
        seq: stats.last_seq,
        time: stats.last_import_ms.and_then(out::time_ms),
    });
    let mut out = Out::pageable();
    if args.json {
        let json = JsonStats {
            documents,
            bytes,
            prefixes: stats
                .prefixes
                .iter()
                .map(|p| {
                    let count = Count {
                        documents: p.documents,
                        bytes: p.bytes,
                    };
                    (p.prefix.as_str(), count)
                })
                .collect(),
            history: JsonHistory {
                versions: history.versions,
                documents_with_history: history.documents_with_history,
                bodies: history.bodies,
                stored_bytes: history.stored_bytes,
                raw_bytes: history.raw_bytes,
                compression_ratio: ratio(&history),
            },
            database_bytes: stats.database_bytes,
            index_bytes: stats.index_bytes,
            project_root: stats.project_root.clone(),
            schema_version: stats.schema_version,
            last_import,
        };
        writeln!(out, "{}", serde_json::to_string(&json)?)?;
    } else {
        let lines = out::fields(
            &fields(&stats, &history, documents, bytes, last_import),
            out::colour(),
        );
        for line in lines {
            writeln!(out, "{line}")?;
        }
    }
    out.finish()?;
    Ok(true)
}

/// The `key: value` lines of the plain output.
fn fields(
    stats: &StoreStats,
    history: &HistoryStats,
    documents: u64,
    bytes: u64,
    last_import: Option<Import>,
) -> Vec<(String, String)> {
    let count = |documents: u64, bytes: u64| format!("{documents} ({})", out::size(bytes));
    let mut fields = vec![("documents".to_string(), count(documents, bytes))];
    for p in &stats.prefixes {
        fields.push((format!("  {}", p.prefix), count(p.documents, p.bytes)));
    }
    let with_history = match history.documents_with_history {
        1 => "1 document with more than one".to_string(),
        n => format!("{n} documents with more than one"),
    };
    fields.push((
        "history".to_string(),
        format!("{} versions, {with_history}", history.versions),
    ));
    let ratio = ratio(history).map_or("—".to_string(), |r| format!("{r:.1}×"));
    fields.push((
        "  past bodies".to_string(),
        format!(
            "{} ({} stored, {} raw, ratio {ratio})",
            history.bodies,
            out::size(history.stored_bytes),
            out::size(history.raw_bytes)
        ),
    ));
    let mut database = out::size(stats.database_bytes);
    if stats.database_bytes > 0 {
        let share = stats.index_bytes as f64 * 100.0 / stats.database_bytes as f64;
        database.push_str(&format!(
            " (search index {}, {share:.0}%)",
            out::size(stats.index_bytes)
        ));
    }
    fields.push(("database".to_string(), database));
    let project = stats.project_root.clone();
    fields.push((
        "project".to_string(),
        project.unwrap_or_else(|| "none".to_string()),
    ));
    fields.push((
        "schema version".to_string(),
        stats.schema_version.to_string(),
    ));
    let last_import = match last_import {
        None => "none".to_string(),
        Some(Import { seq, time: None }) => seq.to_string(),
        Some(Import {
            seq,
            time: Some(time),
        }) => format!("{seq} at {time}"),
    };
    fields.push(("last import".to_string(), last_import));
    fields
}

/// How many times smaller the past bodies are stored than they were:
/// `raw / stored`; `None` when nothing is stored.
fn ratio(history: &HistoryStats) -> Option<f64> {
    (history.stored_bytes > 0).then(|| history.raw_bytes as f64 / history.stored_bytes as f64)
}
