//! The SQLite store's side of the scan import compares its walk with: the stored stats of a chunk of documents after a key (see `store::stored_stats`).

use std::collections::VecDeque;

use anyhow::Result;
use r2d2::PooledConnection;
use r2d2_sqlite::SqliteConnectionManager;
use rusqlite::params;

use super::{FileStat, Store, key_from_row};
use crate::doc::DocKey;
use crate::store::stored_stats::{CHUNK, StatChunks, StoredStats};

/// A read transaction on a connection of its own.
struct Chunks {
    conn: Option<PooledConnection<SqliteConnectionManager>>,
}

impl Store {
    /// Opens a scan of the stored stats. With `stale`, no mtime matches any
    /// file (after `--replace`).
    pub fn scan(&self, stale: bool) -> Result<StoredStats> {
        let conn = self.connection()?;
        conn.execute_batch("BEGIN")?;
        Ok(StoredStats::new(
            Box::new(Chunks { conn: Some(conn) }),
            stale,
        ))
    }
}

impl StatChunks for Chunks {
    fn read_after(
        &mut self,
        after: Option<&DocKey>,
        into: &mut VecDeque<(DocKey, FileStat)>,
    ) -> Result<()> {
        let Some(conn) = &self.conn else {
            return Ok(());
        };
        // The covering index `documents_meta` answers both statements
        // without reading a document row.
        let mut stmt = match after {
            None => conn.prepare_cached(
                "SELECT prefix, id, size, mtime_ns, hash FROM documents
                 ORDER BY prefix, id LIMIT ?1",
            )?,
            Some(_) => conn.prepare_cached(
                "SELECT prefix, id, size, mtime_ns, hash FROM documents
                 WHERE (prefix, id) > (?2, ?3) ORDER BY prefix, id LIMIT ?1",
            )?,
        };
        let mut rows = match after {
            None => stmt.query(params![CHUNK as i64])?,
            Some(last) => stmt.query(params![CHUNK as i64, last.prefix.as_str(), last.id])?,
        };
        while let Some(r) = rows.next()? {
            let key = key_from_row(r.get_ref(0)?.as_str()?, r.get(1)?)?;
            let stat = FileStat {
                size: r.get::<_, i64>(2)? as u64,
                mtime_ns: r.get(3)?,
                hash: r.get(4)?,
            };
            into.push_back((key, stat));
        }
        Ok(())
    }

    fn finish(&mut self) {
        if let Some(conn) = self.conn.take() {
            // A read transaction has nothing to keep: ending it cannot lose data.
            let _ = conn.execute_batch("COMMIT");
        }
    }
}
