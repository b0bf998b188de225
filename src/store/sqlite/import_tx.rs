//! The one write transaction of an import: documents, their versions, their search index and frontmatter fields, their links and (a large document's) outline, and the feed rows, committed together.

use anyhow::{Context, Result};
use r2d2::PooledConnection;
use r2d2_sqlite::SqliteConnectionManager;
use rusqlite::{OptionalExtension, params};

use super::{FEED_IMPORTS, NewDocument, history, links, outlines, search};
use crate::doc::{ChangeKind, DocKey};
use crate::store::kind_code;

/// The one transaction of an import. Dropped without [`ImportTx::commit`], it
/// rolls back and the database is exactly as before.
pub struct ImportTx {
    pub(super) conn: PooledConnection<SqliteConnectionManager>,
    pub(super) seq: i64,
    /// The database held another project, replaced by this import.
    pub(super) replaced: bool,
    /// The index writes of an incremental import; `None` when the database
    /// held no document as the import began (a load: documents are inserted
    /// and indexed as they come, see [`ImportTx::load`]).
    pub(super) index: Option<search::IndexWrites>,
    pub(super) finished: bool,
}

/// The stored row of a document that an import replaces or removes, read
/// once, before it changes: the bytes its history keeps, and the values its
/// index entries were made of.
pub(super) struct StoredDoc {
    pub(super) rowid: i64,
    /// The import that last changed it: where its newest version is.
    pub(super) seq: i64,
    pub(super) hash: Vec<u8>,
    pub(super) title: String,
    pub(super) description: Option<String>,
    pub(super) is_text: bool,
    /// Where its Markdown starts, past the frontmatter.
    pub(super) body_start: usize,
    pub(super) frontmatter: Option<String>,
    pub(super) body: Vec<u8>,
}

impl ImportTx {
    /// The sequence number this import's changes are recorded under.
    pub fn seq(&self) -> i64 {
        self.seq
    }

    /// The database held another project, which this import replaces: no
    /// stored mtime says anything about the new files (see [`Store::scan`]).
    ///
    /// [`Store::scan`]: super::Store::scan
    pub fn replaces(&self) -> bool {
        self.replaced
    }

    /// The database held no document when the import began: there is
    /// nothing to compare the files with.
    pub fn starts_empty(&self) -> bool {
        self.index.is_none()
    }

    /// As `store::ImportTx::current`.
    pub fn current(&self, key: &DocKey) -> Result<Option<crate::store::Current>> {
        let found = self
            .conn
            .prepare_cached(
                // The row's own newest version (migration 0014); the scan of
                // `versions` (keyed by import, not by document) only where
                // nothing filled it.
                "SELECT d.hash, d.is_text,
                        coalesce(d.version, (SELECT max(v.version) FROM versions v
                                             WHERE v.prefix = d.prefix AND v.id = d.id))
                 FROM documents d WHERE d.prefix = ?1 AND d.id = ?2",
            )?
            .query_row(params![key.prefix.as_str(), key.id], |r| {
                Ok((
                    r.get::<_, Vec<u8>>(0)?,
                    r.get::<_, bool>(1)?,
                    r.get::<_, Option<u32>>(2)?,
                ))
            })
            .optional()?;
        found
            .map(|(hash, is_text, version)| {
                Ok(crate::store::Current {
                    version: version.unwrap_or(0),
                    hash: hash
                        .try_into()
                        .map_err(|_| anyhow::anyhow!("{key}: a stored hash is not 32 bytes"))?,
                    is_text,
                })
            })
            .transpose()
    }

