//! The one write transaction of an import on PostgreSQL: documents, their versions, their search vector and `where` terms, their links and (a large document's) outline, and the feed rows, committed together, then announced to every server (NOTIFY).
//!
//! The same rules as the SQLite `ImportTx`, method for method: a document
//! whose bytes changed gets a new version and its old bytes are kept once
//! per hash (zstd); a removal is a version without bytes; the feed rows go
//! under the import's sequence number. Imports of one database serialize
//! on an advisory lock taken when the transaction begins and held to its
//! end, so sequence order is commit order.

use std::borrow::Cow;
use std::cell::{RefCell, RefMut};

use anyhow::{Context, Result, anyhow, bail};
use postgres::Statement;

use super::PgStore;
use super::load::Load;
use super::pool::Pooled;
use super::words::{TsVector, document_vector};
use crate::doc::{ChangeKind, DocKey};
use crate::store::bodies::compress;
use crate::store::{FEED_IMPORTS, NewDocument, kind_code};

/// The advisory lock an import holds from its start to its commit.
pub(super) const IMPORT_LOCK: i64 = 0x6f72_6368_696d_706f; // "orchimpo"

/// The channel on which a commit announces its sequence number.
pub const FEED_CHANNEL: &str = "orchestra_feed";

const UPDATE_DOCUMENT: &str = "UPDATE documents SET
         size = $3, mtime_ns = $4, hash = $5, is_text = $6, title = $7, description = $8,
         frontmatter = $9, seq = $10, body = $11, body_start = $12, search = $13, fields = $14
     WHERE prefix = $1 AND id = $2";

const INSERT_DOCUMENT: &str = "INSERT INTO documents
         (prefix, id, size, mtime_ns, hash, is_text, title, description, frontmatter,
          seq, body, body_start, search, fields)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)";

/// The one transaction of an import. Dropped without [`PgImportTx::commit`],
/// it rolls back and the database is exactly as before.
pub struct PgImportTx {
    /// The connection of the transaction; `None` while a load's COPY
    /// thread holds it.
    conn: RefCell<Option<Pooled>>,
    /// The documents of a load into an empty database, sent in batches.
    load: Option<RefCell<Load>>,
    seq: i64,
    replaced: bool,
    starts_empty: bool,
    /// The files this import left out, written at the commit.
    pub(super) skipped: RefCell<Option<Vec<crate::store::SkippedFile>>>,
    finished: bool,
}

/// The stored document an import replaces or removes, read once.
struct Stored {
    /// The import that last changed its bytes.
    seq: i64,
    hash: Vec<u8>,
    size: i64,
    body: Vec<u8>,
    title: String,
}

impl PgStore {
    /// Starts the one transaction of an import of the project at `root`,
    /// after any import already running on this database has ended. A
    /// database that holds another project is refused unless `replace`.
    pub fn begin_import(&self, root: &str, replace: bool) -> Result<PgImportTx> {
        let mut conn = self.connection()?;
        conn.batch_execute("BEGIN")?;
        let mut tx = PgImportTx {
            conn: RefCell::new(Some(conn)),
            load: None,
            seq: 0,
            replaced: false,
            starts_empty: false,
            skipped: RefCell::new(None),
            finished: false,
        };
        tx.client()
            .execute("SELECT pg_advisory_xact_lock($1)", &[&IMPORT_LOCK])?;
        let current = tx
            .client()
            .query_opt("SELECT root, seq FROM project", &[])?
            .map(|row| (row.get::<_, String>(0), row.get::<_, i64>(1)));
        let seq = match current {
            None => {
                tx.client().execute(
                    "INSERT INTO project (singleton, root) VALUES (1, $1)",
                    &[&root],
                )?;
                0
            }
            Some((stored, seq)) if stored == root => seq,
            Some((_, seq)) if replace => {
                tx.client()
                    .execute("UPDATE project SET root = $1", &[&root])?;
                tx.replaced = true;
                seq
            }
            Some((stored, _)) => bail!(
                "the database {} holds the project {stored}, not {root} (pass --replace to replace it)",
                self.target
            ),
        };
        let holds_documents: bool = tx
            .client()
            .query_one("SELECT EXISTS (SELECT 1 FROM documents)", &[])?
            .get(0);
        tx.starts_empty = !holds_documents;
        tx.seq = seq + 1;
        if tx.starts_empty {
            // With no history either (a first import), every document is
            // version 1, copied beside it.
            let first_versions = !tx
                .client()
                .query_one("SELECT EXISTS (SELECT 1 FROM versions)", &[])?
                .get::<_, bool>(0);
            if let Some(conn) = tx.conn.get_mut().take() {
                tx.load = Some(RefCell::new(Load::start(conn, tx.seq, first_versions)));
            }
        }
        Ok(tx)
    }
}

