//! The SQL of outlines on SQLite: a large document's outline written with it in the import's transaction (`parts::outline::Stored`, encoded), read back by the tools with a byte range of its body instead of the whole, and migration 0019's fill from the stored bodies.
//!
//! Like every other statement of an import, each write is a plain
//! single-row one, by the whole key (see `ImportTx::put`).

use anyhow::Result;
use rusqlite::{Connection, OptionalExtension, params};

use super::Reader;
use crate::doc::DocKey;
use crate::parts::outline::{self, Stored};
use crate::store::NewDocument;

/// Writes the outline of `doc`, if it has one; `had_one` when the stored
/// document it replaces may have one (`store::may_have_outline`), which
/// goes.
pub(super) fn put(conn: &Connection, doc: &NewDocument, had_one: bool) -> Result<()> {
    if had_one {
        remove(conn, &doc.key)?;
    }
    if let Some(encoded) = &doc.outline {
        conn.prepare_cached("INSERT INTO outlines (prefix, id, outline) VALUES (?1, ?2, ?3)")?
            .execute(params![doc.key.prefix.as_str(), doc.key.id, encoded])?;
    }
    Ok(())
}

/// Removes the outline of a document, if it has one.
pub(super) fn remove(conn: &Connection, key: &DocKey) -> Result<()> {
    conn.prepare_cached("DELETE FROM outlines WHERE prefix = ?1 AND id = ?2")?
        .execute(params![key.prefix.as_str(), key.id])?;
    Ok(())
}

/// Migration 0019's step: the outline of every large UTF-8 document, from
/// the bodies the database holds.
pub(super) fn fill_0019(conn: &Connection) -> Result<()> {
    let mut documents = conn.prepare(
        "SELECT prefix, id, body FROM documents
         WHERE is_text AND size >= ?1 ORDER BY prefix, id",
    )?;
    let mut rows = documents.query([outline::OUTLINE_MIN_BYTES as i64])?;
    let mut insert =
        conn.prepare("INSERT INTO outlines (prefix, id, outline) VALUES (?1, ?2, ?3)")?;
    while let Some(row) = rows.next()? {
        let Ok(text) = std::str::from_utf8(row.get_ref(2)?.as_blob()?) else {
            continue;
        };
        if let Some(stored) = outline::to_store(text) {
            let prefix: String = row.get(0)?;
            let id: String = row.get(1)?;
            insert.execute(params![prefix, id, stored.encode()])?;
        }
    }
    Ok(())
}

impl Reader {
    /// The outline stored for `key`: `None` for a document without one (a
    /// small or binary one, or none at all).
    pub fn outline(&self, key: &DocKey) -> Result<Option<Stored>> {
        let encoded: Option<Vec<u8>> = self
            .conn
            .prepare_cached("SELECT outline FROM outlines WHERE prefix = ?1 AND id = ?2")?
            .query_row(params![key.prefix.as_str(), key.id], |r| r.get(0))
            .optional()?;
        Ok(encoded.and_then(|bytes| Stored::decode(&bytes)))
    }

    /// The bytes `start..start + len` of the body of `key` (fewer past its
    /// end), without reading the rest; `None` when it is not stored.
    pub fn body_range(&self, key: &DocKey, start: u64, len: u64) -> Result<Option<Vec<u8>>> {
        Ok(self
            .conn
            .prepare_cached(
                "SELECT substr(body, ?3, ?4) FROM documents WHERE prefix = ?1 AND id = ?2",
            )?
            .query_row(
                params![
                    key.prefix.as_str(),
                    key.id,
                    start as i64 + 1,
                    len.min(i64::MAX as u64) as i64
                ],
                |r| {
                    Ok(match r.get_ref(0)? {
                        rusqlite::types::ValueRef::Blob(b) => b.to_vec(),
                        rusqlite::types::ValueRef::Text(t) => t.to_vec(),
                        _ => Vec::new(),
                    })
                },
            )
            .optional()?)
    }
}
