//! The walk: every document file under the prefix folders, in key order, with its size and mtime, as a stream.
//!
//! Each folder's entries are sorted so that the files come out in the order
//! of their keys (the order of the store's index), which lets import compare
//! them with the stored documents as two sorted streams. The files are
//! statted on a small pool of threads, a batch at a time; the batches come
//! back in walk order. What is held at once is one folder's listing and the
//! batches in flight, not the project.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use crossbeam_channel::{Receiver, Sender};

use super::Warning;
use crate::doc::{DocKey, Prefix, is_valid_id};

/// Threads that stat files during the walk: stat is a system call per file,
/// most of what a re-import with nothing changed costs.
const STAT_THREADS: usize = 2;

/// Files handed to a stat thread at once: one channel operation per file
/// costs more in thread wake-ups than the stat itself.
const STAT_BATCH: usize = 128;

/// Batches in flight between the walk and the comparison.
const BATCHES_IN_FLIGHT: usize = 32;

/// A document file found by the walk, and its size and mtime.
pub(super) struct Found {
    pub key: DocKey,
    pub path: PathBuf,
    pub stat: std::io::Result<(u64, i64)>,
}

/// What the walk sends, in key order.
pub(super) enum Walked {
    /// The next files, once a stat thread has statted them.
    Files(Receiver<Vec<Found>>),
    /// A folder that could not be listed: the documents stored under it are
    /// kept. Sent where the folder's documents would have come.
    Unreadable(DocKey),
}

/// What the walk found besides documents: it is done when this is returned.
#[derive(Default)]
pub(super) struct Discovery {
    pub warnings: Vec<Warning>,
    pub skipped: u64,
    pub ignored: u64,
}

impl Discovery {
    fn warn(&mut self, path: PathBuf, reason: impl Into<String>) {
        self.warnings.push(Warning {
            path,
            reason: reason.into(),
            skipped: true,
        });
        self.skipped += 1;
    }
}

/// Files to stat, and where their stats go.
type StatJob = (Vec<(DocKey, PathBuf)>, Sender<Vec<Found>>);

/// Files on their way from the walk to the stat threads, in walk order.
struct Batch {
    files: Vec<(DocKey, PathBuf)>,
    stat: Sender<StatJob>,
    walked: Sender<Walked>,
}

impl Batch {
    /// Queues a file; false when nobody listens any more.
    fn push(&mut self, key: DocKey, path: PathBuf) -> bool {
        self.files.push((key, path));
        self.files.len() < STAT_BATCH || self.flush()
    }

    fn flush(&mut self) -> bool {
        if self.files.is_empty() {
            return true;
        }
        let files = std::mem::replace(&mut self.files, Vec::with_capacity(STAT_BATCH));
        let (reply, stats) = crossbeam_channel::bounded(1);
        self.stat.send((files, reply)).is_ok() && self.walked.send(Walked::Files(stats)).is_ok()
    }

    fn unreadable(&mut self, dir: DocKey) -> bool {
        self.flush() && self.walked.send(Walked::Unreadable(dir)).is_ok()
    }
}

/// Walks the prefix folders for document files and sends them to `walked`
/// in key order, statted on a pool of threads while the walk goes on.
pub(super) fn discover(
    root: &Path,
    shown_root: &Path,
    own_files: &[PathBuf],
    walked: Sender<Walked>,
) -> Discovery {
    let (stat, stat_rx) = crossbeam_channel::bounded::<(Vec<(DocKey, PathBuf)>, Sender<Vec<Found>>)>(
        BATCHES_IN_FLIGHT,
    );
    std::thread::scope(|scope| {
        for _ in 0..STAT_THREADS {
            let stat_rx = stat_rx.clone();
            scope.spawn(move || {
                for (files, reply) in stat_rx {
                    let found = files
                        .into_iter()
                        .map(|(key, path)| {
                            let stat =
                                std::fs::metadata(&path).map(|meta| (meta.len(), mtime_ns(&meta)));
                            Found { key, path, stat }
                        })
                        .collect();
                    // Nobody waits when the comparison stopped early.
                    let _ = reply.send(found);
                }
            });
        }
        drop(stat_rx);
        let mut batch = Batch {
            files: Vec::with_capacity(STAT_BATCH),
            stat,
            walked,
        };
        let discovery = walk(root, shown_root, own_files, &mut batch);
        batch.flush();
        // A stat thread that panicked drops its reply: the comparison sees
        // the batch missing and fails the import.
        discovery
    })
}

