//! Import: walks a project folder, decides what changed since the last import, and writes it to the store in one transaction.
//!
//! The work runs as a pipeline of threads joined by bounded channels:
//! the walk (`walk`) yields the document files in key order with their size
//! and mtime; the comparison (`merge`) meets them with the stored documents,
//! also in key order (`StoredStats`); files whose size and mtime match are
//! never read, the others go to reader threads (`read`), which read, hash
//! and parse them; this thread writes what they made of them, and the
//! removals, into the import's one transaction.
//!
//! Memory: a file's bytes live from its read to its insert, and neither the
//! walk nor the stored side is ever held whole: what import holds does not
//! grow with the number of documents (the largest thing is the listing of
//! the folder being walked: its names and 12 bytes an entry).

pub mod data_folder;
mod merge;
mod read;
mod walk;

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use crossbeam_channel::Receiver;
use serde::Serialize;

pub use crate::doc::ChangeKind;
use crate::doc::DocKey;
use crate::store::{Access, ImportTx, Location, NewDocument, SkippedFile, Store, StoredStats};
use merge::Decisions;
use read::{Candidate, Outcome};

/// Files larger than this are skipped unless `--max-file-size` says otherwise.
pub const DEFAULT_MAX_FILE_SIZE: u64 = 32 * 1024 * 1024;

/// Imports that read fewer files than this show no progress.
const PROGRESS_THRESHOLD: u64 = 1000;

/// Files in flight between the walk, the readers and the writer.
const QUEUE_DEPTH: usize = 256;

#[derive(Debug, Clone)]
pub struct Options {
    pub dir: PathBuf,
    pub db: Location,
    pub dry_run: bool,
    pub replace: bool,
    pub max_file_size: u64,
    /// Show a running count of the files read on stderr (only when it is a
    /// terminal).
    pub progress: bool,
}

/// A problem with one file; the import goes on without (or despite) it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Warning {
    #[serde(serialize_with = "lossy_path")]
    pub path: PathBuf,
    pub reason: String,
    /// The file was left out, not only noted: the last import's list of
    /// those is kept in the database for `orchestra check`.
    #[serde(skip)]
    pub skipped: bool,
}

/// Paths in `--json` output: a file name that is not UTF-8 is shown with
/// replacement characters rather than failing the report.
fn lossy_path<S: serde::Serializer>(path: &Path, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&path.to_string_lossy())
}

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.reason)
    }
}

/// What one import did (or, with `--dry-run`, would do).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    pub new: u64,
    pub updated: u64,
    pub removed: u64,
    pub unchanged: u64,
    /// Files that could have been documents but were not imported.
    pub skipped: u64,
    /// Files and folders that are not documents (not Markdown, or outside the prefixes).
    pub ignored: u64,
    pub seconds: f64,
    pub dry_run: bool,
    /// The change sequence number of this import; 0 when nothing changed.
    pub seq: i64,
    pub warnings: Vec<Warning>,
    /// What a dry run would change, in key order (empty for an import).
    #[serde(skip)]
    pub changes: Vec<(ChangeKind, DocKey)>,
}

impl Report {
    pub fn changed(&self) -> bool {
        self.new + self.updated + self.removed > 0
    }

    fn record(&mut self, kind: ChangeKind, key: DocKey) {
        match kind {
            ChangeKind::New => self.new += 1,
            ChangeKind::Updated => self.updated += 1,
            ChangeKind::Removed => self.removed += 1,
        }
        // Only a dry run lists them: an import of a million files must
        // not hold a million keys to say so.
        if self.dry_run {
            self.changes.push((kind, key));
        }
    }

    /// The summary line, e.g. `imported ./p: 3 new, 1 updated, ... in 0.41 s`.
    pub fn summary(&self, dir: &Path) -> String {
        let verb = if self.dry_run {
            "would import"
        } else {
            "imported"
        };
        let warned = if !self.warnings.is_empty() {
            " (warnings above)"
        } else {
            ""
        };
        format!(
            "{verb} {}: {} new, {} updated, {} removed, {} unchanged, {} skipped{warned}, {} ignored in {:.2} s",
            dir.display(),
            self.new,
            self.updated,
            self.removed,
            self.unchanged,
            self.skipped,
            self.ignored,
            self.seconds
        )
    }
}

/// Whether `dir` holds a project: any of the prefix folders.
pub fn is_project(dir: &Path) -> bool {
    crate::doc::Prefix::ALL
        .iter()
        .any(|prefix| dir.join(prefix.as_str()).is_dir())
}

