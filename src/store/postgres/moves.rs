//! The SQL of moves on PostgreSQL: the same as SQLite's (`store::sqlite::moves`).

use anyhow::Result;

use super::import_tx::PgImportTx;
use super::pool::Pooled;
use super::reader::key;
use crate::doc::DocKey;
use crate::store::{Moved, Version};

impl PgImportTx {
    /// As SQLite's `ImportTx::record_move`.
    pub fn record_move(
        &self,
        from: &DocKey,
        from_version: u32,
        to: &DocKey,
        to_version: u32,
    ) -> Result<()> {
        let sql = "INSERT INTO moves (prefix, id, version, direction, other_prefix, other_id)
                   VALUES ($1, $2, $3, $4, $5, $6)
                   ON CONFLICT (prefix, id, version) DO UPDATE
                   SET direction = excluded.direction, other_prefix = excluded.other_prefix,
                       other_id = excluded.other_id";
        let (from_version, to_version) = (i32::try_from(from_version)?, i32::try_from(to_version)?);
        let mut client = self.client();
        client.execute(
            sql,
            &[
                &from.prefix.as_str(),
                &from.id,
                &from_version,
                &"to",
                &to.prefix.as_str(),
                &to.id,
            ],
        )?;
        client.execute(
            sql,
            &[
                &to.prefix.as_str(),
                &to.id,
                &to_version,
                &"from",
                &from.prefix.as_str(),
                &from.id,
            ],
        )?;
        Ok(())
    }
}

/// Fills `moved` of the versions of `key` that a move names.
pub(super) fn attach(conn: &mut Pooled, key_of: &DocKey, versions: &mut [Version]) -> Result<()> {
    let rows = conn.query(
        "SELECT version, direction, other_prefix, other_id FROM moves
         WHERE prefix = $1 AND id = $2",
        &[&key_of.prefix.as_str(), &key_of.id],
    )?;
    for row in rows {
        let number = row.get::<_, i32>(0) as u32;
        let other = key(row.get(2), row.get(3))?;
        let moved = match row.get::<_, &str>(1) {
            "to" => Moved::To(other),
            _ => Moved::From(other),
        };
        if let Some(version) = versions.iter_mut().find(|v| v.number == number) {
            version.moved = Some(moved);
        }
    }
    Ok(())
}
