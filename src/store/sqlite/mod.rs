//! The SQLite store, the default and embedded one: schema migrations, the connection pool, reads for the server and the import transaction.
//!
//! # Locking
//! The database runs in WAL mode: one writer (an import) and any number of
//! readers (servers) at once. A reader sees the state of the last commit when
//! its statement started; an import is one `BEGIN IMMEDIATE` transaction, so a
//! reader never sees half of one. `busy_timeout` makes a second writer wait
//! instead of failing at once.
//!
//! # Compatibility
//! The schema lives in `migrations/sqlite/NNNN_name.sql`, applied in order when the
//! database opens and recorded in `PRAGMA user_version`. Never remove, reorder
//! or edit a migration; add a new one. A database written by a newer orchestra
//! (a higher `user_version`) is refused rather than misread.
//!
//! # Performance
//! Pages are 16 KiB (set before the first table): with 2 KB documents this
//! inserts about twice as fast as 4 KiB pages and makes the file smaller.
//! Statements are prepared once per connection (`prepare_cached`).

mod browse;
mod check;
mod feed;
mod history;
mod import_tx;
mod keys;
mod links;
mod moves;
mod outlines;
mod rank;
mod scan;
mod search;

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use r2d2::{Pool, PooledConnection};
use r2d2_sqlite::SqliteConnectionManager;
use rusqlite::{Connection, OpenFlags, OptionalExtension, params};

use crate::doc::{DocKey, Prefix};
use crate::store::{
    DocSummary, Document, FEED_IMPORTS, Fetched, FileStat, NewDocument, READ_CONNECTIONS, successor,
};

pub use browse::{DocMeta, PrefixStats, StoreStats};
pub use feed::{ChangeBatch, ChangeWatcher};
pub use history::{HistoryStats, PruneReport, PruneRules, Version, VersionBody, VersionBytes};
pub use import_tx::ImportTx;
pub(super) use search::{CLOSE, OPEN, body_start, clip, field_terms, pair_term};
pub use search::{Hit, SNIPPET_CHARS, SearchPage};

/// A migration: its SQL, and a step in Rust that fills what SQL alone cannot,
/// run in the same transaction.
pub(in crate::store) struct Migration {
    sql: &'static str,
    then: Option<fn(&Connection) -> Result<()>>,
}

/// The schema, one migration per entry, in order. Append only.
pub(in crate::store) const MIGRATIONS: &[Migration] = &[
    Migration {
        sql: include_str!("../../../migrations/sqlite/0001_documents.sql"),
        then: None,
    },
    Migration {
        sql: include_str!("../../../migrations/sqlite/0002_changes.sql"),
        then: None,
    },
    Migration {
        sql: include_str!("../../../migrations/sqlite/0003_listing_index.sql"),
        then: None,
    },
    Migration {
        sql: include_str!("../../../migrations/sqlite/0004_search.sql"),
        then: Some(search::backfill),
    },
    Migration {
        sql: include_str!("../../../migrations/sqlite/0005_imports.sql"),
        then: None,
    },
    Migration {
        sql: include_str!("../../../migrations/sqlite/0006_history.sql"),
        then: None,
    },
    Migration {
        sql: include_str!("../../../migrations/sqlite/0007_fields_index.sql"),
        then: Some(search::fill_fields),
    },
    Migration {
        sql: include_str!("../../../migrations/sqlite/0008_search_words.sql"),
        then: None,
    },
    Migration {
        sql: include_str!("../../../migrations/sqlite/0009_listing_inline.sql"),
        then: None,
    },
    Migration {
        sql: include_str!("../../../migrations/sqlite/0010_small_values_inline.sql"),
        then: None,
    },
    Migration {
        sql: include_str!("../../../migrations/sqlite/0011_versions_in_import_order.sql"),
        then: None,
    },
    Migration {
        sql: include_str!("../../../migrations/sqlite/0012_version_bodies_by_rowid.sql"),
        then: Some(history::fill_0012),
    },
    Migration {
        sql: include_str!("../../../migrations/sqlite/0013_earlier_bodies.sql"),
        then: None,
    },
    Migration {
        sql: include_str!("../../../migrations/sqlite/0014_document_heads.sql"),
        then: None,
    },
    Migration {
        sql: include_str!("../../../migrations/sqlite/0015_fields_terms.sql"),
        then: None,
    },
    Migration {
        sql: include_str!("../../../migrations/sqlite/0016_links.sql"),
        then: Some(links::fill_0016),
    },
    Migration {
        sql: include_str!("../../../migrations/sqlite/0017_skipped.sql"),
        then: None,
    },
    Migration {
        sql: include_str!("../../../migrations/sqlite/0018_moves.sql"),
        then: None,
    },
    Migration {
        sql: include_str!("../../../migrations/sqlite/0019_outlines.sql"),
        then: Some(outlines::fill_0019),
    },
    Migration {
        sql: include_str!("../../../migrations/sqlite/0020_api_keys.sql"),
        then: None,
    },
];

