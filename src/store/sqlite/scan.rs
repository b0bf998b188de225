//! The stored size, mtime and hash of every document, in key order, read in chunks from one snapshot: what import compares its walk with.
//!
//! The scan runs on a connection of its own, in a read transaction begun
//! after the import took the write lock: it sees the database exactly as the
//! import found it, whatever the import writes meanwhile, and holds one chunk
//! of rows at a time, so its memory does not grow with the number of
//! documents.

use std::collections::VecDeque;

use anyhow::Result;
use r2d2::PooledConnection;
use r2d2_sqlite::SqliteConnectionManager;
use rusqlite::params;

use super::{FileStat, Store, key_from_row};
use crate::doc::DocKey;

/// Rows read per statement: enough to make the seek of each chunk nothing
/// beside its rows, few enough to hold (about 100 bytes each).
const CHUNK: usize = 2048;

/// An iterator over `(key, stat)` of every stored document, in key order.
pub struct StoredStats {
    conn: Option<PooledConnection<SqliteConnectionManager>>,
    /// After `--replace`, no stored mtime may match a file (see [`Store::scan`]).
    stale: bool,
    buffer: VecDeque<(DocKey, FileStat)>,
    last: Option<DocKey>,
}

impl Store {
    /// Opens a scan of the stored stats. With `stale`, no mtime matches any
    /// file, so import reads and compares every file: after `--replace`,
    /// equal sizes and mtimes say nothing about equal bytes.
    pub fn scan(&self, stale: bool) -> Result<StoredStats> {
        let conn = self.connection()?;
        conn.execute_batch("BEGIN")?;
        Ok(StoredStats {
            conn: Some(conn),
            stale,
            buffer: VecDeque::with_capacity(CHUNK),
            last: None,
        })
    }
}

impl StoredStats {
    /// A scan of nothing: for a dry run without a database.
    pub fn empty() -> StoredStats {
        StoredStats {
            conn: None,
            stale: false,
            buffer: VecDeque::new(),
            last: None,
        }
    }

    /// Reads the next chunk after the last key read; false at the end.
    fn fill(&mut self) -> Result<bool> {
        let Some(conn) = &self.conn else {
            return Ok(false);
        };
        // The covering index `documents_meta` answers both statements
        // without reading a document row.
        let mut stmt = match self.last {
            None => conn.prepare_cached(
                "SELECT prefix, id, size, mtime_ns, hash FROM documents
                 ORDER BY prefix, id LIMIT ?1",
            )?,
            Some(_) => conn.prepare_cached(
                "SELECT prefix, id, size, mtime_ns, hash FROM documents
                 WHERE (prefix, id) > (?2, ?3) ORDER BY prefix, id LIMIT ?1",
            )?,
        };
        let mut rows = match &self.last {
            None => stmt.query(params![CHUNK as i64])?,
            Some(last) => stmt.query(params![CHUNK as i64, last.prefix.as_str(), last.id])?,
        };
        while let Some(r) = rows.next()? {
            let key = key_from_row(r.get_ref(0)?.as_str()?, r.get(1)?)?;
            let stat = FileStat {
                size: r.get::<_, i64>(2)? as u64,
                mtime_ns: if self.stale { i64::MIN } else { r.get(3)? },
                hash: r.get(4)?,
            };
            self.buffer.push_back((key, stat));
        }
        drop(rows);
        drop(stmt);
        self.last = self.buffer.back().map(|(key, _)| key.clone());
        if self.buffer.len() < CHUNK {
            // The last chunk: end the read transaction now rather than at drop.
            self.finish();
        }
        Ok(!self.buffer.is_empty())
    }

    fn finish(&mut self) {
        if let Some(conn) = self.conn.take() {
            // A read transaction has nothing to keep: ending it cannot lose data.
            let _ = conn.execute_batch("COMMIT");
        }
    }
}

impl Iterator for StoredStats {
    type Item = Result<(DocKey, FileStat)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.buffer.is_empty() {
            match self.fill() {
                Ok(true) => {}
                Ok(false) => return None,
                Err(e) => {
                    self.finish();
                    return Some(Err(e));
                }
            }
        }
        self.buffer.pop_front().map(Ok)
    }
}

impl Drop for StoredStats {
    fn drop(&mut self) {
        // The pooled connection must not go back to the pool inside the
        // transaction: every later read on it would see this old snapshot.
        self.finish();
    }
}