/// Runs one import. Errors are fatal (nothing was written); problems with
/// single files are warnings in the report.
pub fn run(opts: &Options) -> Result<Report> {
    let started = Instant::now();
    let root = checked_root(&opts.dir)?;
    let root_text = root
        .to_str()
        .with_context(|| format!("cannot import {}: the path is not UTF-8", root.display()))?
        .to_string();

    let mut report = Report {
        dry_run: opts.dry_run,
        ..Report::default()
    };
    // The database exists before the walk starts, so that the walk knows
    // its files when it lives inside the project.
    let store = match (opts.dry_run, &opts.db) {
        (true, db) if Store::is_fresh(db)? => None,
        (true, db) => Some(Store::open(db, Access::ReadOnly)?),
        (false, db) => Some(Store::open(db, Access::Create)?),
    };
    if let (false, Location::File(path)) = (opts.dry_run, &opts.db)
        && let Err(e) = data_folder::keep_out_of_git(path)
    {
        report.warnings.push(Warning {
            path: path.with_file_name(".gitignore"),
            reason: format!("cannot write it ({e}): the database may be committed by mistake"),
            skipped: false,
        });
    }
    let own_files = match &opts.db {
        Location::File(path) => database_files(path),
        Location::Postgres(_) => Vec::new(),
    };
    let tx = match &store {
        Some(store) if !opts.dry_run => Some(store.begin_import(&root_text, opts.replace)?),
        _ => None,
    };
    let read = || format!("cannot read the database {}", opts.db);
    // Begun after the write lock was taken: the scan sees the database as
    // this import found it.
    let stored = match (&store, &tx) {
        (Some(_), Some(tx)) if tx.starts_empty() => StoredStats::empty(),
        (Some(store), Some(tx)) => store.scan(tx.replaces()).with_context(read)?,
        (Some(store), None) => store
            .preview_import(&root_text, opts.replace)
            .with_context(read)?,
        (None, _) => StoredStats::empty(),
    };

    let shown = |path: &Path| opts.dir.join(path.strip_prefix(&root).unwrap_or(path));
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get());
    let (discovery, merged) = std::thread::scope(|scope| -> Result<_> {
        let (walked, walked_rx) = crossbeam_channel::bounded(QUEUE_DEPTH);
        let (read_tx, read_rx) = crossbeam_channel::bounded::<Candidate>(QUEUE_DEPTH);
        let (done, done_rx) = crossbeam_channel::bounded::<Outcome>(QUEUE_DEPTH);
        let walker = scope.spawn(|| walk::discover(&root, &opts.dir, &own_files, walked));
        let decisions = Decisions {
            read: read_tx,
            write: done.clone(),
            max_file_size: opts.max_file_size,
            shown: &shown,
        };
        let merger = scope.spawn(move || merge::merge(walked_rx, stored, decisions));
        for _ in 0..workers {
            let (read_rx, done) = (read_rx.clone(), done.clone());
            let shown = &shown;
            scope.spawn(move || {
                for candidate in read_rx {
                    let mut outcome = read::read_candidate(candidate, opts.max_file_size, shown);
                    if let read::Outcome::Put { doc, .. } = &mut outcome {
                        opts.db.prepare(doc);
                    }
                    if done.send(outcome).is_err() {
                        break;
                    }
                }
            });
        }
        drop((done, read_rx));
        // On an error the receiver drops: the readers, the comparison and
        // the walk stop at their next send, and the scope waits for them.
        let written = write(tx.as_ref(), done_rx, opts, &mut report);
        let merged = merger
            .join()
            .map_err(|_| anyhow::anyhow!("the comparison with the database failed"))?;
        let discovery = walker
            .join()
            .map_err(|_| anyhow::anyhow!("the walk of {} failed", opts.dir.display()))?;
        written.with_context(|| format!("cannot write to the database {}", opts.db))?;
        Ok((discovery, merged.with_context(read)?))
    })?;
    report.warnings.extend(discovery.warnings);
    report.warnings.extend(merged.warnings);
    report.skipped += discovery.skipped + merged.skipped;
    report.ignored += discovery.ignored;
    report.unchanged += merged.unchanged;

    if let Some(tx) = tx {
        tx.record_skipped(skipped_files(&report.warnings, &opts.dir))
            .with_context(|| format!("cannot write to the database {}", opts.db))?;
        let changed = report.changed();
        if changed {
            report.seq = tx.seq();
        }
        tx.commit(changed)
            .with_context(|| format!("cannot write to the database {}", opts.db))?;
    }
    // Reader threads finish in any order; reports list changes by key.
    report.changes.sort_by(|a, b| a.1.cmp(&b.1));
    report.warnings.sort_by(|a, b| a.path.cmp(&b.path));
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

