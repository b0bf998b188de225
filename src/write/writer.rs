//! The one path of every write: the project's lock, the database's write transaction, the stored row brought level with the file, the version the caller named compared, the file replaced atomically, and that file imported in the same transaction before the answer.
//!
//! The order is what makes a write safe:
//! 1. `ProjectLock`: no other orchestra process writes this project now.
//! 2. The import's transaction (`Store::begin_import`): no import commits
//!    under us, and what we read of the store stays true to the commit.
//! 3. The file is read; if its bytes are not the stored ones (an editor
//!    saved since the last import) they are imported and committed first,
//!    so an outside edit counts as a newer version, and the write starts
//!    again from there.
//! 4. `ifVersion` is compared with the stored version: a mismatch writes
//!    nothing.
//! 5. Just before the file is replaced its bytes are read once more: an
//!    editor that saved in the meantime makes the write a conflict, not a
//!    lost update.
//! 6. The file is replaced (or created, renamed, removed) atomically, then
//!    read back as import reads it, put in the transaction, committed.
//!
//! A failure after step 6's file change and before the commit leaves the
//! folder ahead of the database; the next import (or the write's own next
//! attempt, step 3) brings the database level: the folder is the truth.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::edit::{self, Edit};
use super::lock::ProjectLock;
use super::{allocate, atomic, path};
use crate::doc::{ChangeKind, DocKey, Prefix};
use crate::import;
use crate::store::{ImportTx, Location, Store};
use crate::uri;

/// The longest diff a write's answer carries, in bytes.
pub const MAX_DIFF_BYTES: usize = 8 * 1024;

/// What to write.
#[derive(Debug, Clone)]
pub enum Request {
    /// A new document at `key`, or, without one, under `under` (a prefix
    /// and a folder of it, `""` for the prefix itself) with an allocated
    /// id; refused when it exists.
    Create {
        key: Option<DocKey>,
        under: Option<(Prefix, String)>,
        title: Option<String>,
        content: String,
    },
    /// A document's whole text replaced.
    Write {
        key: DocKey,
        content: String,
        if_version: Option<u32>,
    },
    /// Edits applied together, or none; with `dry_run` only their diff.
    Edit {
        key: DocKey,
        edits: Vec<Edit>,
        if_version: Option<u32>,
        dry_run: bool,
    },
    /// A document renamed to `to`, which must not exist.
    Move {
        key: DocKey,
        to: DocKey,
        if_version: Option<u32>,
    },
    /// A document's file removed.
    Delete {
        key: DocKey,
        if_version: Option<u32>,
    },
}

/// What a write did (or, for a dry run, would do).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// The document written: for a move, its new key; for a delete, the
    /// removed one.
    pub key: DocKey,
    pub change: ChangeKind,
    /// Its version after the write (for a delete, the removal's).
    pub version: Option<u32>,
    pub hash: Option<[u8; 32]>,
    pub size: u64,
    /// The unified diff of what changed, clipped to [`MAX_DIFF_BYTES`].
    pub diff: String,
    /// The key it had before a move.
    pub moved_from: Option<DocKey>,
    pub dry_run: bool,
}

/// Why nothing was written: a sentence for the agent or person, saying
/// what to do instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused(pub String);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Writes to one project folder, whose documents `store` holds.
#[derive(Clone)]
pub struct Writer {
    root: PathBuf,
    root_text: String,
    store: Store,
    location: Location,
    max_file_size: u64,
}

impl std::fmt::Debug for Writer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writer").field("root", &self.root).finish()
    }
}

/// A document a write changes, as [`Writer::existing`] found it.
struct Existing {
    tx: ImportTx,
    file: PathBuf,
    old: Vec<u8>,
    /// Its version before the write.
    base: Option<u32>,
}

/// The file of a document as the write found it.
struct OnDisk {
    bytes: Option<Vec<u8>>,
}

