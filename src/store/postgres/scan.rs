//! What an import compares its walk with, on PostgreSQL: the stored size, mtime and hash of every document in key order, read in chunks from one snapshot; and the project a database holds.

use std::collections::VecDeque;

use anyhow::{Result, bail};
use r2d2::PooledConnection;
use r2d2_postgres::PostgresConnectionManager;
use tokio_postgres_rustls::MakeRustlsConnect;

use super::PgStore;
use super::reader::key;
use crate::doc::DocKey;
use crate::store::FileStat;

/// Rows read per statement, as on SQLite.
const CHUNK: i64 = 2048;

/// An iterator over `(key, stat)` of every stored document, in key order,
/// from the snapshot of its first read (a `REPEATABLE READ` transaction on a
/// connection of its own): begun after an import took its lock, it sees the
/// database as the import found it.
pub struct PgStoredStats {
    conn: Option<PooledConnection<PostgresConnectionManager<MakeRustlsConnect>>>,
    /// After `--replace`, no stored mtime may match a file.
    stale: bool,
    buffer: VecDeque<(DocKey, FileStat)>,
    last: Option<DocKey>,
}

impl PgStore {
    /// Opens a scan of the stored stats; with `stale`, no mtime matches.
    pub fn scan(&self, stale: bool) -> Result<PgStoredStats> {
        let mut conn = self.connection()?;
        conn.batch_execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")?;
        Ok(PgStoredStats {
            conn: Some(conn),
            stale,
            buffer: VecDeque::new(),
            last: None,
        })
    }

    /// The folder of the project the database holds; `None` before any
    /// import.
    pub fn project_root(&self) -> Result<Option<String>> {
        let mut conn = self.connection()?;
        Ok(conn
            .query_opt("SELECT root FROM project", &[])?
            .map(|row| row.get(0)))
    }

    /// What `begin_import` then `scan` would see, without writing: for
    /// `--dry-run`.
    pub fn preview_import(&self, root: &str, replace: bool) -> Result<PgStoredStats> {
        let stale = match self.project_root()? {
            None => false,
            Some(stored) if stored == root => false,
            Some(_) if replace => true,
            Some(stored) => bail!(
                "the database {} holds the project {stored}, not {root} (pass --replace to replace it)",
                self.target
            ),
        };
        self.scan(stale)
    }
}

impl PgStoredStats {
    /// Reads the next chunk after the last key read; false at the end.
    fn fill(&mut self) -> Result<bool> {
        let Some(conn) = self.conn.as_mut() else {
            return Ok(false);
        };
        let (prefix, id) = match &self.last {
            Some(last) => (last.prefix.as_str(), last.id.as_str()),
            None => ("", ""),
        };
        let rows = conn.query(
            "SELECT prefix, id, size, mtime_ns, hash FROM documents
             WHERE (prefix, id) > ($1, $2) ORDER BY prefix, id LIMIT $3",
            &[&prefix, &id, &CHUNK],
        )?;
        let full = rows.len() as i64 == CHUNK;
        for row in rows {
            let hash: Vec<u8> = row.get(4);
            let stat = FileStat {
                size: row.get::<_, i64>(2) as u64,
                mtime_ns: if self.stale { i64::MIN } else { row.get(3) },
                hash: hash
                    .try_into()
                    .map_err(|_| anyhow::anyhow!("a stored hash is not 32 bytes"))?,
            };
            self.buffer.push_back((key(row.get(0), row.get(1))?, stat));
        }
        self.last = self.buffer.back().map(|(key, _)| key.clone());
        if !full {
            // The last chunk: end the read transaction now rather than at drop.
            self.finish();
        }
        Ok(!self.buffer.is_empty())
    }

    fn finish(&mut self) {
        if let Some(mut conn) = self.conn.take() {
            // A read transaction has nothing to keep: ending it cannot lose data.
            let _ = conn.batch_execute("COMMIT");
        }
    }
}

impl Iterator for PgStoredStats {
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

impl Drop for PgStoredStats {
    fn drop(&mut self) {
        // The pooled connection must not go back to the pool inside the
        // transaction.
        self.finish();
    }
}