    /// Inserts a document or replaces the stored one with the same key.
    ///
    /// Every statement of an import must be a plain single-row one, which
    /// opens no statement journal (no upsert, no `RETURNING`, no `INSERT …
    /// SELECT`): FTS5 writes its pending terms out as a segment whenever a
    /// statement opens one, so each document would become a segment of its
    /// own, merged again and again (a cold import of 100k documents: 14-21 s
    /// instead of 6-7 s).
    pub fn put(&self, doc: &NewDocument) -> Result<()> {
        let Some(index) = &self.index else {
            return self.load(doc);
        };
        let old = self.stored(&doc.key)?;
        let when = match &old {
            Some(old) => Some(search::unindex(&self.conn, index, &doc.key, old)?),
            None => None,
        };
        let head = self.record_version(doc, old.as_ref())?;
        let rowid = match &old {
            Some(old) => {
                // Without a new version (the same bytes), the row keeps the
                // one it holds.
                let mut stmt = self.conn.prepare_cached(
                    "UPDATE documents SET
                        size = ?3, mtime_ns = ?4, hash = ?5, is_text = ?6, title = ?7,
                        description = ?8, frontmatter = ?9, seq = ?10, body = ?11, body_start = ?12,
                        version = coalesce(?13, version),
                        earlier_bodies = coalesce(?14, earlier_bodies)
                     WHERE rowid = ?15 AND prefix = ?1 AND id = ?2",
                )?;
                // The same bytes again make no version: the document keeps
                // the sequence its newest version is under.
                let seq = if old.hash == doc.stat.hash {
                    old.seq
                } else {
                    self.seq
                };
                bind_document(&mut stmt, doc, seq, head.as_ref())?;
                stmt.raw_bind_parameter(15, old.rowid)?;
                if stmt.raw_execute()? != 1 {
                    anyhow::bail!("{}: the stored row changed under the import", doc.key);
                }
                old.rowid
            }
            None => self.insert(doc, head.as_ref())?,
        };
        links::put(&self.conn, doc, old.is_some())?;
        // The same bytes have the same outline.
        if old.as_ref().is_none_or(|old| old.hash != doc.stat.hash) {
            let had_one = old
                .as_ref()
                .is_some_and(|old| crate::store::may_have_outline(old.body.len()));
            outlines::put(&self.conn, doc, had_one)?;
        }
        search::index(&self.conn, index, rowid, doc, old.as_ref().zip(when))
    }

    /// The stored document with this key, if there is one, read once for
    /// all that replacing or removing it needs.
    fn stored(&self, key: &DocKey) -> Result<Option<StoredDoc>> {
        Ok(self
            .conn
            .prepare_cached(
                "SELECT rowid, seq, hash, title, description, is_text, body_start, frontmatter, body
                 FROM documents WHERE prefix = ?1 AND id = ?2",
            )?
            .query_row(params![key.prefix.as_str(), key.id], |r| {
                Ok(StoredDoc {
                    rowid: r.get(0)?,
                    seq: r.get(1)?,
                    hash: r.get(2)?,
                    title: r.get(3)?,
                    description: r.get(4)?,
                    is_text: r.get(5)?,
                    body_start: r.get::<_, i64>(6)? as usize,
                    frontmatter: r.get(7)?,
                    body: r.get(8)?,
                })
            })
            .optional()?)
    }

    /// [`ImportTx::put`] into an empty database: no stored row to replace,
    /// and the document is indexed now, from memory (FTS5 keeps the terms
    /// in memory, up to `hashsize`, 16 MB, while the rowids ascend).
    fn load(&self, doc: &NewDocument) -> Result<()> {
        let head = self.record_version(doc, None)?;
        let rowid = self.insert(doc, head.as_ref())?;
        links::put(&self.conn, doc, false)?;
        outlines::put(&self.conn, doc, false)?;
        search::load(&self.conn, rowid, doc)
    }

    /// Records `doc` as a new version of the stored document `old`, if
    /// any, before its row is written: the version the row is to hold,
    /// unless the bytes are the same.
    fn record_version(
        &self,
        doc: &NewDocument,
        old: Option<&StoredDoc>,
    ) -> Result<Option<history::Head>> {
        history::record_put(&self.conn, doc, old, self.seq)
    }

    /// Inserts the row of a document that has none, holding its newest
    /// version `head`; returns its rowid.
    fn insert(&self, doc: &NewDocument, head: Option<&history::Head>) -> Result<i64> {
        let mut stmt = self.conn.prepare_cached(
            "INSERT INTO documents
                (prefix, id, size, mtime_ns, hash, is_text, title, description, frontmatter, seq, body,
                 body_start, version, earlier_bodies)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
        )?;
        bind_document(&mut stmt, doc, self.seq, head)?;
        stmt.raw_execute()?;
        Ok(self.conn.last_insert_rowid())
    }