impl OnDisk {
    fn read(file: &Path) -> Result<OnDisk> {
        match std::fs::read(file) {
            Ok(bytes) => Ok(OnDisk { bytes: Some(bytes) }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(OnDisk { bytes: None }),
            Err(e) => Err(e).with_context(|| format!("cannot read {}", file.display())),
        }
    }

    fn hash(&self) -> Option<[u8; 32]> {
        self.bytes.as_deref().map(|b| *blake3::hash(b).as_bytes())
    }
}

impl Writer {
    /// A writer of the project folder `root` into `store`, which must hold
    /// that project (the import's own check). Removes the temporary files
    /// a crashed write left behind.
    pub fn new(root: &Path, store: Store, max_file_size: u64) -> Result<Writer> {
        let root = root
            .canonicalize()
            .with_context(|| format!("cannot open the project folder {}", root.display()))?;
        let root_text = root
            .to_str()
            .with_context(|| format!("the project folder {} is not UTF-8", root.display()))?
            .to_string();
        if let Some(held) = store.project_root()?
            && held != root_text
        {
            anyhow::bail!(
                "the database {} holds the project {held}, not {}: name that folder, or import this one into another database",
                store.location(),
                root.display()
            );
        }
        // Under the lock: another process's write in progress has a
        // temporary file too, and it is no leftover.
        let lock = ProjectLock::acquire(&root)
            .with_context(|| format!("cannot lock {} for writing", root.display()))?;
        let mut removed = 0;
        for prefix in Prefix::ALL {
            match atomic::remove_leftovers(&root.join(prefix.as_str())) {
                Ok(n) => removed += n,
                Err(e) => tracing::warn!(
                    "cannot look for the temporary files of interrupted writes under {}: {e}",
                    prefix.as_str()
                ),
            }
        }
        drop(lock);
        if removed > 0 {
            tracing::info!("removed {removed} temporary files of interrupted writes");
        }
        let location = store.location();
        Ok(Writer {
            root,
            root_text,
            store,
            location,
            max_file_size,
        })
    }

    /// The project folder written to.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Carries out `request`. `Err` is a failure of the machine (the
    /// database, the disk); `Ok(Err)` a refusal that wrote nothing.
    pub fn apply(&self, request: Request) -> Result<Result<Written, Refused>> {
        let _lock = ProjectLock::acquire(&self.root).with_context(|| {
            format!(
                "cannot lock {} for writing",
                self.root.join(import::data_folder::NAME).display()
            )
        })?;
        match request {
            Request::Create {
                key,
                under,
                title,
                content,
            } => self.create(key, under, title, content),
            Request::Write {
                key,
                content,
                if_version,
            } => self.change(&key, if_version, false, |_| Ok(content.into_bytes())),
            Request::Edit {
                key,
                edits,
                if_version,
                dry_run,
            } => self.change(&key, if_version, dry_run, |old| {
                let text = std::str::from_utf8(old).map_err(|_| {
                    Refused(format!(
                        "{} is not UTF-8 text: a binary document cannot be edited",
                        uri::format(&key)
                    ))
                })?;
                edit::apply(text, &edits)
                    .map(String::into_bytes)
                    .map_err(|e| Refused(e.to_string()))
            }),
            Request::Move {
                key,
                to,
                if_version,
            } => self.move_to(&key, &to, if_version),
            Request::Delete { key, if_version } => self.delete(&key, if_version),
        }
    }

    fn file_of(&self, key: &DocKey) -> Result<PathBuf, Refused> {
        let file = path::file_of(&self.root, key).map_err(|e| Refused(e.to_string()))?;
        path::check_no_symlinks(&self.root, &file).map_err(|e| Refused(e.to_string()))?;
        Ok(file)
    }

    /// The import's transaction, with the stored row of `key` level with
    /// `file`: when they differ, the file is imported and committed first
    /// (an outside edit is a version of its own), and a new transaction
    /// begun. Also the stored version of `key` as the transaction sees it.
    fn level(&self, key: &DocKey, file: &Path) -> Result<(ImportTx, OnDisk, Option<u32>)> {
        for _ in 0..3 {
            let tx = self.store.begin_import(&self.root_text, false)?;
            let disk = OnDisk::read(file)?;
            let current = tx.current(key)?;
            let stored = current.as_ref().map(|c| c.hash);
            if stored == disk.hash() {
                return Ok((tx, disk, current.map(|c| c.version)));
            }
            match disk.bytes {
                Some(_) => {
                    let doc =
                        import::read_one(file, key.clone(), self.max_file_size, &self.location)?;
                    let kind = match stored {
                        Some(_) => ChangeKind::Updated,
                        None => ChangeKind::New,
                    };
                    tx.put(&doc)?;
                    tx.record(kind, key)?;
                }
                None => {
                    tx.remove(key)?;
                    tx.record(ChangeKind::Removed, key)?;
                }
            }
            tx.commit(true)?;
        }
        anyhow::bail!(
            "{} keeps changing on disk: try again when it is still",
            file.display()
        )
    }

