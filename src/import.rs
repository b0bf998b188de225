//! Import: walks a project folder, decides what changed since the last import, and writes it to the store in one transaction.
//!
//! The work runs as a small pipeline. The walk (a thread) lists the prefix
//! folders and hands each Markdown file to stat threads, while this thread
//! loads the stored size, mtime and hash of every document. Files whose size
//! and mtime match are never read; the others go to reader threads, which
//! read, hash and parse them, and this thread writes their rows.
//!
//! Memory: a file's bytes live from its read to its insert, through bounded
//! channels, so bodies never pile up. The bookkeeping — stored stats and the
//! walk's list of files — grows with the number of files, about 600 bytes
//! each (60 MB at 100k files).

use std::fs::File;
use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::time::{Instant, UNIX_EPOCH};

use anyhow::{Context, Result, bail};
use serde::Serialize;
use walkdir::WalkDir;

pub use crate::doc::ChangeKind;
use crate::doc::{DocKey, Prefix, is_valid_id};
use crate::frontmatter;
use crate::store::{FileStat, ImportTx, NewDocument, Stats, Store};
use rustc_hash::FxHashSet;

/// Files larger than this are skipped unless `--max-file-size` says otherwise.
pub const DEFAULT_MAX_FILE_SIZE: u64 = 32 * 1024 * 1024;

/// Imports smaller than this do not get a progress bar.
const PROGRESS_THRESHOLD: usize = 1000;

/// Files in flight between the walk, the readers and the writer.
const QUEUE_DEPTH: usize = 256;

#[derive(Debug, Clone)]
pub struct Options {
    pub dir: PathBuf,
    pub db: PathBuf,
    pub dry_run: bool,
    pub replace: bool,
    pub max_file_size: u64,
    /// Draw a progress bar on stderr (only when it is a terminal).
    pub progress: bool,
}