pub(super) fn mtime_ns(meta: &std::fs::Metadata) -> i64 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// The traversal: every Markdown file under the prefix folders goes to
/// `batch`, in key order; symlinks out of the project, loops, hidden entries
/// and other files are sorted out here. Symlinks inside the project are
/// followed, to folders and files alike.
fn walk(root: &Path, shown_root: &Path, own_files: &[PathBuf], batch: &mut Batch) -> Discovery {
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

    // `Prefix::ALL` is in key order.
    for prefix in Prefix::ALL {
        let base = root.join(prefix.as_str());
        let Ok(meta) = std::fs::symlink_metadata(&base) else {
            continue;
        };
        if meta.file_type().is_symlink() && !inside(root, &base, &mut found, &shown) {
            continue;
        }
        // Folders being walked, from the prefix folder down: the top one
        // is listed next; none may be entered again below itself.
        let mut open: Vec<Listing> = Vec::new();
        if !enter(&base, &base, prefix, &mut open, &mut found, &shown, batch) {
            return found;
        }
        while let Some(folder) = open.last_mut() {
            let Some(entry) = folder.next() else {
                open.pop();
                continue;
            };
            let name = folder.name(entry);
            let (path, markdown) = (folder.dir.join(os_str(name)), name.ends_with(b".md"));
            let kind = entry.kind;
            let is_folder = match kind {
                Kind::Folder => true,
                Kind::File | Kind::Other => false,
                Kind::Link { to_folder } => {
                    if !inside(root, &path, &mut found, &shown) {
                        continue;
                    }
                    to_folder
                }
            };
            if is_folder {
                if !enter(&base, &path, prefix, &mut open, &mut found, &shown, batch) {
                    return found;
                }
                continue;
            }
            // The database's own files are neither documents nor the
            // project's other files: passed over, not counted.
            // Names first: a path comparison for every file of a large
            // project costs more than the rest of the walk.
            if own_files
                .iter()
                .any(|own| own.file_name() == path.file_name() && *own == path)
            {
                continue;
            }
            let is_file = match kind {
                Kind::File => true,
                Kind::Link { .. } => path.is_file(),
                Kind::Folder | Kind::Other => false,
            };
            if !markdown || !is_file {
                found.ignored += 1;
                continue;
            }
            let id = match id_of(&base, &path) {
                Ok(id) => id.strip_suffix(".md").unwrap_or(&id).to_string(),
                Err(reason) => {
                    found.warn(shown(&path), reason);
                    continue;
                }
            };
            if !is_valid_id(&id) {
                found.warn(
                    shown(&path),
                    "the file name cannot be a document id: skipped",
                );
                continue;
            }
            if !batch.push(DocKey::new(prefix, id), path) {
                return found;
            }
        }
    }
    found
}

/// Whether the symlink `path` leads inside the project; says why not.
fn inside(
    root: &Path,
    path: &Path,
    found: &mut Discovery,
    shown: &dyn Fn(&Path) -> PathBuf,
) -> bool {
    match path.canonicalize() {
        Ok(target) if target.starts_with(root) => true,
        Ok(target) => {
            found.warn(
                shown(path),
                format!(
                    "symlink to {} outside the project: skipped",
                    target.display()
                ),
            );
            false
        }
        Err(e) => {
            found.warn(shown(path), format!("broken symlink: {e}"));
            false
        }
    }
}

/// Lists the folder `dir` on top of `open`, unless it is already open
/// (a symlink loop) or cannot be listed (its stored documents are kept);
/// false when nobody listens any more.
fn enter(
    base: &Path,
    dir: &Path,
    prefix: Prefix,
    open: &mut Vec<Listing>,
    found: &mut Discovery,
    shown: &dyn Fn(&Path) -> PathBuf,
    batch: &mut Batch,
) -> bool {
    let listed = std::fs::metadata(dir).and_then(|meta| {
        let identity = file_identity(&meta);
        if open.iter().any(|folder| folder.identity == identity) {
            return Ok(None);
        }
        Listing::read(dir.to_path_buf(), identity).map(Some)
    });
    match listed {
        Ok(Some(listing)) => open.push(listing),
        Ok(None) => found.warn(shown(dir), "symlink loop: skipped"),
        Err(e) => {
            found.warn(shown(dir), format!("cannot list the folder: {e}"));
            if let Ok(id) = id_of(base, dir) {
                return batch.unreadable(DocKey::new(prefix, id));
            }
        }
    }
    true
}

/// What a folder entry is, before any symlink is followed.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    File,
    Folder,
    /// Sorted as a folder when it leads to one.
    Link {
        to_folder: bool,
    },
    Other,
}

/// One folder's entries but hidden ones, in key order (see [`key_order`]),
/// held compactly: every name in one buffer, 12 bytes an entry beside it (a
/// folder of 300,000 files takes about 9 MB while it is walked).
struct Listing {
    dir: PathBuf,
    /// The folder's device and inode: a folder already open above is a loop.
    identity: (u64, u64),
    names: Vec<u8>,
    entries: Vec<Entry>,
    next: usize,
}

#[derive(Clone, Copy)]
struct Entry {
    start: u32,
    len: u32,
    kind: Kind,
}