    /// The document `key` that a write changes: its file, its bytes, the
    /// transaction with its row level with them, and its version; refused
    /// when it does not exist or `if_version` is not its version.
    fn existing(&self, key: &DocKey, if_version: Option<u32>) -> Result<Result<Existing, Refused>> {
        let file = match self.file_of(key) {
            Ok(file) => file,
            Err(refused) => return Ok(Err(refused)),
        };
        let (tx, disk, current) = self.level(key, &file)?;
        let Some(old) = disk.bytes else {
            return Ok(Err(self.missing(key)));
        };
        Ok(
            check_version(key, if_version, current).map(|base| Existing {
                tx,
                file,
                old,
                base,
            }),
        )
    }

    fn too_large(&self, bytes: &[u8]) -> Option<Refused> {
        (bytes.len() as u64 > self.max_file_size).then(|| {
            Refused(format!(
                "{} bytes is over the limit of {} bytes a document may have",
                bytes.len(),
                self.max_file_size
            ))
        })
    }

    /// A `write` or an `edit`: `new_bytes` makes the new text from the old.
    fn change(
        &self,
        key: &DocKey,
        if_version: Option<u32>,
        dry_run: bool,
        new_bytes: impl FnOnce(&[u8]) -> Result<Vec<u8>, Refused>,
    ) -> Result<Result<Written, Refused>> {
        let Existing {
            tx,
            file,
            old,
            base,
        } = match self.existing(key, if_version)? {
            Ok(existing) => existing,
            Err(refused) => return Ok(Err(refused)),
        };
        let new = match new_bytes(&old) {
            Ok(new) => new,
            Err(refused) => return Ok(Err(refused)),
        };
        if let Some(refused) = self.too_large(&new) {
            return Ok(Err(refused));
        }
        let name = uri::format(key);
        let diff = edit::diff(
            &String::from_utf8_lossy(&old),
            &String::from_utf8_lossy(&new),
            &name,
            &name,
            MAX_DIFF_BYTES,
        );
        if dry_run || new == old {
            // Nothing to write: the document stays at its version.
            return Ok(Ok(Written {
                key: key.clone(),
                change: ChangeKind::Updated,
                version: base,
                hash: disk_hash(&old),
                size: old.len() as u64,
                diff,
                moved_from: None,
                dry_run,
            }));
        }
        if let Some(refused) = self.changed_under_us(&file, &old)? {
            return Ok(Err(refused));
        }
        atomic::replace(&file, &new, false)
            .with_context(|| format!("cannot write {}", file.display()))?;
        let written = self.import_file(&tx, key, &file, ChangeKind::Updated)?;
        let version = self.version_after(&tx, key)?;
        tx.commit(true)
            .with_context(|| format!("{name} was written but not imported"))?;
        Ok(Ok(Written {
            version,
            diff,
            ..written
        }))
    }