impl PgImportTx {
    /// The sequence number this import's changes are recorded under.
    pub fn seq(&self) -> i64 {
        self.seq
    }

    /// The database held another project, which this import replaces.
    pub fn replaces(&self) -> bool {
        self.replaced
    }

    /// The database held no document when the import began.
    pub fn starts_empty(&self) -> bool {
        self.starts_empty
    }

    pub(super) fn client(&self) -> RefMut<'_, Pooled> {
        RefMut::map(self.conn.borrow_mut(), |conn| {
            conn.as_mut()
                .expect("the import's connection is with its load's COPY thread")
        })
    }

    /// `sql`, prepared on this connection the first time.
    fn prepared(&self, sql: &'static str) -> Result<Statement> {
        Ok(self.client().prepared(sql)?)
    }

    /// The stored document with this key, if there is one.
    fn stored(&self, key: &DocKey) -> Result<Option<Stored>> {
        let statement = self.prepared(
            "SELECT hash, size, body, title, seq FROM documents WHERE prefix = $1 AND id = $2",
        )?;
        Ok(self
            .client()
            .query_opt(&statement, &[&key.prefix.as_str(), &key.id])?
            .map(|row| Stored {
                hash: row.get(0),
                size: row.get(1),
                body: row.get(2),
                title: row.get(3),
                seq: row.get(4),
            }))
    }

    /// As `store::ImportTx::current`.
    pub fn current(&self, key: &DocKey) -> Result<Option<crate::store::Current>> {
        if self.load.is_some() {
            return Ok(None);
        }
        let statement = self.prepared(
            "SELECT d.hash, d.is_text,
                    (SELECT max(v.version) FROM versions v
                     WHERE v.prefix = d.prefix AND v.id = d.id)
             FROM documents d WHERE d.prefix = $1 AND d.id = $2",
        )?;
        let row = self
            .client()
            .query_opt(&statement, &[&key.prefix.as_str(), &key.id])?;
        row.map(|row| {
            let hash: Vec<u8> = row.get(0);
            Ok(crate::store::Current {
                version: row.get::<_, Option<i32>>(2).unwrap_or(0) as u32,
                hash: hash
                    .try_into()
                    .map_err(|_| anyhow!("{key}: a stored hash is not 32 bytes"))?,
                is_text: row.get(1),
            })
        })
        .transpose()
    }

    /// The number the next version of `key` gets.
    fn next_version(&self, key: &DocKey) -> Result<i32> {
        let statement = self.prepared(
            "SELECT coalesce(max(version), 0) + 1 FROM versions WHERE prefix = $1 AND id = $2",
        )?;
        Ok(self
            .client()
            .query_one(&statement, &[&key.prefix.as_str(), &key.id])?
            .get(0))
    }

    /// Keeps the bytes of `old` in `bodies`, unless that body is there.
    fn archive(&self, old: &Stored) -> Result<()> {
        let compressed = compress(&old.body).context("cannot compress a body")?;
        let statement = self.prepared(
            "INSERT INTO bodies (hash, size, zstd) VALUES ($1, $2, $3) ON CONFLICT (hash) DO NOTHING",
        )?;
        self.client()
            .execute(&statement, &[&old.hash, &old.size, &compressed])?;
        Ok(())
    }

    /// Inserts a document or replaces the stored one with the same key.
    pub fn put(&self, doc: &NewDocument) -> Result<()> {
        if let Some(load) = &self.load {
            let mut load = load.borrow_mut();
            if load.put(doc).is_err() {
                // The COPY thread stopped on an error: take the connection
                // back (for the rollback), and say what the error was.
                let (conn, copied) = load
                    .stop()
                    .ok_or_else(|| anyhow!("the load's COPY thread was lost"))?;
                *self.conn.borrow_mut() = Some(conn);
                copied?;
                bail!("the load's COPY thread stopped");
            }
            return Ok(());
        }
        let key = &doc.key;
        let old = self.stored(key)?;
        let same_bytes = old
            .as_ref()
            .is_some_and(|old| old.hash == doc.stat.hash.as_slice());
        if !same_bytes {
            if let Some(old) = &old {
                self.archive(old)?;
            }
            let number = self.next_version(key)?;
            let seq = self.seq;
            let statement = self.prepared(
                "INSERT INTO versions (prefix, id, version, hash, size, title, is_text, seq)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
            )?;
            self.client().execute(
                &statement,
                &[
                    &key.prefix.as_str(),
                    &key.id,
                    &number,
                    &&doc.stat.hash[..],
                    &(doc.stat.size as i64),
                    &text(&doc.title),
                    &doc.is_text,
                    &seq,
                ],
            )?;
        }
        let vector = vector(doc);
        let fields: Vec<&str> = doc
            .field_terms
            .split(' ')
            .filter(|t| !t.is_empty())
            .collect();
        // The same bytes again make no version, and do not change the
        // document: it keeps the sequence of its newest version (as SQLite,
        // whose history finds that version under it).
        let (sql, seq) = match &old {
            Some(old) if same_bytes => (UPDATE_DOCUMENT, old.seq),
            Some(_) => (UPDATE_DOCUMENT, self.seq),
            None => (INSERT_DOCUMENT, self.seq),
        };
        let statement = self.prepared(sql)?;
        self.client()
            .execute(
                &statement,
                &[
                    &key.prefix.as_str(),
                    &key.id,
                    &(doc.stat.size as i64),
                    &doc.stat.mtime_ns,
                    &&doc.stat.hash[..],
                    &doc.is_text,
                    &text(&doc.title),
                    &doc.description.as_deref().map(text),
                    &doc.frontmatter,
                    &seq,
                    &doc.body,
                    &(doc.body_start as i32),
                    &*vector,
                    &fields,
                ],
            )
            .with_context(|| format!("cannot write {key}"))?;
        if !same_bytes {
            let mut client = self.client();
            let client: &mut postgres::Client = &mut client;
            super::links::put(client, key, &doc.links, old.is_some())?;
            let had_one = old
                .as_ref()
                .is_some_and(|old| crate::store::may_have_outline(old.size as usize));
            super::outlines::put(client, key, doc.outline.as_deref(), had_one)?;
        }
        Ok(())
    }

    /// Records a new mtime for a document whose bytes did not change.
    pub fn touch(&self, key: &DocKey, mtime_ns: i64) -> Result<()> {
        if self.load.is_some() {
            bail!("{key}: a load into an empty database has no document to touch");
        }
        let statement =
            self.prepared("UPDATE documents SET mtime_ns = $3 WHERE prefix = $1 AND id = $2")?;
        self.client()
            .execute(&statement, &[&key.prefix.as_str(), &key.id, &mtime_ns])?;
        Ok(())
    }

    /// Removes a document; its history keeps its bytes and gains a removal.
    pub fn remove(&self, key: &DocKey) -> Result<()> {
        if self.load.is_some() {
            bail!("{key}: a load into an empty database has no document to remove");
        }
        let Some(old) = self.stored(key)? else {
            return Ok(());
        };
        self.archive(&old)?;
        let number = self.next_version(key)?;
        let seq = self.seq;
        self.client().execute(
            "INSERT INTO versions (prefix, id, version, hash, size, title, is_text, seq)
             VALUES ($1, $2, $3, NULL, 0, $4, false, $5)",
            &[&key.prefix.as_str(), &key.id, &number, &old.title, &seq],
        )?;
        self.client().execute(
            "DELETE FROM documents WHERE prefix = $1 AND id = $2",
            &[&key.prefix.as_str(), &key.id],
        )?;
        let mut client = self.client();
        let client: &mut postgres::Client = &mut client;
        super::links::remove(client, key)?;
        if crate::store::may_have_outline(old.size as usize) {
            super::outlines::remove(client, key)?;
        }
        Ok(())
    }

    /// Records a change in the feed, under this import's sequence number.
    pub fn record(&self, kind: ChangeKind, key: &DocKey) -> Result<()> {
        if let Some(load) = &self.load {
            load.borrow_mut().record(kind, key);
            return Ok(());
        }
        let (seq, kind) = (self.seq, kind_code(kind) as i16);
        let statement =
            self.prepared("INSERT INTO changes (seq, prefix, id, kind) VALUES ($1, $2, $3, $4)")?;
        self.client()
            .execute(&statement, &[&seq, &key.prefix.as_str(), &key.id, &kind])?;
        Ok(())
    }

    /// Commits the import; `changed` says whether it consumed its sequence
    /// number. Every server listening on [`FEED_CHANNEL`] hears the new
    /// number when the commit is done (and not before).
    pub fn commit(mut self, changed: bool) -> Result<()> {
        if let Some(load) = &self.load {
            let mut load = load.borrow_mut();
            let (conn, copied) = load.finish()?;
            *self.conn.borrow_mut() = Some(conn);
            copied?;
            load.write_rest(&mut self.client(), self.seq)?;
        }
        if let Some(files) = self.skipped.borrow_mut().take() {
            let mut client = self.client();
            let client: &mut postgres::Client = &mut client;
            super::check::write_skipped(client, &files)?;
        }
        if changed {
            let seq = self.seq;
            let now_ms = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as i64);
            let mut client = self.client();
            client.execute("UPDATE project SET seq = $1", &[&seq])?;
            client.execute(
                "INSERT INTO imports (seq, committed_ms) VALUES ($1, $2)
                 ON CONFLICT (seq) DO UPDATE SET committed_ms = excluded.committed_ms",
                &[&seq, &now_ms],
            )?;
            client.execute(
                "DELETE FROM changes WHERE seq <= $1",
                &[&(seq - FEED_IMPORTS)],
            )?;
            client.execute(
                "SELECT pg_notify($1, $2)",
                &[&FEED_CHANNEL, &seq.to_string()],
            )?;
        }
        self.client()
            .batch_execute("COMMIT")
            .context("cannot commit the import")?;
        self.finished = true;
        Ok(())
    }
}

