//! Reads for the server on PostgreSQL: keyset pages, point reads, id completion, counts and the feed, with the answers of the SQLite `Reader` (the same order, the same values).

use std::cell::{Cell, RefCell};

use anyhow::{Result, anyhow};

use super::PgStore;
use super::pool::Pooled;
use crate::doc::{ChangeKind, DocKey, Prefix};
use crate::store::{ChangeBatch, DocSummary, Document, Fetched, successor};

/// Read access for the server: every method is one statement, so one
/// consistent view of the last commit.
pub struct PgReader {
    pub(super) conn: RefCell<Pooled>,
    /// Inside [`PgReader::in_transaction`].
    in_transaction: Cell<bool>,
}

impl PgStore {
    /// A connection for reads.
    pub fn reader(&self) -> Result<PgReader> {
        let conn = self.connection()?;
        Ok(PgReader {
            conn: RefCell::new(conn),
            in_transaction: Cell::new(false),
        })
    }
}

/// A listing's line from the columns `prefix, id, title, description,
/// size, mtime_ns` of a row.
pub(super) fn summary(row: &postgres::Row) -> Result<DocSummary> {
    Ok(DocSummary {
        key: key(row.get(0), row.get(1))?,
        title: row.get(2),
        description: row.get(3),
        size: row.get::<_, i64>(4) as u64,
        mtime_ns: row.get(5),
    })
}

pub(super) fn key(prefix: &str, id: String) -> Result<DocKey> {
    let prefix = Prefix::parse(prefix)
        .ok_or_else(|| anyhow!("unknown prefix {prefix:?} in the database"))?;
    Ok(DocKey { prefix, id })
}

impl PgReader {
    /// Up to `limit` documents after `after` (from the start when `None`),
    /// in (prefix, id) byte order: a keyset page of the primary key.
    pub fn page(&self, after: Option<&DocKey>, limit: usize) -> Result<Vec<DocSummary>> {
        let (prefix, id) = match after {
            Some(key) => (key.prefix.as_str(), key.id.as_str()),
            None => ("", ""),
        };
        let mut conn = self.conn.borrow_mut();
        let statement = conn.prepared(
            "SELECT prefix, id, title, description, size, mtime_ns FROM documents
             WHERE (prefix, id) > ($1, $2) ORDER BY prefix, id LIMIT $3",
        )?;
        let rows = conn.query(&statement, &[&prefix, &id, &(limit as i64)])?;
        rows.iter().map(summary).collect()
    }

    /// The document with `key`, unless its body is over `max_body` bytes:
    /// then only its size, and the body is never sent.
    pub fn get(&self, key: &DocKey, max_body: u64) -> Result<Option<Fetched>> {
        let mut conn = self.conn.borrow_mut();
        let statement = conn.prepared(
            "SELECT size, title, description, frontmatter, mtime_ns, is_text,
                    CASE WHEN size <= $3 THEN body END, hash,
                    (SELECT max(v.version) FROM versions v
                     WHERE v.prefix = d.prefix AND v.id = d.id)
             FROM documents d WHERE prefix = $1 AND id = $2",
        )?;
        let row = conn.query_opt(
            &statement,
            &[
                &key.prefix.as_str(),
                &key.id,
                &(max_body.min(i64::MAX as u64) as i64),
            ],
        )?;
        Ok(row.map(|row| {
            let size = row.get::<_, i64>(0) as u64;
            match row.get::<_, Option<Vec<u8>>>(6) {
                None => Fetched::TooLarge { size },
                Some(body) => Fetched::Document(Document {
                    key: key.clone(),
                    title: row.get(1),
                    description: row.get(2),
                    frontmatter: row.get(3),
                    mtime_ns: row.get(4),
                    is_text: row.get(5),
                    body,
                    hash: row.get::<_, Vec<u8>>(7).try_into().unwrap_or([0; 32]),
                    version: row.get::<_, Option<i32>>(8).map(|v| v as u32),
                }),
            }
        }))
    }