    fn create(
        &self,
        key: Option<DocKey>,
        under: Option<(Prefix, String)>,
        title: Option<String>,
        content: String,
    ) -> Result<Result<Written, Refused>> {
        let bytes = content.into_bytes();
        if let Some(refused) = self.too_large(&bytes) {
            return Ok(Err(refused));
        }
        let key = match (key, under) {
            (Some(key), _) => key,
            (None, Some((prefix, folder))) => {
                let dir = match folder.is_empty() {
                    true => self.root.join(prefix.as_str()),
                    false => self.root.join(prefix.as_str()).join(&folder),
                };
                let names = match allocate::names_in(&dir) {
                    Ok(names) => names,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
                    Err(e) => {
                        return Err(e).with_context(|| format!("cannot list {}", dir.display()));
                    }
                };
                let names: Vec<&str> = names.iter().map(String::as_str).collect();
                let Some(name) = allocate::next_name(&names, title.as_deref()) else {
                    return Ok(Err(Refused(format!(
                        "no numbered document under {}/{folder} to follow: give a title (its slug becomes the id) or a uri",
                        prefix.as_str()
                    ))));
                };
                let id = match folder.is_empty() {
                    true => name,
                    false => format!("{folder}/{name}"),
                };
                DocKey::new(prefix, id)
            }
            (None, None) => {
                return Ok(Err(Refused(
                    "create needs a uri, or under (a prefix or folder, e.g. features or docs/adr) to allocate one"
                        .into(),
                )));
            }
        };
        let file = match self.file_of(&key) {
            Ok(file) => file,
            Err(refused) => return Ok(Err(refused)),
        };
        let (tx, disk, _) = self.level(&key, &file)?;
        if disk.bytes.is_some() {
            return Ok(Err(Refused(format!(
                "{} exists: read it and use edit or write to change it, or create another",
                uri::format(&key)
            ))));
        }
        match atomic::create(&file, &bytes) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                return Ok(Err(Refused(format!(
                    "{} was created by someone else just now: read it, or create another",
                    uri::format(&key)
                ))));
            }
            Err(e) => return Err(e).with_context(|| format!("cannot create {}", file.display())),
        }
        let written = self.import_file(&tx, &key, &file, ChangeKind::New)?;
        let version = match tx.starts_empty() {
            true => Some(1),
            false => self.version_after(&tx, &key)?,
        };
        let name = uri::format(&key);
        let diff = edit::diff(
            "",
            &String::from_utf8_lossy(&bytes),
            "/dev/null",
            &name,
            MAX_DIFF_BYTES,
        );
        tx.commit(true)
            .with_context(|| format!("{name} was created but not imported"))?;
        Ok(Ok(Written {
            version,
            diff,
            ..written
        }))
    }

    fn move_to(
        &self,
        key: &DocKey,
        to: &DocKey,
        if_version: Option<u32>,
    ) -> Result<Result<Written, Refused>> {
        if key == to {
            return Ok(Err(Refused(format!(
                "{} is already there",
                uri::format(key)
            ))));
        }
        let (from_file, to_file) = match (self.file_of(key), self.file_of(to)) {
            (Ok(from), Ok(to)) => (from, to),
            (Err(refused), _) | (_, Err(refused)) => return Ok(Err(refused)),
        };
        // Both rows level with their files: the source's first (committed
        // if it was behind), then the target's, whose transaction the move
        // runs in; the source's bytes are checked again below.
        let (tx, disk, _) = self.level(key, &from_file)?;
        drop(tx);
        let (tx, target, _) = self.level(to, &to_file)?;
        let disk_now = OnDisk::read(&from_file)?;
        if disk_now.hash() != disk.hash() {
            return Ok(Err(Refused(format!(
                "{} changed on disk just now: read it again",
                uri::format(key)
            ))));
        }
        let Some(old) = disk.bytes else {
            return Ok(Err(self.missing(key)));
        };
        if target.bytes.is_some() {
            return Ok(Err(Refused(format!(
                "{} exists: move to another uri, or delete it first",
                uri::format(to)
            ))));
        }
        let current = tx.current(key)?.map(|c| c.version);
        let base = match check_version(key, if_version, current) {
            Ok(version) => version,
            Err(refused) => return Ok(Err(refused)),
        };
        match atomic::rename_new(&from_file, &to_file) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                return Ok(Err(Refused(format!(
                    "{} was created by someone else just now: move to another uri",
                    uri::format(to)
                ))));
            }
            Err(e) => {
                return Err(e).with_context(|| {
                    format!(
                        "cannot move {} to {}",
                        from_file.display(),
                        to_file.display()
                    )
                });
            }
        }
        tx.remove(key)?;
        tx.record(ChangeKind::Removed, key)?;
        let written = self.import_file(&tx, to, &to_file, ChangeKind::New)?;
        let version = self.version_after(&tx, to)?;
        // Both histories say where it went: the old key's removal is the
        // version after its last.
        if let (Some(base), Some(version)) = (base, version) {
            tx.record_move(key, base + 1, to, version)?;
        }
        let (from_name, to_name) = (uri::format(key), uri::format(to));
        let text = String::from_utf8_lossy(&old);
        let diff = edit::diff(&text, &text, &from_name, &to_name, MAX_DIFF_BYTES);
        tx.commit(true)
            .with_context(|| format!("{from_name} was moved to {to_name} but not imported"))?;
        Ok(Ok(Written {
            version,
            diff,
            moved_from: Some(key.clone()),
            ..written
        }))
    }

    fn delete(&self, key: &DocKey, if_version: Option<u32>) -> Result<Result<Written, Refused>> {
        let Existing {
            tx,
            file,
            old,
            base,
        } = match self.existing(key, if_version)? {
            Ok(existing) => existing,
            Err(refused) => return Ok(Err(refused)),
        };
        if let Some(refused) = self.changed_under_us(&file, &old)? {
            return Ok(Err(refused));
        }
        atomic::remove(&file).with_context(|| format!("cannot remove {}", file.display()))?;
        tx.remove(key)?;
        tx.record(ChangeKind::Removed, key)?;
        // The removal is the version after the last.
        let version = base.map(|v| v + 1);
        let name = uri::format(key);
        let diff = edit::diff(
            &String::from_utf8_lossy(&old),
            "",
            &name,
            "/dev/null",
            MAX_DIFF_BYTES,
        );
        tx.commit(true)
            .with_context(|| format!("{name} was removed but the removal not imported"))?;
        Ok(Ok(Written {
            key: key.clone(),
            change: ChangeKind::Removed,
            version,
            hash: None,
            size: 0,
            diff,
            moved_from: None,
            dry_run: false,
        }))
    }

    /// A refusal when `file` no longer holds `old`: an editor saved while
    /// this write was being prepared.
    fn changed_under_us(&self, file: &Path, old: &[u8]) -> Result<Option<Refused>> {
        let now = OnDisk::read(file)?;
        Ok((now.bytes.as_deref() != Some(old)).then(|| {
            Refused(format!(
                "{} changed on disk while this write was prepared: read it again",
                file.strip_prefix(&self.root).unwrap_or(file).display()
            ))
        }))
    }

    /// Imports the file just written into `tx`.
    fn import_file(
        &self,
        tx: &ImportTx,
        key: &DocKey,
        file: &Path,
        change: ChangeKind,
    ) -> Result<Written> {
        let doc = import::read_one(file, key.clone(), self.max_file_size, &self.location)?;
        let (hash, size) = (doc.stat.hash, doc.stat.size);
        tx.put(&doc)?;
        tx.record(change, key)?;
        Ok(Written {
            key: key.clone(),
            change,
            version: None,
            hash: Some(hash),
            size,
            diff: String::new(),
            moved_from: None,
            dry_run: false,
        })
    }

    /// The version `key` has in `tx` after it was put.
    fn version_after(&self, tx: &ImportTx, key: &DocKey) -> Result<Option<u32>> {
        if tx.starts_empty() {
            // A load into an empty database: its first version.
            return Ok(Some(1));
        }
        Ok(tx.current(key)?.map(|c| c.version))
    }

    fn missing(&self, key: &DocKey) -> Refused {
        Refused(format!(
            "no document {}: call search or list for the documents there are, or create it",
            uri::format(key)
        ))
    }
}

/// Refuses when `if_version` is not `current`, the stored version of
/// `key`; else the version the write starts from.
fn check_version(
    key: &DocKey,
    if_version: Option<u32>,
    current: Option<u32>,
) -> Result<Option<u32>, Refused> {
    match (if_version, current) {
        (Some(wanted), Some(now)) if wanted != now => Err(Refused(format!(
            "{} changed since version {wanted}: now version {now}; read it again and redo the change on its text",
            uri::format(key)
        ))),
        _ => Ok(current),
    }
}

fn disk_hash(bytes: &[u8]) -> Option<[u8; 32]> {
    Some(*blake3::hash(bytes).as_bytes())
}