impl Drop for PgImportTx {
    fn drop(&mut self) {
        if !self.finished {
            if let Some((conn, _)) = self.load.as_ref().and_then(|l| l.borrow_mut().stop()) {
                *self.conn.get_mut() = Some(conn);
            }
            // A failure here (or a connection lost with its COPY thread)
            // leaves the transaction to the server, which rolls it back
            // when the connection closes.
            if let Some(conn) = self.conn.get_mut() {
                let _ = conn.batch_execute("ROLLBACK");
            }
        }
    }
}

/// The text of a title or description as PostgreSQL can hold it: its
/// `text` refuses NUL, which a YAML escape can put in a title.
pub(super) fn text(s: &str) -> std::borrow::Cow<'_, str> {
    match s.contains('\0') {
        true => s.replace('\0', "\u{fffd}").into(),
        false => s.into(),
    }
}

/// The search vector of `doc`: its key and title (weight A), its
/// description (B), and the Markdown of a UTF-8 document past its
/// frontmatter (D), as SQLite's `search_source`.
pub(in crate::store) fn vector_of(doc: &NewDocument) -> TsVector {
    let markdown = match doc.is_text {
        true => std::str::from_utf8(doc.body.get(doc.body_start..).unwrap_or_default())
            .unwrap_or_default(),
        false => "",
    };
    document_vector(
        doc.key.prefix.as_str(),
        &doc.key.id,
        &doc.title,
        doc.description.as_deref(),
        markdown,
    )
}

/// The search vector of `doc`, as import's reader threads made it, or now.
pub(super) fn vector(doc: &NewDocument) -> Cow<'_, TsVector> {
    match &doc.pg_vector {
        Some(vector) => Cow::Borrowed(vector),
        None => Cow::Owned(vector_of(doc)),
    }
}