    /// Records a new mtime for a document whose bytes did not change, so the
    /// next import skips it without reading it.
    pub fn touch(&self, key: &DocKey, mtime_ns: i64) -> Result<()> {
        self.conn
            .prepare_cached("UPDATE documents SET mtime_ns = ?3 WHERE prefix = ?1 AND id = ?2")?
            .execute(params![key.prefix.as_str(), key.id, mtime_ns])?;
        Ok(())
    }

    pub fn remove(&self, key: &DocKey) -> Result<()> {
        let Some(old) = self.stored(key)? else {
            return Ok(());
        };
        if let Some(index) = &self.index {
            let when = search::unindex(&self.conn, index, key, &old)?;
            search::remove_fields(&self.conn, index, &old, when)?;
        }
        history::record_remove(&self.conn, key, &old, self.seq)?;
        links::remove(&self.conn, key)?;
        if crate::store::may_have_outline(old.body.len()) {
            outlines::remove(&self.conn, key)?;
        }
        self.conn
            .prepare_cached("DELETE FROM documents WHERE rowid = ?1")?
            .execute([old.rowid])?;
        Ok(())
    }

    /// Records a change in the feed, under this import's sequence number.
    pub fn record(&self, kind: ChangeKind, key: &DocKey) -> Result<()> {
        self.conn
            .prepare_cached("INSERT INTO changes (seq, prefix, id, kind) VALUES (?1, ?2, ?3, ?4)")?
            .execute(params![
                self.seq,
                key.prefix.as_str(),
                key.id,
                kind_code(kind)
            ])?;
        Ok(())
    }

    /// Commits the import; `changed` says whether it consumed its sequence
    /// number (and so whether the feed has rows under it).
    pub fn commit(mut self, changed: bool) -> Result<()> {
        if let Some(index) = &self.index {
            search::commit(&self.conn, index)?;
        }
        history::settle(&self.conn)?;
        if changed {
            self.conn
                .prepare_cached("UPDATE project SET seq = ?1")?
                .execute([self.seq])?;
            let now_ms = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as i64);
            self.conn
                .prepare_cached(
                    "INSERT OR REPLACE INTO imports (seq, committed_ms) VALUES (?1, ?2)",
                )?
                .execute([self.seq, now_ms])?;
            self.conn
                .prepare_cached("DELETE FROM changes WHERE seq <= ?1")?
                .execute([self.seq - FEED_IMPORTS])?;
        }
        self.conn
            .execute_batch("COMMIT")
            .context("cannot commit the import")?;
        self.finished = true;
        Ok(())
    }
}

/// Binds `?1` to `?14` of a write of a document row of [`ImportTx`]:
/// `doc`'s columns in the table's order, then `seq` and `body_start`, then
/// the number and `earlier_bodies` of its newest version `head` (NULL
/// without).
fn bind_document(
    stmt: &mut rusqlite::Statement<'_>,
    doc: &NewDocument,
    seq: i64,
    head: Option<&history::Head>,
) -> rusqlite::Result<()> {
    stmt.raw_bind_parameter(1, doc.key.prefix.as_str())?;
    stmt.raw_bind_parameter(2, &doc.key.id)?;
    stmt.raw_bind_parameter(3, doc.stat.size as i64)?;
    stmt.raw_bind_parameter(4, doc.stat.mtime_ns)?;
    stmt.raw_bind_parameter(5, &doc.stat.hash[..])?;
    stmt.raw_bind_parameter(6, doc.is_text)?;
    stmt.raw_bind_parameter(7, &doc.title)?;
    stmt.raw_bind_parameter(8, &doc.description)?;
    stmt.raw_bind_parameter(9, &doc.frontmatter)?;
    stmt.raw_bind_parameter(10, seq)?;
    stmt.raw_bind_parameter(11, &doc.body)?;
    stmt.raw_bind_parameter(12, doc.body_start as i64)?;
    stmt.raw_bind_parameter(13, head.map(|h| h.number))?;
    stmt.raw_bind_parameter(14, head.map(|h| h.earlier_bodies.as_str()))
}

impl Drop for ImportTx {
    fn drop(&mut self) {
        if !self.finished {
            // Failure here leaves the transaction to SQLite, which rolls it
            // back when the connection closes.
            let _ = self.conn.execute_batch("ROLLBACK");
        }
    }
}