/// One file of the project read as an import reads it: the document the
/// store takes (its mtime the file's now), for a write that imports the
/// file it has just replaced (`write`). An error says why it cannot be a
/// document (unreadable, over `max_file_size`).
pub fn read_one(
    path: &Path,
    key: DocKey,
    max_file_size: u64,
    db: &Location,
) -> Result<NewDocument> {
    let meta =
        std::fs::metadata(path).with_context(|| format!("cannot read {}", path.display()))?;
    let candidate = Candidate {
        key,
        path: path.to_path_buf(),
        mtime_ns: walk::mtime_ns(&meta),
        old: None,
    };
    match read::read_candidate(candidate, max_file_size, &|p| p.to_path_buf()) {
        Outcome::Put { doc, .. } => {
            let mut doc = *doc;
            db.prepare(&mut doc);
            Ok(doc)
        }
        Outcome::Skipped(warning) => bail!("{warning}"),
        Outcome::Touch(..) | Outcome::Removed(_) => {
            unreachable!("a file without a stored stat is always read")
        }
    }
}

/// The files left out, by their paths in the project (the warnings show
/// them under the folder as it was named).
fn skipped_files(warnings: &[Warning], dir: &Path) -> Vec<SkippedFile> {
    let mut files: Vec<SkippedFile> = warnings
        .iter()
        .filter(|w| w.skipped)
        .map(|w| {
            let relative = w.path.strip_prefix(dir).unwrap_or(&w.path);
            SkippedFile {
                path: relative.to_string_lossy().replace('\\', "/"),
                reason: w.reason.clone(),
            }
        })
        .collect();
    files.sort_by(|a, b| a.path.cmp(&b.path));
    files
}

/// The writer: what the readers and the comparison decided, into the
/// import's transaction (none for a dry run), as it comes.
fn write(
    tx: Option<&ImportTx>,
    outcomes: Receiver<Outcome>,
    opts: &Options,
    report: &mut Report,
) -> Result<()> {
    let progress = Progress::new(opts.progress);
    for outcome in outcomes {
        match outcome {
            Outcome::Put {
                doc,
                updated,
                warning,
            } => {
                progress.read();
                let kind = if updated {
                    ChangeKind::Updated
                } else {
                    ChangeKind::New
                };
                if let Some(tx) = tx {
                    tx.put(&doc)?;
                    tx.record(kind, &doc.key)?;
                }
                report.warnings.extend(warning);
                report.record(kind, doc.key);
            }
            Outcome::Touch(key, mtime_ns) => {
                progress.read();
                if let Some(tx) = tx {
                    tx.touch(&key, mtime_ns)?;
                }
                report.unchanged += 1;
            }
            Outcome::Skipped(warning) => {
                progress.read();
                report.warnings.push(warning);
                report.skipped += 1;
            }
            Outcome::Removed(key) => {
                if let Some(tx) = tx {
                    tx.remove(&key)?;
                    tx.record(ChangeKind::Removed, &key)?;
                }
                report.record(ChangeKind::Removed, key);
            }
        }
    }
    progress.finish();
    Ok(())
}

/// A count of the files read, on stderr when it is a terminal, once there
/// are enough of them to wait for. The total is not known before the walk
/// ends, so it counts rather than fills a bar.
struct Progress(Option<indicatif::ProgressBar>);

impl Progress {
    fn new(wanted: bool) -> Progress {
        Progress((wanted && std::io::stderr().is_terminal()).then(|| {
            let bar = indicatif::ProgressBar::with_draw_target(
                None,
                indicatif::ProgressDrawTarget::hidden(),
            );
            bar.set_style(
                indicatif::ProgressStyle::with_template("{spinner} {pos} files read {per_sec}")
                    .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
            );
            bar
        }))
    }

    fn read(&self) {
        if let Some(bar) = &self.0 {
            bar.inc(1);
            if bar.position() == PROGRESS_THRESHOLD {
                bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
            }
        }
    }

    fn finish(&self) {
        if let Some(bar) = &self.0 {
            bar.finish_and_clear();
        }
    }
}

/// The database and its companion files, as the walk would meet them: a
/// database kept inside the project must never import itself.
fn database_files(db: &Path) -> Vec<PathBuf> {
    let (Some(parent), Some(name)) = (db.parent(), db.file_name()) else {
        return Vec::new();
    };
    let parent = if parent.as_os_str().is_empty() {
        Path::new(".")
    } else {
        parent
    };
    let Ok(parent) = parent.canonicalize() else {
        return Vec::new();
    };
    ["", "-wal", "-shm", "-journal"]
        .iter()
        .map(|suffix| {
            let mut file = name.to_os_string();
            file.push(suffix);
            parent.join(file)
        })
        .collect()
}

fn checked_root(dir: &Path) -> Result<PathBuf> {
    let meta = std::fs::metadata(dir).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => {
            anyhow::anyhow!("cannot import {}: no such folder", dir.display())
        }
        _ => anyhow::anyhow!("cannot import {}: {e}", dir.display()),
    })?;
    if !meta.is_dir() {
        bail!("cannot import {}: not a folder", dir.display());
    }
    dir.canonicalize()
        .with_context(|| format!("cannot import {}", dir.display()))
}