impl Listing {
    fn read(dir: PathBuf, identity: (u64, u64)) -> std::io::Result<Listing> {
        let (mut names, mut entries) = (Vec::new(), Vec::new());
        for entry in std::fs::read_dir(&dir)? {
            let entry = entry?;
            let name = entry.file_name();
            let bytes = os_bytes(&name);
            // Hidden files and folders are never documents.
            if bytes.starts_with(b".") {
                continue;
            }
            let kind = match entry.file_type() {
                Ok(t) if t.is_dir() => Kind::Folder,
                Ok(t) if t.is_file() => Kind::File,
                Ok(t) if t.is_symlink() => Kind::Link {
                    to_folder: entry.path().is_dir(),
                },
                _ => Kind::Other,
            };
            let too_many = || std::io::Error::other("too many entries to list");
            entries.push(Entry {
                start: u32::try_from(names.len()).map_err(|_| too_many())?,
                len: u32::try_from(bytes.len()).map_err(|_| too_many())?,
                kind,
            });
            names.extend_from_slice(&bytes);
        }
        entries.sort_unstable_by(|a, b| key_order(sort_key(&names, a), sort_key(&names, b)));
        Ok(Listing {
            dir,
            identity,
            names,
            entries,
            next: 0,
        })
    }

    /// The next entry, in key order.
    fn next(&mut self) -> Option<Entry> {
        let entry = *self.entries.get(self.next)?;
        self.next += 1;
        Some(entry)
    }

    fn name(&self, entry: Entry) -> &[u8] {
        let start = entry.start as usize;
        &self.names[start..start + entry.len as usize]
    }
}

/// An entry's place among its siblings: a file `x.md` sorts as its id part
/// `x`, a folder `x` as `x/` (every id under it starts so, and no sibling's
/// id part does), anything else by its name. As two parts, to compare
/// without allocating.
fn sort_key<'a>(names: &'a [u8], entry: &Entry) -> (&'a [u8], &'static [u8]) {
    let start = entry.start as usize;
    let name = &names[start..start + entry.len as usize];
    match entry.kind {
        Kind::Folder | Kind::Link { to_folder: true } => (name, b"/"),
        _ => (name.strip_suffix(b".md").unwrap_or(name), b""),
    }
}

/// The byte order of the keys' ids, which is the store's order.
fn key_order(a: (&[u8], &[u8]), b: (&[u8], &[u8])) -> Ordering {
    let common = a.0.len().min(b.0.len());
    a.0[..common].cmp(&b.0[..common]).then_with(|| {
        a.0[common..]
            .iter()
            .chain(a.1)
            .cmp(b.0[common..].iter().chain(b.1))
    })
}

#[cfg(unix)]
fn file_identity(meta: &std::fs::Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (meta.dev(), meta.ino())
}

#[cfg(not(unix))]
fn file_identity(_meta: &std::fs::Metadata) -> (u64, u64) {
    // No inode to tell a loop by: loops end at the path length limit.
    (0, 0)
}

fn os_bytes(name: &OsStr) -> Cow<'_, [u8]> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        Cow::Borrowed(name.as_bytes())
    }
    #[cfg(not(unix))]
    {
        // Names that are not UTF-8 are skipped by the walk: their place in
        // the order does not matter.
        match name.to_string_lossy() {
            Cow::Borrowed(s) => Cow::Borrowed(s.as_bytes()),
            Cow::Owned(s) => Cow::Owned(s.into_bytes()),
        }
    }
}

fn os_str(bytes: &[u8]) -> Cow<'_, OsStr> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        Cow::Borrowed(OsStr::from_bytes(bytes))
    }
    #[cfg(not(unix))]
    {
        Cow::Owned(String::from_utf8_lossy(bytes).into_owned().into())
    }
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

#[cfg(test)]
mod tests {
    use super::*;

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

    /// Names that sort one way as file names and the other way as ids: the
    /// walk must yield the ids' order, which is the store's.
    #[test]
    fn the_walk_yields_keys_in_key_order() {
        let dir = tempfile::tempdir().unwrap();
        let files = [
            "features/a.md",
            "features/a-b.md",
            "features/a/x.md",
            "features/a/b/c.md",
            "features/a.b.md",
            "features/a0.md",
            "features/c.md.md",
            "features/c.md/y.md",
            "features/c-d.md",
            "features/B.md",
            "features/é.md",
            "features/e/é.md",
            "features/z.txt",
            "docs/adr/0006.md",
            "docs/adr-index.md",
            "docs/adr.md",
            "notes/n.md",
        ];
        for file in files {
            let path = dir.path().join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, file).unwrap();
        }
        let root = dir.path().canonicalize().unwrap();
        let (walked, walked_rx) = crossbeam_channel::unbounded();
        let discovery = discover(&root, &root, &[], walked);
        assert_eq!(discovery.ignored, 1, "z.txt");
        let keys: Vec<DocKey> = walked_rx
            .into_iter()
            .flat_map(|walked| match walked {
                Walked::Files(found) => found.recv().unwrap(),
                Walked::Unreadable(_) => panic!("nothing is unreadable here"),
            })
            .map(|found| found.key)
            .collect();
        let mut sorted = keys.clone();
        sorted.sort();
        assert_eq!(keys, sorted);
        assert_eq!(keys.len(), files.len() - 1);
    }
}