/// A problem with one file; the import goes on without (or despite) it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Warning {
    #[serde(serialize_with = "lossy_path")]
    pub path: PathBuf,
    pub reason: String,
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
        self.changes.push((kind, key));
    }

    fn warn(&mut self, path: &Path, reason: impl Into<String>) {
        self.warnings.push(Warning {
            path: path.to_path_buf(),
            reason: reason.into(),
        });
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

/// A Markdown file found by the walk that must be read.
struct Candidate {
    key: DocKey,
    path: PathBuf,
    mtime_ns: i64,
    old: Option<FileStat>,
}

/// What a reader thread made of a candidate.
enum Outcome {
    Put(Box<NewDocument>, Option<Warning>),
    /// Same bytes as stored, new mtime.
    Touch(DocKey, i64),
    /// Unreadable now, or grown past the limit since the walk: the store
    /// keeps what it has.
    Skipped(Warning),
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
    let store = match opts.dry_run {
        true if opts.db.exists() => Some(Store::open_read_only(&opts.db)?),
        true => None,
        false => Some(Store::open_or_create(&opts.db)?),
    };
    let own_files = database_files(&opts.db);
    // The walk (file system) and the stored stats (database) do not depend
    // on each other: one runs on a thread while the other runs here.
    let (discovery, tx, mut existing) = std::thread::scope(|scope| -> Result<_> {
        let walker = scope.spawn(|| discover(&root, &opts.dir, &own_files));
        let (tx, existing) = match &store {
            None => (None, Stats::default()),
            Some(store) if opts.dry_run => (None, store.preview_import(&root_text, opts.replace)?),
            Some(store) => {
                let tx = store.begin_import(&root_text, opts.replace)?;
                let stats = tx
                    .stats()
                    .with_context(|| format!("cannot read the database {}", opts.db.display()))?;
                (Some(tx), stats)
            }
        };
        let discovery = walker
            .join()
            .map_err(|_| anyhow::anyhow!("the walk of {} failed", opts.dir.display()))?;
        Ok((discovery, tx, existing))
    })?;
    report.warnings.extend(discovery.warnings);
    report.skipped += discovery.skipped;
    report.ignored += discovery.ignored;
    let walk = classify(discovery.found, opts, &existing, &mut report);
    report.unchanged += walk.unchanged;
    let written = || format!("cannot write to the database {}", opts.db.display());
    apply(tx.as_ref(), walk.candidates, opts, &mut report).with_context(written)?;

    // What the walk did not see is gone, unless it sat in a folder that could
    // not be read this time.
    let mut removed: Vec<DocKey> = existing
        .drain()
        .map(|(key, _)| key)
        .filter(|key| !walk.seen.contains(key))
        .filter(|key| !discovery.unreadable.iter().any(|dir| is_under(key, dir)))
        .collect();
    removed.sort();
    for key in removed {
        if let Some(tx) = &tx {
            tx.remove(&key)
                .and_then(|()| tx.record(ChangeKind::Removed, &key))
                .with_context(written)?;
        }
        report.record(ChangeKind::Removed, key);
    }

    if let Some(tx) = tx {
        let changed = report.changed();
        if changed {
            report.seq = tx.seq();
        }
        tx.commit(changed).with_context(written)?;
    }
    // Reader threads finish in any order; reports list changes by key.
    report.changes.sort_by(|a, b| a.1.cmp(&b.1));
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
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

/// Whether `key` lies in the folder `dir` of its prefix.
fn is_under(key: &DocKey, dir: &DocKey) -> bool {
    key.prefix == dir.prefix
        && (dir.id.is_empty()
            || key
                .id
                .strip_prefix(&dir.id)
                .is_some_and(|rest| rest.starts_with('/')))
}

/// Threads that stat files during the walk: stat is a system call per file,
/// most of what a re-import with nothing changed costs.
const STAT_THREADS: usize = 2;

/// Files handed to a stat thread at once: one channel operation per file
/// costs more in thread wake-ups than the stat itself.
const STAT_BATCH: usize = 128;

/// Files on their way from the walk to the stat threads.
struct Batch {
    files: Vec<(DocKey, PathBuf)>,
    todo: crossbeam_channel::Sender<Vec<(DocKey, PathBuf)>>,
}

impl Batch {
    /// Queues a file; false when the stat threads are gone.
    fn push(&mut self, key: DocKey, path: PathBuf) -> bool {
        self.files.push((key, path));
        self.files.len() < STAT_BATCH || self.flush()
    }

    fn flush(&mut self) -> bool {
        let files = std::mem::replace(&mut self.files, Vec::with_capacity(STAT_BATCH));
        files.is_empty() || self.todo.send(files).is_ok()
    }
}

/// A document file found by the walk, and its size and mtime.
struct Found {
    key: DocKey,
    path: PathBuf,
    stat: std::io::Result<(u64, i64)>,
}

/// What the walk found, before any comparison with the store.
#[derive(Default)]
struct Discovery {
    found: Vec<Found>,
    /// Folders that could not be listed: documents under them are kept.
    unreadable: Vec<DocKey>,
    warnings: Vec<Warning>,
    skipped: u64,
    ignored: u64,
}

impl Discovery {
    fn warn(&mut self, path: PathBuf, reason: impl Into<String>) {
        self.warnings.push(Warning {
            path,
            reason: reason.into(),
        });
        self.skipped += 1;
    }
}

/// Walks the prefix folders for document files, and stats each on a pool of
/// threads while the walk goes on.
fn discover(root: &Path, shown_root: &Path, own_files: &[PathBuf]) -> Discovery {
    let (todo, todo_rx) = crossbeam_channel::bounded::<Vec<(DocKey, PathBuf)>>(QUEUE_DEPTH);
    std::thread::scope(|scope| {
        let statters: Vec<_> = (0..STAT_THREADS)
            .map(|_| {
                let todo_rx = todo_rx.clone();
                scope.spawn(move || {
                    todo_rx
                        .into_iter()
                        .flatten()
                        .map(|(key, path)| {
                            let stat =
                                std::fs::metadata(&path).map(|meta| (meta.len(), mtime_ns(&meta)));
                            Found { key, path, stat }
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        drop(todo_rx);
        let mut batch = Batch {
            files: Vec::with_capacity(STAT_BATCH),
            todo,
        };
        let mut discovery = walk(root, shown_root, own_files, &mut batch);
        batch.flush();
        drop(batch);
        for statter in statters {
            // A stat thread cannot panic short of a bug; lose nothing silently.
            match statter.join() {
                Ok(found) => discovery.found.extend(found),
                Err(_) => discovery.warn(shown_root.to_path_buf(), "the walk failed"),
            }
        }
        discovery
    })
}

fn mtime_ns(meta: &std::fs::Metadata) -> i64 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// The traversal: every Markdown file under the prefix folders goes to
/// `todo`; symlinks out of the project, loops, hidden entries and other
/// files are sorted out here.
fn walk(root: &Path, shown_root: &Path, own_files: &[PathBuf], todo: &mut Batch) -> Discovery {
    let mut found = Discovery::default();
    let shown = |path: &Path| shown_root.join(path.strip_prefix(root).unwrap_or(path));

    // Top level: the prefix folders; everything else is counted as ignored.
    match std::fs::read_dir(root) {
        Ok(entries) => {
            for entry in entries.flatten() {
                let name = entry.file_name();
                let name = name.to_string_lossy();
                let own = own_files.iter().any(|own| *own == entry.path());
                if !own && !name.starts_with('.') && Prefix::parse(&name).is_none() {
                    found.ignored += 1;
                }
            }
        }
        Err(e) => found.warn(
            shown_root.to_path_buf(),
            format!("cannot list the folder: {e}"),
        ),
    }

    for prefix in Prefix::ALL {
        let base = root.join(prefix.as_str());
        if std::fs::symlink_metadata(&base).is_err() {
            continue;
        }
        let mut entries = WalkDir::new(&base)
            .follow_links(true)
            .into_iter()
            .filter_entry(|e| e.depth() == 0 || !e.file_name().to_string_lossy().starts_with('.'));
        while let Some(entry) = entries.next() {
            let entry = match entry {
                Ok(entry) => entry,
                Err(e) => {
                    let path = e
                        .path()
                        .map(Path::to_path_buf)
                        .unwrap_or_else(|| base.clone());
                    if e.loop_ancestor().is_some() {
                        found.warn(shown(&path), "symlink loop: skipped");
                    } else if path.is_dir() {
                        found.warn(shown(&path), format!("cannot list the folder: {e}"));
                        if let Ok(id) = id_of(&base, &path) {
                            found.unreadable.push(DocKey::new(prefix, id));
                        }
                    } else {
                        found.warn(shown(&path), format!("cannot read: {e}"));
                    }
                    continue;
                }
            };
            let path = entry.path();
            if entry.path_is_symlink() {
                match path.canonicalize() {
                    Ok(target) if target.starts_with(root) => {}
                    Ok(target) => {
                        found.warn(
                            shown(path),
                            format!(
                                "symlink to {} outside the project: skipped",
                                target.display()
                            ),
                        );
                        if entry.file_type().is_dir() {
                            entries.skip_current_dir();
                        }
                        continue;
                    }
                    Err(e) => {
                        found.warn(shown(path), format!("broken symlink: {e}"));
                        continue;
                    }
                }
            }
            if entry.file_type().is_dir() {
                continue;
            }
            // The database's own files are neither documents nor the
            // project's other files: passed over, not counted.
            // Names first: a path comparison for every file of a large
            // project costs more than the rest of the walk.
            if own_files
                .iter()
                .any(|own| own.file_name() == Some(entry.file_name()) && own == path)
            {
                continue;
            }
            let is_markdown = path.extension().is_some_and(|ext| ext == "md");
            if !is_markdown || !entry.file_type().is_file() {
                found.ignored += 1;
                continue;
            }
            let id = match id_of(&base, path) {
                Ok(id) => id.strip_suffix(".md").unwrap_or(&id).to_string(),
                Err(reason) => {
                    found.warn(shown(path), reason);
                    continue;
                }
            };
            if !is_valid_id(&id) {
                found.warn(
                    shown(path),
                    "the file name cannot be a document id: skipped",
                );
                continue;
            }
            if !todo.push(DocKey::new(prefix, id), entry.into_path()) {
                break;
            }
        }
    }
    found
}

struct Walk {
    candidates: Vec<Candidate>,
    seen: FxHashSet<DocKey>,
    unchanged: u64,
}

/// Compares what the walk found with the store: files whose size and mtime
/// match are unchanged and never read; the others become candidates.
fn classify(found: Vec<Found>, opts: &Options, existing: &Stats, report: &mut Report) -> Walk {
    let mut walk = Walk {
        candidates: Vec::new(),
        seen: FxHashSet::with_capacity_and_hasher(existing.len(), Default::default()),
        unchanged: 0,
    };
    let root = opts.dir.canonicalize().unwrap_or_else(|_| opts.dir.clone());
    let shown = |path: &Path| opts.dir.join(path.strip_prefix(&root).unwrap_or(path));
    let max_file_size = opts.max_file_size;
    for Found { key, path, stat } in found {
        let (size, mtime_ns) = match stat {
            Ok(stat) => stat,
            Err(e) => {
                report.warn(&shown(&path), format!("cannot read: {e}"));
                report.skipped += 1;
                // The stored copy is kept.
                walk.seen.insert(key);
                continue;
            }
        };
        if size > max_file_size {
            report.warn(
                &shown(&path),
                format!("{size} bytes is over the limit of {max_file_size}: skipped"),
            );
            report.skipped += 1;
            // Like an unreadable file: the stored copy is kept.
            walk.seen.insert(key);
            continue;
        }
        let old = existing.get(&key).copied();
        if !walk.seen.insert(key.clone()) {
            // Two paths, one key: only through a symlink; the first wins.
            continue;
        }
        match old {
            Some(old) if old.size == size && old.mtime_ns == mtime_ns => walk.unchanged += 1,
            _ => walk.candidates.push(Candidate {
                key,
                path,
                mtime_ns,
                old,
            }),
        }
    }
    walk
}

/// The `/`-separated path of `path` below `base`, or why it has none. The
/// walk only yields paths that extend `base`, so on Unix this is a slice of
/// the path's bytes: it runs for every file of every import.
fn id_of(base: &Path, path: &Path) -> Result<String, String> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let (base, path) = (base.as_os_str().as_bytes(), path.as_os_str().as_bytes());
        if let Some(rel) = path.strip_prefix(base) {
            let rel = rel.strip_prefix(b"/").unwrap_or(rel);
            return std::str::from_utf8(rel)
                .map(str::to_string)
                .map_err(|_| "the file name is not UTF-8: skipped".to_string());
        }
    }
    let rel = path.strip_prefix(base).map_err(|e| e.to_string())?;
    let mut parts = Vec::new();
    for part in rel.components() {
        match part.as_os_str().to_str() {
            Some(s) => parts.push(s),
            None => return Err("the file name is not UTF-8: skipped".to_string()),
        }
    }
    Ok(parts.join("/"))
}

/// Reads the candidates on worker threads and writes the results here.
fn apply(
    tx: Option<&ImportTx>,
    candidates: Vec<Candidate>,
    opts: &Options,
    report: &mut Report,
) -> Result<()> {
    if candidates.is_empty() {
        return Ok(());
    }
    let progress = (opts.progress
        && candidates.len() >= PROGRESS_THRESHOLD
        && std::io::stderr().is_terminal())
    .then(|| {
        let bar = indicatif::ProgressBar::new(candidates.len() as u64);
        bar.set_style(
            indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} files {per_sec} {eta}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        bar
    });
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get());
    let max = opts.max_file_size;
    let root = opts.dir.canonicalize().unwrap_or_else(|_| opts.dir.clone());
    let shown = |path: &Path| opts.dir.join(path.strip_prefix(&root).unwrap_or(path));

    std::thread::scope(|scope| -> Result<()> {
        let (todo_tx, todo_rx) = crossbeam_channel::bounded::<Candidate>(QUEUE_DEPTH);
        let (done_tx, done_rx) =
            crossbeam_channel::bounded::<(Option<FileStat>, Outcome)>(QUEUE_DEPTH);
        scope.spawn(move || {
            for candidate in candidates {
                if todo_tx.send(candidate).is_err() {
                    break;
                }
            }
        });
        for _ in 0..workers {
            let todo_rx = todo_rx.clone();
            let done_tx = done_tx.clone();
            let shown = &shown;
            scope.spawn(move || {
                for candidate in todo_rx {
                    let old = candidate.old;
                    let outcome = read_candidate(candidate, max, shown);
                    if done_tx.send((old, outcome)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(done_tx);
        drop(todo_rx);
        for (old, outcome) in done_rx {
            if let Some(bar) = &progress {
                bar.inc(1);
            }
            match outcome {
                Outcome::Put(doc, warning) => {
                    let kind = if old.is_some() {
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
                    if let Some(tx) = tx {
                        tx.touch(&key, mtime_ns)?;
                    }
                    report.unchanged += 1;
                }
                Outcome::Skipped(warning) => {
                    report.warnings.push(warning);
                    report.skipped += 1;
                }
            }
        }
        Ok(())
    })?;
    if let Some(bar) = progress {
        bar.finish_and_clear();
    }
    Ok(())
}

fn read_candidate(candidate: Candidate, max: u64, shown: &dyn Fn(&Path) -> PathBuf) -> Outcome {
    let warning = |reason: String| Warning {
        path: shown(&candidate.path),
        reason,
    };
    let mut body = Vec::new();
    // Read at most one byte past the limit: a file that grew since the walk
    // cannot make us hold more than that.
    let read = File::open(&candidate.path)
        .and_then(|file| file.take(max.saturating_add(1)).read_to_end(&mut body));
    if let Err(e) = read {
        return Outcome::Skipped(warning(format!("cannot read: {e}: skipped")));
    }
    if body.len() as u64 > max {
        return Outcome::Skipped(warning(format!("over the limit of {max} bytes: skipped")));
    }
    let stat = FileStat {
        size: body.len() as u64,
        mtime_ns: candidate.mtime_ns,
        hash: *blake3::hash(&body).as_bytes(),
    };
    if candidate.old.is_some_and(|old| old.hash == stat.hash) {
        return Outcome::Touch(candidate.key, candidate.mtime_ns);
    }
    let (is_text, extracted, note) = match std::str::from_utf8(&body) {
        Ok(text) => {
            let extracted = frontmatter::extract(text);
            let note = if body.is_empty() {
                Some("empty file: imported".to_string())
            } else {
                extracted.warning.clone()
            };
            (true, extracted, note)
        }
        Err(e) => (
            false,
            frontmatter::Extracted::default(),
            Some(format!("not UTF-8 ({e}): imported as binary")),
        ),
    };
    let doc = NewDocument {
        title: clip(extracted.title.unwrap_or_else(|| candidate.key.id.clone())),
        description: extracted.description.map(clip),
        frontmatter: extracted.frontmatter.map(|v| v.to_string()),
        key: candidate.key,
        stat,
        is_text,
        body,
    };
    Outcome::Put(Box::new(doc), note.map(warning))
}

/// Titles and descriptions are listed on every page: a frontmatter that
/// holds a book in its `title` must not make pages huge. The document's own
/// bytes are never cut.
const MAX_LABEL: usize = 1024;

fn clip(mut label: String) -> String {
    if label.len() > MAX_LABEL {
        let mut end = MAX_LABEL;
        while !label.is_char_boundary(end) {
            end -= 1;
        }
        label.truncate(end);
    }
    label
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_clipped_on_a_char_boundary() {
        assert_eq!(clip("short".into()), "short");
        let long = "é".repeat(MAX_LABEL);
        let clipped = clip(long);
        assert_eq!(clipped.len(), MAX_LABEL);
        assert!(clipped.chars().all(|c| c == 'é'));
    }

    #[test]
    fn ids_are_paths_below_the_prefix_folder() {
        let base = Path::new("/p/docs");
        assert_eq!(
            id_of(base, Path::new("/p/docs/adr/0006.md")).unwrap(),
            "adr/0006.md"
        );
        assert_eq!(
            id_of(base, Path::new("/p/docs/café notes.md")).unwrap(),
            "café notes.md"
        );
        #[cfg(unix)]
        {
            use std::os::unix::ffi::OsStrExt;
            let bad = Path::new(std::ffi::OsStr::from_bytes(b"/p/docs/\xff.md"));
            assert!(id_of(base, bad).is_err());
        }
    }

    #[test]
    fn under_a_folder() {
        let dir = DocKey::new(Prefix::Docs, "adr");
        assert!(is_under(&DocKey::new(Prefix::Docs, "adr/0001"), &dir));
        assert!(!is_under(&DocKey::new(Prefix::Docs, "adr2/0001"), &dir));
        assert!(!is_under(&DocKey::new(Prefix::Notes, "adr/0001"), &dir));
        assert!(is_under(
            &DocKey::new(Prefix::Docs, "x"),
            &DocKey::new(Prefix::Docs, "")
        ));
    }
}
