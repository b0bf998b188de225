//! The change feed: what each import changed, recorded under its sequence number, and the watcher that reads it after the last sequence it saw.

use anyhow::{Context, Result};
use rusqlite::{Connection, OpenFlags, OptionalExtension};

use super::{Reader, Store, configure, key_from_row};
use crate::doc::{ChangeKind, DocKey};

fn kind_from_code(code: i64) -> rusqlite::Result<ChangeKind> {
    match code {
        1 => Ok(ChangeKind::New),
        2 => Ok(ChangeKind::Updated),
        3 => Ok(ChangeKind::Removed),
        other => Err(rusqlite::Error::IntegralValueOutOfRange(0, other)),
    }
}

/// What changed in the store after some sequence number.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ChangeBatch {
    /// The last sequence number the batch covers.
    pub seq: i64,
    /// Every change after the sequence asked for, oldest first; the same key
    /// may appear more than once.
    pub changes: Vec<(ChangeKind, DocKey)>,
    /// The feed no longer reaches back that far: anything may have changed.
    pub truncated: bool,
}

/// Notices commits made by any connection, and reads the change feed after
/// the last sequence seen. One per server process, on its own connection:
/// `PRAGMA data_version` changes only for commits by *other* connections.
pub struct ChangeWatcher {
    conn: Connection,
    data_version: i64,
    seq: i64,
}

impl ChangeWatcher {
    /// Starts watching from the store's current state.
    pub fn new(store: &Store) -> Result<ChangeWatcher> {
        // Read-write although it only reads: the last connection of a
        // process to close removes the `-wal` and `-shm` files, and only a
        // connection that may write can (a server's watcher often closes last).
        let conn = Connection::open_with_flags(
            &store.path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .with_context(|| format!("cannot open the database {}", store.path.display()))?;
        configure(&conn)?;
        let data_version = conn.pragma_query_value(None, "data_version", |r| r.get(0))?;
        let seq = current_seq(&conn)?;
        Ok(ChangeWatcher {
            conn,
            data_version,
            seq,
        })
    }

    /// The changes committed since the last call, or `None` when nothing was
    /// committed. Costs one pragma when idle, and reads only the new feed
    /// rows otherwise, whatever the size of the database.
    pub fn poll(&mut self) -> Result<Option<ChangeBatch>> {
        let data_version: i64 = self
            .conn
            .pragma_query_value(None, "data_version", |r| r.get(0))?;
        if data_version == self.data_version {
            return Ok(None);
        }
        self.data_version = data_version;
        // One read transaction: the sequence and the rows agree.
        self.conn.execute_batch("BEGIN")?;
        let batch = read_after(&self.conn, self.seq);
        let _ = self.conn.execute_batch("COMMIT");
        let batch = batch?;
        if batch.seq == self.seq {
            return Ok(None);
        }
        self.seq = batch.seq;
        Ok(Some(batch))
    }
}

impl Reader {
    /// Everything the feed says changed after `after`, as the watcher would
    /// have published it: for a client that reconnects and names the last
    /// sequence it saw.
    pub fn changes_after(&self, after: i64) -> Result<ChangeBatch> {
        self.in_transaction(|| read_after(&self.conn, after))
    }
}

fn read_after(conn: &Connection, after: i64) -> Result<ChangeBatch> {
    let seq = current_seq(conn)?;
    if seq <= after {
        return Ok(ChangeBatch {
            seq: after.max(seq),
            ..ChangeBatch::default()
        });
    }
    let oldest: Option<i64> = conn
        .prepare_cached("SELECT min(seq) FROM changes")?
        .query_row([], |r| r.get(0))?;
    // Every import after `after` consumed one number; the feed holds
    // them all only if its oldest row is no later than the first.
    let truncated = oldest.is_none_or(|oldest| oldest > after + 1);
    let mut stmt = conn.prepare_cached(
        "SELECT kind, prefix, id FROM changes WHERE seq > ?1 AND seq <= ?2 ORDER BY seq, rowid",
    )?;
    let changes = stmt
        .query_map([after, seq], |r| {
            Ok((
                kind_from_code(r.get(0)?)?,
                key_from_row(r.get_ref(1)?.as_str()?, r.get(2)?)?,
            ))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(ChangeBatch {
        seq,
        changes,
        truncated,
    })
}

fn current_seq(conn: &Connection) -> Result<i64> {
    let seq: Option<i64> = conn
        .prepare_cached("SELECT seq FROM project")?
        .query_row([], |r| r.get(0))
        .optional()?;
    Ok(seq.unwrap_or(0))
}
