//! The store's one interface: `Store`, `Reader`, `ImportTx` and `ChangeWatcher` are either backend's, and each call goes to it; a `Reader` may see only some areas (`Reader::seeing`). The only code that knows there are two.

use std::path::{Path, PathBuf};

use anyhow::Result;

use super::postgres::{PgChangeWatcher, PgImportTx, PgReader, PgStore, PgTarget};
use super::sqlite;
use super::{
    ApiKey, BrokenLink, ChangeBatch, CheckRow, Current, DocMeta, DocSummary, Fetched, HistoryStats,
    InLink, Moved, NewDocument, OutLink, PruneReport, PruneRules, SearchPage, SkippedFile,
    StoreStats, StoredStats, Version, VersionBody, VersionBytes,
};
use crate::access::Areas;
use crate::cursor::SearchResume;
use crate::doc::{ChangeKind, DocKey, Prefix};
use crate::search::{Search, Under};

/// Where a store lives.
#[derive(Debug, Clone, PartialEq)]
pub enum Location {
    /// A SQLite file.
    File(PathBuf),
    /// A PostgreSQL database.
    Postgres(Box<PgTarget>),
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Location::File(path) => write!(f, "{}", path.display()),
            Location::Postgres(target) => write!(f, "{target}"),
        }
    }
}

impl Location {
    /// Makes what this backend's index needs of `doc` beyond what
    /// [`NewDocument::new`] makes for both: called by import's reader
    /// threads, in parallel, so that its one writer does not.
    pub fn prepare(&self, doc: &mut NewDocument) {
        if let Location::Postgres(_) = self {
            doc.pg_vector = Some(super::postgres::vector_of(doc));
        }
    }
}

/// How a command opens its store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Created when missing, migrated: `import`.
    Create,
    /// Must exist; migrated when older: `serve`, `prune`.
    Existing,
    /// Must exist and be current; never written: the commands that read.
    ReadOnly,
}

/// A store: a pool of connections to its database.
#[derive(Clone)]
pub enum Store {
    Sqlite(sqlite::Store),
    Postgres(Box<PgStore>),
}

/// Calls the same method on whichever backend `$value` holds.
macro_rules! either {
    ($value:expr, $inner:ident => $call:expr) => {
        match $value {
            Self::Sqlite($inner) => $call,
            Self::Postgres($inner) => $call,
        }
    };
}

impl Store {
    /// Opens the SQLite file at `path`, creating it (and its parent folders)
    /// when missing, and brings its schema up to date.
    pub fn open_or_create(path: &Path) -> Result<Store> {
        Ok(Store::Sqlite(sqlite::Store::open_or_create(path)?))
    }

    /// Opens a SQLite file that must already exist, migrating it when older.
    pub fn open_existing(path: &Path) -> Result<Store> {
        Ok(Store::Sqlite(sqlite::Store::open_existing(path)?))
    }

    /// Opens an existing, current SQLite file without ever writing to it.
    pub fn open_read_only(path: &Path) -> Result<Store> {
        Ok(Store::Sqlite(sqlite::Store::open_read_only(path)?))
    }

    /// Whether `location` holds no orchestra database yet: no SQLite file,
    /// or a PostgreSQL database orchestra never migrated. A dry run of an
    /// import compares with nothing there, and opens nothing.
    pub fn is_fresh(location: &Location) -> Result<bool> {
        match location {
            Location::File(path) => Ok(!path.exists()),
            Location::Postgres(target) => PgStore::is_fresh(target),
        }
    }

    /// Opens the store at `location` as `access` says. A PostgreSQL
    /// database always exists (the server's owner makes it); opening it
    /// for `Create` or `Existing` migrates it.
    pub fn open(location: &Location, access: Access) -> Result<Store> {
        match (location, access) {
            (Location::File(path), Access::Create) => Store::open_or_create(path),
            (Location::File(path), Access::Existing) => Store::open_existing(path),
            (Location::File(path), Access::ReadOnly) => Store::open_read_only(path),
            (Location::Postgres(target), Access::ReadOnly) => Ok(Store::Postgres(Box::new(
                PgStore::open_read_only(*target.clone())?,
            ))),
            (Location::Postgres(target), _) => {
                Ok(Store::Postgres(Box::new(PgStore::open(*target.clone())?)))
            }
        }
    }