const PAGE_SIZE: u32 = 16 * 1024;
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);
const POOL_SIZE: u32 = READ_CONNECTIONS as u32;

/// A pool of connections to one database file.
#[derive(Clone)]
pub struct Store {
    pool: Pool<SqliteConnectionManager>,
    path: PathBuf,
    /// What the searches of its connections share.
    cache: std::sync::Arc<rank::Cache>,
}

impl Store {
    /// Opens the database at `path`, creating it (and its parent folders) when
    /// missing, and brings its schema up to date.
    pub fn open_or_create(path: &Path) -> Result<Store> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create the folder {}", parent.display()))?;
        }
        let mut conn = Connection::open(path)
            .with_context(|| format!("cannot open the database {}", path.display()))?;
        init_new_file(&conn)
            .and_then(|()| Ok(configure(&conn)?))
            .with_context(|| format!("cannot write to the database {}", path.display()))?;
        migrate(&mut conn).with_context(|| format!("cannot migrate {}", path.display()))?;
        drop(conn);
        Store::pool(path, OpenFlags::SQLITE_OPEN_READ_WRITE)
    }

    /// Opens a database that must already exist; used by `serve`. Migrates it
    /// when it is older than this orchestra.
    pub fn open_existing(path: &Path) -> Result<Store> {
        if !path.is_file() {
            bail!(
                "no database at {}: run `orchestra import DIR` first",
                path.display()
            );
        }
        let mut conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_WRITE)
            .with_context(|| format!("cannot open the database {}", path.display()))?;
        let version = configure(&conn)
            .map_err(anyhow::Error::from)
            .and_then(|()| schema_version(&conn))
            .with_context(|| format!("cannot read the database {}", path.display()))?;
        if version != MIGRATIONS.len() {
            migrate(&mut conn).with_context(|| format!("cannot migrate {}", path.display()))?;
        }
        drop(conn);
        Store::pool(path, OpenFlags::SQLITE_OPEN_READ_WRITE)
    }

    /// Opens an existing, current database without ever writing to it (`--dry-run`).
    pub fn open_read_only(path: &Path) -> Result<Store> {
        if !path.is_file() {
            bail!(
                "no database at {}: run `orchestra import DIR` first",
                path.display()
            );
        }
        let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY)
            .with_context(|| format!("cannot open the database {}", path.display()))?;
        let version = schema_version(&conn)
            .with_context(|| format!("cannot read the database {}", path.display()))?;
        if version < MIGRATIONS.len() {
            bail!(
                "the database {} has schema version {version}, this orchestra expects {}: \
                 run `orchestra import DIR` or `orchestra serve` once to upgrade it",
                path.display(),
                MIGRATIONS.len()
            );
        }
        if version > MIGRATIONS.len() {
            bail!(
                "the database {} has schema version {version}, newer than this orchestra knows ({}): upgrade orchestra",
                path.display(),
                MIGRATIONS.len()
            );
        }
        drop(conn);
        Store::pool(path, OpenFlags::SQLITE_OPEN_READ_ONLY)
    }

    fn pool(path: &Path, flags: OpenFlags) -> Result<Store> {
        // One cache of the search's row lengths and rows seen for all the
        // pool's connections.
        let cache = std::sync::Arc::new(rank::Cache::default());
        let shared = std::sync::Arc::clone(&cache);
        let manager = SqliteConnectionManager::file(path)
            .with_flags(flags | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI)
            .with_init(move |conn| {
                configure(conn)?;
                rank::register(conn, &shared)
            });
        let pool = Pool::builder()
            .max_size(POOL_SIZE)
            .min_idle(Some(1))
            .build(manager)
            .with_context(|| format!("cannot open the database {}", path.display()))?;
        Ok(Store {
            pool,
            path: path.to_path_buf(),
            cache,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The folder of the project the database holds, as the last import
    /// recorded it; `None` before any import.
    pub fn project_root(&self) -> Result<Option<String>> {
        let conn = self.connection()?;
        Ok(conn
            .query_row("SELECT root FROM project", [], |r| r.get(0))
            .optional()?)
    }

    /// A connection for reads. Each call is one consistent view of the last commit.
    pub fn reader(&self) -> Result<Reader> {
        let conn = self.connection()?;
        Ok(Reader {
            conn,
            cache: std::sync::Arc::clone(&self.cache),
        })
    }

    /// A connection in a write transaction (`BEGIN IMMEDIATE`: the write
    /// lock now, or after `busy_timeout`, never a failure halfway).
    fn begin_write(&self) -> Result<PooledConnection<SqliteConnectionManager>> {
        let conn = self.connection()?;
        conn.execute_batch("BEGIN IMMEDIATE")
            .with_context(|| format!("cannot write to the database {}", self.path.display()))?;
        Ok(conn)
    }

    /// Starts the one transaction of an import of the project at `root`.
    /// A database that holds another project is refused unless `replace`,
    /// which empties it first.
    pub fn begin_import(&self, root: &str, replace: bool) -> Result<ImportTx> {
        let conn = self.begin_write()?;
        let bulk = !conn.query_row("SELECT EXISTS (SELECT 1 FROM documents)", [], |r| {
            r.get::<_, bool>(0)
        })?;
        let index = match bulk {
            true => None,
            false => Some(search::begin(&conn)?),
        };
        let mut tx = ImportTx {
            conn,
            seq: 0,
            replaced: false,
            index,
            finished: false,
        };
        let seq = match project(&tx.conn, root, replace, &self.path)? {
            Project::New => {
                tx.conn.execute(
                    "INSERT INTO project (singleton, root) VALUES (1, ?1)",
                    [root],
                )?;
                0
            }
            Project::Same { seq } => seq,
            Project::Replaced { seq } => {
                // The old project's documents stay until the walk decides:
                // those the new project lacks are removed, and recorded as such.
                tx.conn.execute("UPDATE project SET root = ?1", [root])?;
                tx.replaced = true;
                seq
            }
        };
        tx.seq = seq + 1;
        Ok(tx)
    }

    /// What [`Store::begin_import`] followed by [`Store::scan`] would see,
    /// without writing: for `--dry-run`.
    pub fn preview_import(&self, root: &str, replace: bool) -> Result<crate::store::StoredStats> {
        let conn = self.connection()?;
        let stale = matches!(
            project(&conn, root, replace, &self.path)?,
            Project::Replaced { .. }
        );
        drop(conn);
        self.scan(stale)
    }

    /// A pooled connection, for one use.
    fn connection(&self) -> Result<PooledConnection<SqliteConnectionManager>> {
        self.pool.get().context("no database connection available")
    }
}

enum Project {
    New,
    Same { seq: i64 },
    Replaced { seq: i64 },
}

/// Which project the database holds, against the one being imported.
fn project(conn: &Connection, root: &str, replace: bool, db: &Path) -> Result<Project> {
    let current: Option<(String, i64)> = conn
        .query_row("SELECT root, seq FROM project", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .optional()?;
    match current {
        None => Ok(Project::New),
        Some((stored, seq)) if stored == root => Ok(Project::Same { seq }),
        Some((_, seq)) if replace => Ok(Project::Replaced { seq }),
        Some((stored, _)) => bail!(
            "the database {} holds the project {stored}, not {root} (pass --replace to replace it)",
            db.display()
        ),
    }
}

/// Per-connection settings; run on every new connection.
pub(super) fn configure(conn: &Connection) -> rusqlite::Result<()> {
    conn.busy_timeout(BUSY_TIMEOUT)?;
    // journal_mode is stored in the file; asking again is cheap and also
    // covers a database created by another tool.
    let read_only = conn.is_readonly(rusqlite::MAIN_DB)?;
    if !read_only {
        conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get::<_, String>(0))?;
    }
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    Ok(())
}

/// The page size can only be chosen before the first table is written.
fn init_new_file(conn: &Connection) -> Result<()> {
    let tables: i64 = conn.query_row("SELECT count(*) FROM sqlite_schema", [], |r| r.get(0))?;
    if tables == 0 {
        conn.pragma_update(None, "page_size", PAGE_SIZE)?;
    }
    Ok(())
}

fn schema_version(conn: &Connection) -> Result<usize> {
    let version: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    usize::try_from(version).context("negative schema version")
}

/// Applies the migrations after `PRAGMA user_version`, in one exclusive
/// transaction, so two processes opening a new database at once cannot both
/// apply them.
fn migrate(conn: &mut Connection) -> Result<()> {
    if schema_version(conn)? == MIGRATIONS.len() {
        return Ok(());
    }
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Exclusive)?;
    let version = schema_version(&tx)?;
    if version > MIGRATIONS.len() {
        bail!(
            "schema version {version} is newer than this orchestra knows ({}): upgrade orchestra",
            MIGRATIONS.len()
        );
    }
    let documents: i64 = match version {
        0 => 0,
        _ => tx.query_row("SELECT count(*) FROM documents", [], |r| r.get(0))?,
    };
    // An upgrade of a database that holds documents can take a while (a
    // minute or more at a million versions): the user is told why, on
    // stderr (`serve` may be the one migrating).
    let started = std::time::Instant::now();
    let told = version > 0 && documents > 0;
    if told {
        eprintln!(
            "orchestra: upgrading the database from schema {version} to {} ({documents} documents)…",
            MIGRATIONS.len()
        );
    }
    for migration in &MIGRATIONS[version..] {
        tx.execute_batch(migration.sql)?;
        if let Some(step) = migration.then {
            step(&tx)?;
        }
    }
    tx.pragma_update(None, "user_version", MIGRATIONS.len() as i64)?;
    tx.commit()?;
    if told {
        eprintln!(
            "orchestra: upgraded the database in {:.1} s",
            started.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

/// Binds `value` as the next of `args`, numbered (`?N`), for
/// [`areas_sql`](crate::store::areas_sql) in a statement of numbered
/// parameters.
pub(super) fn numbered(args: &mut Vec<rusqlite::types::Value>, value: String) -> String {
    args.push(value.into());
    format!("?{}", args.len())
}

pub(super) fn key_from_row(prefix: &str, id: String) -> rusqlite::Result<DocKey> {
    let prefix = Prefix::parse(prefix).ok_or_else(|| {
        rusqlite::Error::FromSqlConversionFailure(
            0,
            rusqlite::types::Type::Text,
            format!("unknown prefix {prefix:?} in the database").into(),
        )
    })?;
    Ok(DocKey { prefix, id })
}

/// Read access for the server: every method is one statement, so one
/// consistent view of the last commit.
pub struct Reader {
    conn: PooledConnection<SqliteConnectionManager>,
    /// The store's search cache (rows seen by a set of areas).
    cache: std::sync::Arc<rank::Cache>,
}

impl Reader {
    /// Up to `limit` documents after `after` (from the start when `None`), in
    /// (prefix, id) order: a keyset page, as cheap at the end as at the start.
    pub fn page(&self, after: Option<&DocKey>, limit: usize) -> Result<Vec<DocSummary>> {
        let (prefix, id) = match after {
            Some(key) => (key.prefix.as_str(), key.id.as_str()),
            None => ("", ""),
        };
        let mut stmt = self.conn.prepare_cached(
            "SELECT prefix, id, title, description, size, mtime_ns FROM documents
             WHERE (prefix, id) > (?1, ?2) ORDER BY prefix, id LIMIT ?3",
        )?;
        let rows = stmt.query_map(params![prefix, id, limit as i64], |r| {
            Ok(DocSummary {
                key: key_from_row(r.get_ref(0)?.as_str()?, r.get(1)?)?,
                title: r.get(2)?,
                description: r.get(3)?,
                size: r.get::<_, i64>(4)? as u64,
                mtime_ns: r.get(5)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// The document with `key`, unless its body is over `max_body` bytes:
    /// then only its size, and the body is never loaded.
    pub fn get(&self, key: &DocKey, max_body: u64) -> Result<Option<Fetched>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT size, title, description, frontmatter, mtime_ns, is_text, body, version, hash
             FROM documents WHERE prefix = ?1 AND id = ?2",
        )?;
        let doc = stmt
            .query_row(params![key.prefix.as_str(), key.id], |r| {
                let size = r.get::<_, i64>(0)? as u64;
                if size > max_body {
                    // Columns are decoded on access: the body stays on disk.
                    return Ok(Fetched::TooLarge { size });
                }
                Ok(Fetched::Document(Document {
                    key: key.clone(),
                    title: r.get(1)?,
                    description: r.get(2)?,
                    frontmatter: r.get(3)?,
                    mtime_ns: r.get(4)?,
                    is_text: r.get(5)?,
                    body: r.get(6)?,
                    version: r.get(7)?,
                    hash: hash_of(r.get_ref(8)?.as_blob()?),
                }))
            })
            .optional()?;
        Ok(doc)
    }

    /// The current version of each of `keys` (`None` for a document that
    /// is not stored or has no version), in their order: what a search's
    /// hits carry for a write's `ifVersion`. One point read each.
    pub fn versions_of(&self, keys: &[&DocKey]) -> Result<Vec<Option<u32>>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT version FROM documents WHERE prefix = ?1 AND id = ?2")?;
        keys.iter()
            .map(|key| {
                Ok(stmt
                    .query_row(params![key.prefix.as_str(), key.id], |r| r.get(0))
                    .optional()?
                    .flatten())
            })
            .collect()
    }

    /// Ids under `prefix` that begin with `typed`, at most `limit`, and how
    /// many there are in all. A range scan of the (prefix, id) index.
    pub fn complete_ids(
        &self,
        prefix: Prefix,
        typed: &str,
        limit: usize,
    ) -> Result<(Vec<String>, u64)> {
        // Every id that begins with `typed` sorts in [typed, upper): UTF-8
        // byte order is code point order.
        let upper = successor(typed);
        let (ids, total) =
            match &upper {
                Some(upper) => {
                    let mut stmt = self.conn.prepare_cached(
                        "SELECT id FROM documents WHERE prefix = ?1 AND id >= ?2 AND id < ?3
                     ORDER BY id LIMIT ?4",
                    )?;
                    let ids = stmt
                        .query_map(params![prefix.as_str(), typed, upper, limit as i64], |r| {
                            r.get(0)
                        })?
                        .collect::<rusqlite::Result<Vec<String>>>()?;
                    let total: i64 = self.conn.prepare_cached(
                    "SELECT count(*) FROM documents WHERE prefix = ?1 AND id >= ?2 AND id < ?3",
                )?
                .query_row(params![prefix.as_str(), typed, upper], |r| r.get(0))?;
                    (ids, total)
                }
                None => {
                    let mut stmt = self.conn.prepare_cached(
                    "SELECT id FROM documents WHERE prefix = ?1 AND id >= ?2 ORDER BY id LIMIT ?3",
                )?;
                    let ids = stmt
                        .query_map(params![prefix.as_str(), typed, limit as i64], |r| r.get(0))?
                        .collect::<rusqlite::Result<Vec<String>>>()?;
                    let total: i64 = self
                        .conn
                        .prepare_cached(
                            "SELECT count(*) FROM documents WHERE prefix = ?1 AND id >= ?2",
                        )?
                        .query_row(params![prefix.as_str(), typed], |r| r.get(0))?;
                    (ids, total)
                }
            };
        Ok((ids, total as u64))
    }

    /// The number of documents.
    pub fn count(&self) -> Result<u64> {
        let n: i64 = self
            .conn
            .prepare_cached("SELECT count(*) FROM documents")?
            .query_row([], |r| r.get(0))?;
        Ok(n as u64)
    }
}

/// A stored 32-byte hash; a shorter or longer one (never written) reads as
/// zeros rather than failing a read.
fn hash_of(bytes: &[u8]) -> [u8; 32] {
    bytes.try_into().unwrap_or([0; 32])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::ChangeKind;

    fn temp_db() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/orchestra.db");
        (dir, path)
    }

    fn doc(prefix: Prefix, id: &str, body: &str) -> NewDocument {
        NewDocument::new(
            DocKey::new(prefix, id),
            FileStat {
                size: body.len() as u64,
                mtime_ns: 1,
                hash: *blake3::hash(body.as_bytes()).as_bytes(),
            },
            true,
            id.to_string(),
            None,
            None,
            body.as_bytes().to_vec(),
        )
    }

    #[test]
    fn migrate_twice() {
        let (_dir, path) = temp_db();
        Store::open_or_create(&path).unwrap();
        let store = Store::open_or_create(&path).unwrap();
        let reader = store.reader().unwrap();
        let version: i64 = reader
            .conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        assert_eq!(version as usize, MIGRATIONS.len());
        let page_size: i64 = reader
            .conn
            .pragma_query_value(None, "page_size", |r| r.get(0))
            .unwrap();
        assert_eq!(page_size, PAGE_SIZE as i64);
        let mode: String = reader
            .conn
            .pragma_query_value(None, "journal_mode", |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
    }

    #[test]
    fn a_database_from_before_search_gets_its_index() {
        let (_dir, path) = temp_db();
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let conn = Connection::open(&path).unwrap();
        for migration in &MIGRATIONS[..3] {
            conn.execute_batch(migration.sql).unwrap();
        }
        conn.pragma_update(None, "user_version", 3).unwrap();
        conn.execute_batch(
            "INSERT INTO documents VALUES ('notes', 'a', 1, 1, zeroblob(32), 1, 'Alpha', NULL,
                 '{\"status\":\"open\"}', 1, CAST('---\nstatus: open\n---\nzeta words' AS BLOB));
             INSERT INTO documents VALUES ('notes', 'b', 1, 1, x'00', 1, 'Beta', NULL,
                 NULL, 1, CAST('status is not a field here' AS BLOB));",
        )
        .unwrap();
        drop(conn);
        let store = Store::open_existing(&path).unwrap();
        let reader = store.reader().unwrap();
        let found = |query: &str, filters: &[&str]| -> Vec<String> {
            let search = crate::search::Search::new(
                query,
                None,
                filters
                    .iter()
                    .map(|f| crate::search::Filter::parse(f).unwrap())
                    .collect(),
            )
            .unwrap();
            let page = reader.search(&search, None, 10).unwrap();
            page.hits.iter().map(|h| h.key.to_string()).collect()
        };
        assert_eq!(found("zeta", &[]), ["notes/a"]);
        assert_eq!(found("alpha", &[]), ["notes/a"]);
        // The frontmatter block is not text to search; its fields filter.
        assert_eq!(found("status", &[]), ["notes/b"]);
        assert_eq!(found("", &["status=open"]), ["notes/a"]);
        // History starts: every document at version 1, its bytes current.
        let a = DocKey::new(Prefix::Notes, "a");
        let history = reader.history(&a, None, 10).unwrap();
        assert_eq!(history.len(), 1);
        assert!(history[0].number == 1 && history[0].current);
        assert_eq!(
            reader.version(&a, 1).unwrap().unwrap().body,
            b"---\nstatus: open\n---\nzeta words"
        );
    }

    #[test]
    fn newer_schema_is_refused() {
        let (_dir, path) = temp_db();
        Store::open_or_create(&path).unwrap();
        let conn = Connection::open(&path).unwrap();
        conn.pragma_update(None, "user_version", 99).unwrap();
        drop(conn);
        let err = Store::open_existing(&path).err().unwrap();
        assert!(
            format!("{err:#}").contains("newer than this orchestra"),
            "{err:#}"
        );
    }

    #[test]
    fn pages_follow_key_order() {
        let (_dir, path) = temp_db();
        let store = Store::open_or_create(&path).unwrap();
        let tx = store.begin_import("/p", false).unwrap();
        for (prefix, id) in [
            (Prefix::Notes, "b"),
            (Prefix::Features, "z"),
            (Prefix::Docs, "adr/2"),
            (Prefix::Docs, "adr/10"),
            (Prefix::Features, "a"),
        ] {
            tx.put(&doc(prefix, id, "x")).unwrap();
        }
        tx.commit(true).unwrap();
        let reader = store.reader().unwrap();
        let first = reader.page(None, 3).unwrap();
        let keys: Vec<String> = first.iter().map(|d| d.key.to_string()).collect();
        assert_eq!(keys, ["docs/adr/10", "docs/adr/2", "features/a"]);
        let rest = reader.page(Some(&first[2].key), 3).unwrap();
        let keys: Vec<String> = rest.iter().map(|d| d.key.to_string()).collect();
        assert_eq!(keys, ["features/z", "notes/b"]);
        assert!(reader.page(Some(&rest[1].key), 3).unwrap().is_empty());
    }

    #[test]
    fn completion_is_a_prefix_range() {
        let (_dir, path) = temp_db();
        let store = Store::open_or_create(&path).unwrap();
        let tx = store.begin_import("/p", false).unwrap();
        for id in [
            "FEAT-001", "FEAT-002", "FEAT-010", "FEAU", "FEAT", "café", "cafë",
        ] {
            tx.put(&doc(Prefix::Features, id, "x")).unwrap();
        }
        tx.put(&doc(Prefix::Notes, "FEAT-003", "x")).unwrap();
        tx.commit(true).unwrap();
        let reader = store.reader().unwrap();
        let check = |typed: &str, limit: usize, ids: &[&str], total: u64| {
            let (got, got_total) = reader.complete_ids(Prefix::Features, typed, limit).unwrap();
            assert_eq!(
                (got, got_total),
                (ids.iter().map(|s| s.to_string()).collect(), total),
                "{typed}"
            );
        };
        check("FEAT-0", 100, &["FEAT-001", "FEAT-002", "FEAT-010"], 3);
        check("FEAT-0", 2, &["FEAT-001", "FEAT-002"], 3);
        check(
            "FEAT",
            100,
            &["FEAT", "FEAT-001", "FEAT-002", "FEAT-010"],
            4,
        );
        check("caf", 100, &["café", "cafë"], 2);
        check("x", 100, &[], 0);
        check("", 1, &["FEAT"], 7);
    }

    #[test]
    fn successor_bounds_prefixes() {
        assert_eq!(successor("ab").as_deref(), Some("ac"));
        assert_eq!(successor(""), None);
        assert_eq!(successor("a\u{10FFFF}").as_deref(), Some("b"));
        assert_eq!(successor("\u{D7FF}").as_deref(), Some("\u{E000}"));
    }

    #[test]
    fn dropped_import_rolls_back() {
        let (_dir, path) = temp_db();
        let store = Store::open_or_create(&path).unwrap();
        let tx = store.begin_import("/p", false).unwrap();
        tx.put(&doc(Prefix::Notes, "kept", "1")).unwrap();
        tx.commit(true).unwrap();
        let tx = store.begin_import("/p", false).unwrap();
        tx.put(&doc(Prefix::Notes, "lost", "2")).unwrap();
        tx.remove(&DocKey::new(Prefix::Notes, "kept")).unwrap();
        drop(tx);
        let reader = store.reader().unwrap();
        assert_eq!(reader.count().unwrap(), 1);
        assert!(
            reader
                .get(&DocKey::new(Prefix::Notes, "kept"), u64::MAX)
                .unwrap()
                .is_some()
        );
    }

    /// More documents than a chunk, in an order that is not key order:
    /// the scan yields each once, in key order, as the import found them.
    #[test]
    fn the_scan_reads_every_stored_document_in_key_order_from_before_the_import() {
        let (_dir, path) = temp_db();
        let store = Store::open_or_create(&path).unwrap();
        let tx = store.begin_import("/p", false).unwrap();
        let mut keys = Vec::new();
        for i in (0..5000).rev() {
            let prefix = Prefix::ALL[i % 3];
            let id = format!("{}/{i}", i % 7);
            tx.put(&doc(prefix, &id, "x")).unwrap();
            keys.push(DocKey::new(prefix, id));
        }
        tx.commit(true).unwrap();
        keys.sort();

        let tx = store.begin_import("/p", false).unwrap();
        let scan = store.scan(tx.replaces()).unwrap();
        // The import's own writes, before and during the scan, are not in it.
        tx.remove(&keys[0]).unwrap();
        tx.put(&doc(Prefix::Notes, "zzz", "new")).unwrap();
        let scanned: Vec<DocKey> = scan.map(|row| row.unwrap().0).collect();
        assert_eq!(scanned, keys);
        drop(tx);
        assert_eq!(store.reader().unwrap().count().unwrap(), 5000);
    }

    #[test]
    fn another_project_is_refused_unless_replaced() {
        let (_dir, path) = temp_db();
        let store = Store::open_or_create(&path).unwrap();
        let tx = store.begin_import("/one", false).unwrap();
        tx.put(&doc(Prefix::Notes, "a", "1")).unwrap();
        tx.commit(true).unwrap();
        let err = store.begin_import("/two", false).err().unwrap();
        assert!(err.to_string().contains("holds the project /one"), "{err}");
        let tx = store.begin_import("/two", true).unwrap();
        assert!(tx.replaces());
        let stats: Vec<_> = store.scan(tx.replaces()).unwrap().collect();
        assert_eq!(stats.len(), 1, "the old documents are there to be compared");
        assert!(
            stats
                .iter()
                .all(|s| s.as_ref().unwrap().1.mtime_ns == i64::MIN),
            "and never taken as unchanged"
        );
        tx.commit(false).unwrap();
        let err = store.begin_import("/one", false).err().unwrap();
        assert!(err.to_string().contains("holds the project /two"), "{err}");
    }

    #[test]
    fn the_watcher_reads_only_new_changes() {
        let (_dir, path) = temp_db();
        let store = Store::open_or_create(&path).unwrap();
        let mut watcher = ChangeWatcher::new(&store).unwrap();
        assert_eq!(watcher.poll().unwrap(), None);

        let tx = store.begin_import("/p", false).unwrap();
        let a = doc(Prefix::Notes, "a", "1");
        tx.put(&a).unwrap();
        tx.record(ChangeKind::New, &a.key).unwrap();
        tx.commit(true).unwrap();
        let batch = watcher.poll().unwrap().unwrap();
        assert_eq!(batch.changes, [(ChangeKind::New, a.key.clone())]);
        assert!(!batch.truncated);
        assert_eq!(watcher.poll().unwrap(), None, "nothing new");

        // An import that changed nothing commits no sequence number.
        store
            .begin_import("/p", false)
            .unwrap()
            .commit(false)
            .unwrap();
        assert_eq!(watcher.poll().unwrap(), None);

        for body in ["2", "3"] {
            let tx = store.begin_import("/p", false).unwrap();
            tx.put(&doc(Prefix::Notes, "a", body)).unwrap();
            tx.record(ChangeKind::Updated, &a.key).unwrap();
            tx.commit(true).unwrap();
        }
        let batch = watcher.poll().unwrap().unwrap();
        assert_eq!(batch.seq, 3);
        assert_eq!(batch.changes.len(), 2, "both imports since the last poll");
    }

    #[test]
    fn a_trimmed_feed_says_so() {
        let (_dir, path) = temp_db();
        let store = Store::open_or_create(&path).unwrap();
        let mut watcher = ChangeWatcher::new(&store).unwrap();
        for i in 0..FEED_IMPORTS + 2 {
            let tx = store.begin_import("/p", false).unwrap();
            let d = doc(Prefix::Notes, "a", &i.to_string());
            tx.put(&d).unwrap();
            tx.record(ChangeKind::Updated, &d.key).unwrap();
            tx.commit(true).unwrap();
        }
        let oldest: i64 = store
            .reader()
            .unwrap()
            .conn
            .query_row("SELECT min(seq) FROM changes", [], |r| r.get(0))
            .unwrap();
        assert_eq!(oldest, 3, "the feed keeps the last {FEED_IMPORTS} imports");
        let batch = watcher.poll().unwrap().unwrap();
        assert!(batch.truncated);
        assert_eq!(batch.seq, FEED_IMPORTS + 2);
    }

    #[test]
    fn a_body_over_the_limit_is_not_loaded() {
        let (_dir, path) = temp_db();
        let store = Store::open_or_create(&path).unwrap();
        let tx = store.begin_import("/p", false).unwrap();
        tx.put(&doc(Prefix::Notes, "big", &"x".repeat(100)))
            .unwrap();
        tx.commit(true).unwrap();
        let reader = store.reader().unwrap();
        let key = DocKey::new(Prefix::Notes, "big");
        assert_eq!(
            reader.get(&key, 99).unwrap(),
            Some(Fetched::TooLarge { size: 100 })
        );
        assert!(
            matches!(reader.get(&key, 100).unwrap(), Some(Fetched::Document(d)) if d.body.len() == 100)
        );
    }
}
