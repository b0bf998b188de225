//! The SQL of moves on SQLite: a write's `move` recorded on both keys' versions (migration 0018), and attached to a page of history.

use anyhow::Result;
use rusqlite::{Connection, params};

use super::import_tx::ImportTx;
use super::{Version, key_from_row};
use crate::doc::DocKey;
use crate::store::Moved;

impl ImportTx {
    /// Records that `from` (whose removal is its version `from_version`)
    /// was moved to `to` (whose first version there is `to_version`).
    pub fn record_move(
        &self,
        from: &DocKey,
        from_version: u32,
        to: &DocKey,
        to_version: u32,
    ) -> Result<()> {
        let mut insert = self.conn.prepare_cached(
            "INSERT OR REPLACE INTO moves (prefix, id, version, direction, other_prefix, other_id)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )?;
        insert.execute(params![
            from.prefix.as_str(),
            from.id,
            from_version,
            "to",
            to.prefix.as_str(),
            to.id
        ])?;
        insert.execute(params![
            to.prefix.as_str(),
            to.id,
            to_version,
            "from",
            from.prefix.as_str(),
            from.id
        ])?;
        Ok(())
    }
}

/// Fills `moved` of the versions of `key` that a move names.
pub(super) fn attach(conn: &Connection, key: &DocKey, versions: &mut [Version]) -> Result<()> {
    let mut stmt = conn.prepare_cached(
        "SELECT version, direction, other_prefix, other_id FROM moves
         WHERE prefix = ?1 AND id = ?2",
    )?;
    let moves = stmt
        .query_map(params![key.prefix.as_str(), key.id], |r| {
            let other = key_from_row(r.get_ref(2)?.as_str()?, r.get(3)?)?;
            let moved = match r.get_ref(1)?.as_str()? {
                "to" => Moved::To(other),
                _ => Moved::From(other),
            };
            Ok((r.get::<_, u32>(0)?, moved))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    for (number, moved) in moves {
        if let Some(version) = versions.iter_mut().find(|v| v.number == number) {
            version.moved = Some(moved);
        }
    }
    Ok(())
}