    /// Where the store lives.
    pub fn location(&self) -> Location {
        match self {
            Store::Sqlite(store) => Location::File(store.path().to_path_buf()),
            Store::Postgres(store) => Location::Postgres(Box::new(store.target().clone())),
        }
    }

    /// The folder of the project the store holds; `None` before any import.
    pub fn project_root(&self) -> Result<Option<String>> {
        either!(self, store => store.project_root())
    }

    /// A connection for reads.
    pub fn reader(&self) -> Result<Reader> {
        let backend = match self {
            Store::Sqlite(store) => Backend::Sqlite(store.reader()?),
            Store::Postgres(store) => Backend::Postgres(Box::new(store.reader()?)),
        };
        Ok(Reader {
            backend,
            areas: None,
        })
    }

    /// Starts the one transaction of an import of the project at `root`.
    pub fn begin_import(&self, root: &str, replace: bool) -> Result<ImportTx> {
        Ok(match self {
            Store::Sqlite(store) => ImportTx::Sqlite(store.begin_import(root, replace)?),
            Store::Postgres(store) => ImportTx::Postgres(store.begin_import(root, replace)?),
        })
    }

    /// What [`Store::begin_import`] then [`Store::scan`] would see, without
    /// writing: for `--dry-run`.
    pub fn preview_import(&self, root: &str, replace: bool) -> Result<StoredStats> {
        either!(self, store => store.preview_import(root, replace))
    }

    /// The stored stats of every document, in key order; with `stale`, no
    /// mtime matches a file.
    pub fn scan(&self, stale: bool) -> Result<StoredStats> {
        either!(self, store => store.scan(stale))
    }

    /// Removes the past versions `rules` let go, and the bodies no version
    /// needs, in one transaction (none with `dry_run`).
    pub fn prune(&self, rules: &PruneRules, dry_run: bool) -> Result<PruneReport> {
        either!(self, store => store.prune(rules, dry_run))
    }

    /// Stores a new API key (its hash); refused when a live key has its name.
    pub fn create_key(&self, key: &ApiKey) -> Result<()> {
        either!(self, store => store.create_key(key))
    }

    /// Every API key, live and revoked, newest first.
    pub fn keys(&self) -> Result<Vec<ApiKey>> {
        either!(self, store => store.keys())
    }

    /// Revokes the live key named `name`: whether there was one.
    pub fn revoke_key(&self, name: &str, now: i64) -> Result<bool> {
        either!(self, store => store.revoke_key(name, now))
    }

    /// The API key whose hash is `hash`, live or not.
    pub fn find_key(&self, hash: &str) -> Result<Option<ApiKey>> {
        either!(self, store => store.find_key(hash))
    }
}

/// Read access for the server; see the SQLite and PostgreSQL readers.
///
/// A reader sees every document, or only those in some areas
/// ([`Reader::seeing`]): then each of its answers is the one a store
/// holding only those documents would give, filtered in the queries.
pub struct Reader {
    backend: Backend,
    /// The areas it sees; `None`: everything, and every query is the
    /// backend's own.
    areas: Option<Areas>,
}

#[allow(clippy::large_enum_variant)] // One per request, moved a few times: not worth an allocation.
enum Backend {
    Sqlite(sqlite::Reader),
    Postgres(Box<PgReader>),
}

/// Calls the same method on whichever backend a [`Reader`] holds.
macro_rules! backend {
    ($reader:expr, $inner:ident => $call:expr) => {
        match &$reader.backend {
            Backend::Sqlite($inner) => $call,
            Backend::Postgres($inner) => $call,
        }
    };
}