    /// As SQLite's `Reader::versions_of`, in one statement.
    pub fn versions_of(&self, keys: &[&DocKey]) -> Result<Vec<Option<u32>>> {
        let prefixes: Vec<&str> = keys.iter().map(|k| k.prefix.as_str()).collect();
        let ids: Vec<&str> = keys.iter().map(|k| k.id.as_str()).collect();
        let mut conn = self.conn.borrow_mut();
        let statement = conn.prepared(
            "SELECT (SELECT max(v.version) FROM versions v
                     JOIN documents d ON d.prefix = v.prefix AND d.id = v.id
                     WHERE v.prefix = k.prefix AND v.id = k.id)
             FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS k(prefix, id, n)
             ORDER BY k.n",
        )?;
        let rows = conn.query(&statement, &[&prefixes, &ids])?;
        Ok(rows
            .iter()
            .map(|r| r.get::<_, Option<i32>>(0).map(|v| v as u32))
            .collect())
    }

    /// Ids under `prefix` that begin with `typed`, at most `limit`, and how
    /// many there are in all: a range of the primary key.
    pub fn complete_ids(
        &self,
        prefix: Prefix,
        typed: &str,
        limit: usize,
    ) -> Result<(Vec<String>, u64)> {
        // Every id that begins with `typed` sorts in [typed, upper).
        let upper = successor(typed);
        let mut conn = self.conn.borrow_mut();
        let (prefix, limit) = (prefix.as_str(), limit as i64);
        let ids: Vec<String> = conn
            .query(
                "SELECT id FROM documents
                 WHERE prefix = $1 AND id >= $2 AND ($3::text IS NULL OR id < $3)
                 ORDER BY id LIMIT $4",
                &[&prefix, &typed, &upper, &limit],
            )?
            .iter()
            .map(|row| row.get(0))
            .collect();
        let total: i64 = conn
            .query_one(
                "SELECT count(*) FROM documents
                 WHERE prefix = $1 AND id >= $2 AND ($3::text IS NULL OR id < $3)",
                &[&prefix, &typed, &upper],
            )?
            .get(0);
        Ok((ids, total as u64))
    }

    /// The number of documents.
    pub fn count(&self) -> Result<u64> {
        let n: i64 = self
            .conn
            .borrow_mut()
            .query_one("SELECT count(*) FROM documents", &[])?
            .get(0);
        Ok(n as u64)
    }

    /// Whether a document with `key` exists.
    pub fn exists(&self, key: &DocKey) -> Result<bool> {
        let mut conn = self.conn.borrow_mut();
        let statement =
            conn.prepared("SELECT EXISTS (SELECT 1 FROM documents WHERE prefix = $1 AND id = $2)")?;
        Ok(conn
            .query_one(&statement, &[&key.prefix.as_str(), &key.id])?
            .get(0))
    }

    /// The sequence number of the last import that changed anything.
    pub fn seq(&self) -> Result<i64> {
        let mut conn = self.conn.borrow_mut();
        let statement = conn.prepared("SELECT seq FROM project")?;
        Ok(conn.query_opt(&statement, &[])?.map_or(0, |row| row.get(0)))
    }

    /// Runs `reads` in one read-only transaction (`REPEATABLE READ`): every
    /// read in it sees the same commit. Nested calls join the outer one.
    pub fn in_transaction<T>(&self, reads: impl FnOnce() -> Result<T>) -> Result<T> {
        if self.in_transaction.get() {
            return reads();
        }
        self.conn
            .borrow_mut()
            .batch_execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")?;
        self.in_transaction.set(true);
        let result = reads();
        self.in_transaction.set(false);
        // A read transaction has nothing to keep: ending it cannot lose data.
        let _ = self.conn.borrow_mut().batch_execute("COMMIT");
        result
    }

    /// The changes after sequence `after`, up to the last commit, read in
    /// one snapshot; `truncated` when the feed no longer holds them all.
    pub fn changes_after(&self, after: i64) -> Result<ChangeBatch> {
        self.in_transaction(|| {
            let mut conn = self.conn.borrow_mut();
            let seq: i64 = conn
                .query_opt("SELECT seq FROM project", &[])?
                .map_or(0, |row| row.get(0));
            if seq <= after {
                return Ok(ChangeBatch {
                    seq: after.max(seq),
                    ..ChangeBatch::default()
                });
            }
            let oldest: Option<i64> = conn.query_one("SELECT min(seq) FROM changes", &[])?.get(0);
            // Every import after `after` consumed one number; the feed holds
            // them all only if its oldest row is no later than the first.
            let truncated = oldest.is_none_or(|oldest| oldest > after + 1);
            let changes = conn
                .query(
                    "SELECT kind, prefix, id FROM changes WHERE seq > $1 AND seq <= $2
                     ORDER BY seq, ord",
                    &[&after, &seq],
                )?
                .into_iter()
                .map(|row| Ok((kind(row.get(0))?, key(row.get(1), row.get(2))?)))
                .collect::<Result<Vec<_>>>()?;
            Ok(ChangeBatch {
                seq,
                changes,
                truncated,
            })
        })
    }
}

fn kind(code: i16) -> Result<ChangeKind> {
    match code {
        1 => Ok(ChangeKind::New),
        2 => Ok(ChangeKind::Updated),
        3 => Ok(ChangeKind::Removed),
        other => Err(anyhow!("unknown change kind {other} in the database")),
    }
}
