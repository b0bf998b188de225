//! The PostgreSQL store's side of the scan import compares its walk with (the stored stats of a chunk of documents after a key, see `store::stored_stats`), and the project a database holds.

use std::collections::VecDeque;

use anyhow::{Result, bail};

use super::PgStore;
use super::pool::Pooled;
use super::reader::key;
use crate::doc::DocKey;
use crate::store::FileStat;
use crate::store::stored_stats::{CHUNK, StatChunks, StoredStats};

/// A `REPEATABLE READ` transaction on a connection of its own.
struct Chunks {
    conn: Option<Pooled>,
}

impl PgStore {
    /// Opens a scan of the stored stats; with `stale`, no mtime matches.
    pub fn scan(&self, stale: bool) -> Result<StoredStats> {
        let mut conn = self.connection()?;
        conn.batch_execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")?;
        Ok(StoredStats::new(
            Box::new(Chunks { conn: Some(conn) }),
            stale,
        ))
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
    pub fn preview_import(&self, root: &str, replace: bool) -> Result<StoredStats> {
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

impl StatChunks for Chunks {
    fn read_after(
        &mut self,
        after: Option<&DocKey>,
        into: &mut VecDeque<(DocKey, FileStat)>,
    ) -> Result<()> {
        let Some(conn) = self.conn.as_mut() else {
            return Ok(());
        };
        let (prefix, id) = match after {
            Some(last) => (last.prefix.as_str(), last.id.as_str()),
            None => ("", ""),
        };
        let rows = conn.query(
            "SELECT prefix, id, size, mtime_ns, hash FROM documents
             WHERE (prefix, id) > ($1, $2) ORDER BY prefix, id LIMIT $3",
            &[&prefix, &id, &(CHUNK as i64)],
        )?;
        for row in rows {
            let hash: Vec<u8> = row.get(4);
            let stat = FileStat {
                size: row.get::<_, i64>(2) as u64,
                mtime_ns: row.get(3),
                hash: hash
                    .try_into()
                    .map_err(|_| anyhow::anyhow!("a stored hash is not 32 bytes"))?,
            };
            into.push_back((key(row.get(0), row.get(1))?, stat));
        }
        Ok(())
    }

    fn finish(&mut self) {
        if let Some(mut conn) = self.conn.take() {
            // A read transaction has nothing to keep: ending it cannot lose data.
            let _ = conn.batch_execute("COMMIT");
        }
    }
}