impl Reader {
    /// This reader, seeing only the documents in `areas` (`None`: all of
    /// them). Listings, counts, completions, the nearest ids, search hits
    /// and totals and links then answer as if the store held only those
    /// documents; a point read of another key answers as for a missing
    /// one, without a query. The caller chooses the areas (a read's
    /// `Grants::read_filter`, a search's `Grants::search_filter`).
    ///
    /// Unfiltered whatever the areas: [`Reader::stats`], [`Reader::history_stats`],
    /// [`Reader::check_page`], [`Reader::broken_links`],
    /// [`Reader::skipped_files`], [`Reader::changes_after`] and
    /// [`Reader::seq`] (the commands and the change feed, whose
    /// notifications the MCP layer filters itself).
    pub fn seeing(self, areas: Option<Areas>) -> Reader {
        Reader { areas, ..self }
    }

    /// The areas this reader sees; `None`: everything.
    pub fn areas(&self) -> Option<&Areas> {
        self.areas.as_ref()
    }

    /// Whether `key` is among the documents this reader sees.
    fn sees(&self, key: &DocKey) -> bool {
        self.areas.as_ref().is_none_or(|areas| areas.contains(key))
    }

    /// Up to `limit` documents after `after`, in key order. Seeing areas:
    /// each area's id range after `after`, in turn (they are disjoint and
    /// in key order), so each page is one keyset page of an index range.
    pub fn page(&self, after: Option<&DocKey>, limit: usize) -> Result<Vec<DocSummary>> {
        let Some(areas) = &self.areas else {
            return backend!(self, reader => reader.page(after, limit));
        };
        let mut page = Vec::new();
        for area in areas.as_slice() {
            if page.len() >= limit {
                break;
            }
            let after_id = match after {
                Some(key) if key.prefix > area.prefix => continue,
                Some(key) if key.prefix == area.prefix => Some(key.id.as_str()),
                _ => None,
            };
            page.extend(self.backend_page_under(area, after_id, limit - page.len())?);
        }
        Ok(page)
    }

    pub fn get(&self, key: &DocKey, max_body: u64) -> Result<Option<Fetched>> {
        if !self.sees(key) {
            return Ok(None);
        }
        backend!(self, reader => reader.get(key, max_body))
    }

    /// Ids under `prefix` that begin with `typed`, at most `limit`, and
    /// how many there are in all. Seeing areas: the part of the range
    /// `typed…` in each area of `prefix`.
    pub fn complete_ids(
        &self,
        prefix: Prefix,
        typed: &str,
        limit: usize,
    ) -> Result<(Vec<String>, u64)> {
        let Some(areas) = &self.areas else {
            return backend!(self, reader => reader.complete_ids(prefix, typed, limit));
        };
        let (mut ids, mut total) = (Vec::new(), 0);
        for area in areas.as_slice().iter().filter(|a| a.prefix == prefix) {
            let folder = area.folder.as_deref().unwrap_or("");
            if typed.starts_with(folder) {
                // The whole range is in this area, and in no other.
                return backend!(self, reader => reader.complete_ids(prefix, typed, limit));
            }
            if folder.starts_with(typed) {
                // The whole area is in the range.
                let page = self.backend_page_under(area, None, limit - ids.len())?;
                ids.extend(page.into_iter().map(|d| d.key.id));
                total += backend!(self, reader => reader.count_under(area))?;
            }
        }
        Ok((ids, total))
    }

    pub fn count(&self) -> Result<u64> {
        match &self.areas {
            None => backend!(self, reader => reader.count()),
            Some(areas) => self.count_in(areas.as_slice()),
        }
    }

    pub fn page_under(
        &self,
        under: &Under,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<DocSummary>> {
        let Some(areas) = &self.areas else {
            return self.backend_page_under(under, after, limit);
        };
        let mut page = Vec::new();
        for area in areas.within(under).as_slice() {
            if page.len() >= limit {
                break;
            }
            page.extend(self.backend_page_under(area, after, limit - page.len())?);
        }
        Ok(page)
    }

    pub fn count_under(&self, under: &Under) -> Result<u64> {
        match &self.areas {
            None => backend!(self, reader => reader.count_under(under)),
            Some(areas) => self.count_in(areas.within(under).as_slice()),
        }
    }

    fn backend_page_under(
        &self,
        under: &Under,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<DocSummary>> {
        backend!(self, reader => reader.page_under(under, after, limit))
    }

    /// The documents in `areas`: a count of each one's index range.
    fn count_in(&self, areas: &[Under]) -> Result<u64> {
        let mut total = 0;
        for area in areas {
            total += backend!(self, reader => reader.count_under(area))?;
        }
        Ok(total)
    }

    /// Runs `reads` in one read transaction; nested calls join it.
    pub fn in_transaction<T>(&self, reads: impl FnOnce() -> Result<T>) -> Result<T> {
        backend!(self, reader => reader.in_transaction(reads))
    }

    pub fn exists(&self, key: &DocKey) -> Result<bool> {
        if !self.sees(key) {
            return Ok(false);
        }
        backend!(self, reader => reader.exists(key))
    }

    /// Unfiltered: the change feed's.
    pub fn seq(&self) -> Result<i64> {
        backend!(self, reader => reader.seq())
    }

    pub fn meta(&self, key: &DocKey) -> Result<Option<DocMeta>> {
        if !self.sees(key) {
            return Ok(None);
        }
        backend!(self, reader => reader.meta(key))
    }

    /// Up to `limit` ids of `key`'s prefix nearest to it (the "did you
    /// mean" of a missing key). Seeing areas: the nearest in them, the ids
    /// below `key` read area by area downwards, those above it upwards.
    pub fn nearest(&self, key: &DocKey, limit: usize) -> Result<Vec<DocKey>> {
        let Some(areas) = &self.areas else {
            return backend!(self, reader => reader.nearest(key, limit));
        };
        let mine: Vec<&Under> = areas
            .as_slice()
            .iter()
            .filter(|a| a.prefix == key.prefix)
            .collect();
        let mut before = Vec::new();
        for area in mine.iter().rev() {
            if before.len() >= limit {
                break;
            }
            let n = limit - before.len();
            before.extend(backend!(self, reader => reader.ids_before(area, &key.id, n))?);
        }
        let mut after = Vec::new();
        for area in &mine {
            if after.len() >= limit {
                break;
            }
            let page = self.backend_page_under(area, Some(&key.id), limit - after.len())?;
            after.extend(page.into_iter().map(|d| d.key.id));
        }
        Ok(super::nearest_of(key, before, after, limit))
    }

    /// Unfiltered, whatever the areas: for `orchestra stats`, never a
    /// request.
    pub fn stats(&self) -> Result<StoreStats> {
        backend!(self, reader => reader.stats())
    }

    /// Unfiltered: the change feed, which the MCP layer filters itself.
    pub fn changes_after(&self, after: i64) -> Result<ChangeBatch> {
        backend!(self, reader => reader.changes_after(after))
    }

    /// Seeing areas: a move from or to a key outside them is not named
    /// (a store without that document has a new document, or a removal).
    pub fn history(&self, key: &DocKey, before: Option<u32>, limit: usize) -> Result<Vec<Version>> {
        if !self.sees(key) {
            return Ok(Vec::new());
        }
        let mut versions = backend!(self, reader => reader.history(key, before, limit))?;
        if self.areas.is_some() {
            for version in &mut versions {
                if let Some(Moved::To(other) | Moved::From(other)) = &version.moved
                    && !self.sees(other)
                {
                    version.moved = None;
                }
            }
        }
        Ok(versions)
    }

    pub fn version(&self, key: &DocKey, number: u32) -> Result<Option<VersionBody>> {
        if !self.sees(key) {
            return Ok(None);
        }
        backend!(self, reader => reader.version(key, number))
    }

    /// Version `number`'s bytes, for a read of them: [`Reader::version`]
    /// without what else it records, which SQLite finds with fewer seeks.
    pub fn version_bytes(&self, key: &DocKey, number: u32) -> Result<Option<VersionBytes>> {
        if !self.sees(key) {
            return Ok(None);
        }
        backend!(self, reader => reader.version_bytes(key, number))
    }

    pub fn complete_versions(
        &self,
        key: &DocKey,
        typed: &str,
        limit: usize,
    ) -> Result<(Vec<u32>, u64)> {
        if !self.sees(key) {
            return Ok((Vec::new(), 0));
        }
        backend!(self, reader => reader.complete_versions(key, typed, limit))
    }

    pub fn count_versions(&self, key: &DocKey) -> Result<u64> {
        if !self.sees(key) {
            return Ok(0);
        }
        backend!(self, reader => reader.count_versions(key))
    }

    /// Unfiltered, whatever the areas: for `orchestra stats`.
    pub fn history_stats(&self) -> Result<HistoryStats> {
        backend!(self, reader => reader.history_stats())
    }

    /// One page of `search`. Seeing areas: its hits, totals, relaxed
    /// decision and a long query's choice of terms are those of the
    /// documents in them.
    pub fn search(
        &self,
        search: &Search,
        resume: Option<&SearchResume>,
        limit: usize,
    ) -> Result<SearchPage> {
        let areas = self.areas.as_ref();
        backend!(self, reader => reader.search_seeing(search, areas, resume, limit))
    }

    /// The current version of each of `keys`, in their order (`None` for
    /// one not stored, or not seen).
    pub fn versions_of(&self, keys: &[&DocKey]) -> Result<Vec<Option<u32>>> {
        if self.areas.is_none() {
            return backend!(self, reader => reader.versions_of(keys));
        }
        let seen: Vec<&DocKey> = keys.iter().copied().filter(|k| self.sees(k)).collect();
        let mut versions = backend!(self, reader => reader.versions_of(&seen))?.into_iter();
        Ok(keys
            .iter()
            .map(|k| match self.sees(k) {
                true => versions.next().flatten(),
                false => None,
            })
            .collect())
    }

    /// The outline import stored for `key` (a large UTF-8 document's):
    /// `None` for a document without one.
    pub fn outline(&self, key: &DocKey) -> Result<Option<crate::parts::outline::Stored>> {
        if !self.sees(key) {
            return Ok(None);
        }
        backend!(self, reader => reader.outline(key))
    }

    /// The bytes `start..start + len` of the body of `key` (fewer past its
    /// end), without loading the rest; `None` when it is not stored.
    pub fn body_range(&self, key: &DocKey, start: u64, len: u64) -> Result<Option<Vec<u8>>> {
        if !self.sees(key) {
            return Ok(None);
        }
        backend!(self, reader => reader.body_range(key, start, len))
    }

    /// Up to `limit` links of `key` after its link `after`, in the order
    /// they are written. Seeing areas: a link to a document outside them
    /// is to a missing one, and a mention names the first document of
    /// that name in them (none: no link).
    pub fn links_out(
        &self,
        key: &DocKey,
        after: Option<u32>,
        limit: usize,
    ) -> Result<Vec<OutLink>> {
        if !self.sees(key) {
            return Ok(Vec::new());
        }
        let areas = self.areas.as_ref();
        backend!(self, reader => reader.links_out_seeing(key, areas, after, limit))
    }

    /// Up to `limit` links to `key` after the link `after` (its source
    /// and place), in the sources' key order. Seeing areas: from sources
    /// in them only, mentions when `key` is the first of its name in them.
    /// A key outside them is a missing document's: the links to it that
    /// the sources seen hold (what a store without it answers), no mention.
    pub fn links_in(
        &self,
        key: &DocKey,
        after: Option<(&DocKey, u32)>,
        limit: usize,
    ) -> Result<Vec<InLink>> {
        let areas = self.areas.as_ref();
        backend!(self, reader => reader.links_in_seeing(key, areas, after, limit))
    }

    /// Up to `limit` links to documents that are not in the store, after
    /// the link `after`, in the sources' key order. Unfiltered: for
    /// `orchestra check`.
    pub fn broken_links(
        &self,
        after: Option<(&DocKey, u32)>,
        limit: usize,
    ) -> Result<Vec<BrokenLink>> {
        backend!(self, reader => reader.broken_links(after, limit))
    }

    /// Up to `limit` documents after `after` in key order, with what
    /// `orchestra check` reads of each. Unfiltered.
    pub fn check_page(&self, after: Option<&DocKey>, limit: usize) -> Result<Vec<CheckRow>> {
        backend!(self, reader => reader.check_page(after, limit))
    }

    /// The files the last import left out, by path. Unfiltered.
    pub fn skipped_files(&self) -> Result<Vec<SkippedFile>> {
        backend!(self, reader => reader.skipped_files())
    }
}

/// The one transaction of an import. Dropped without
/// [`ImportTx::commit`], it rolls back.
#[allow(clippy::large_enum_variant)] // One per import, never copied about.
pub enum ImportTx {
    Sqlite(sqlite::ImportTx),
    Postgres(PgImportTx),
}

impl ImportTx {
    pub fn seq(&self) -> i64 {
        either!(self, tx => tx.seq())
    }

    pub fn replaces(&self) -> bool {
        either!(self, tx => tx.replaces())
    }

    pub fn starts_empty(&self) -> bool {
        either!(self, tx => tx.starts_empty())
    }

    pub fn put(&self, doc: &NewDocument) -> Result<()> {
        either!(self, tx => tx.put(doc))
    }

    pub fn touch(&self, key: &DocKey, mtime_ns: i64) -> Result<()> {
        either!(self, tx => tx.touch(key, mtime_ns))
    }

    pub fn remove(&self, key: &DocKey) -> Result<()> {
        either!(self, tx => tx.remove(key))
    }

    pub fn record(&self, kind: ChangeKind, key: &DocKey) -> Result<()> {
        either!(self, tx => tx.record(kind, key))
    }

    /// The stored document `key` as this transaction sees it, for a write
    /// (none in a load into an empty database: nothing is stored yet).
    pub fn current(&self, key: &DocKey) -> Result<Option<Current>> {
        either!(self, tx => tx.current(key))
    }

    /// Records a write's move of `from` (removed as its version
    /// `from_version`) to `to` (its version `to_version` there).
    pub fn record_move(
        &self,
        from: &DocKey,
        from_version: u32,
        to: &DocKey,
        to_version: u32,
    ) -> Result<()> {
        either!(self, tx => tx.record_move(from, from_version, to, to_version))
    }

    /// The files this import left out (replacing the last import's list),
    /// written with its commit.
    pub fn record_skipped(&self, files: Vec<SkippedFile>) -> Result<()> {
        either!(self, tx => tx.record_skipped(files))
    }

    pub fn commit(self, changed: bool) -> Result<()> {
        either!(self, tx => tx.commit(changed))
    }
}

/// Notices commits (by any process, on any machine for PostgreSQL) and
/// reads the change feed after the last sequence seen.
pub enum ChangeWatcher {
    Sqlite(sqlite::ChangeWatcher),
    Postgres(Box<PgChangeWatcher>),
}

impl ChangeWatcher {
    /// Starts watching from the store's current state.
    pub fn new(store: &Store) -> Result<ChangeWatcher> {
        Ok(match store {
            Store::Sqlite(store) => ChangeWatcher::Sqlite(sqlite::ChangeWatcher::new(store)?),
            Store::Postgres(store) => {
                ChangeWatcher::Postgres(Box::new(PgChangeWatcher::new(store)?))
            }
        })
    }

    /// The changes committed since the last call, or `None`.
    pub fn poll(&mut self) -> Result<Option<ChangeBatch>> {
        either!(self, watcher => watcher.poll())
    }
}
