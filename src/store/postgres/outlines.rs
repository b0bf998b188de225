//! The SQL of outlines on PostgreSQL: the same table and answers as SQLite's (`store::sqlite::outlines`), a load's outlines by binary COPY beside its batch, a byte range of a body by `substring`, the upgrade from the stored bodies.

use anyhow::Result;
use postgres::binary_copy::BinaryCopyInWriter;
use postgres::types::Type;
use postgres::{Client, GenericClient};

use super::reader::{PgReader, key};
use crate::doc::DocKey;
use crate::parts::outline::{self, Stored};

/// Writes the outline `encoded` of the document `key`, if it has one (its
/// stored one replaced when `had_one`: the document it replaces may have
/// one: `store::may_have_outline`).
pub(super) fn put(
    client: &mut impl GenericClient,
    key: &DocKey,
    encoded: Option<&[u8]>,
    had_one: bool,
) -> Result<()> {
    if had_one {
        remove(client, key)?;
    }
    if let Some(encoded) = encoded {
        client.execute(
            "INSERT INTO outlines (prefix, id, outline) VALUES ($1, $2, $3)",
            &[&key.prefix.as_str(), &key.id, &encoded],
        )?;
    }
    Ok(())
}

/// Removes the outline of a document, if it has one.
pub(super) fn remove(client: &mut impl GenericClient, key: &DocKey) -> Result<()> {
    client.execute(
        "DELETE FROM outlines WHERE prefix = $1 AND id = $2",
        &[&key.prefix.as_str(), &key.id],
    )?;
    Ok(())
}

/// The outlines of a load's batch, by binary COPY: none sent when no
/// document of the batch has one (most batches).
pub(super) fn copy(client: &mut Client, batch: &[(&'static str, &str, &[u8])]) -> Result<()> {
    if batch.is_empty() {
        return Ok(());
    }
    let sink = client.copy_in("COPY outlines (prefix, id, outline) FROM STDIN BINARY")?;
    let mut writer = BinaryCopyInWriter::new(sink, &[Type::TEXT, Type::TEXT, Type::BYTEA]);
    for (prefix, id, encoded) in batch {
        writer.write(&[prefix, id, encoded])?;
    }
    writer.finish()?;
    Ok(())
}

/// Migration 0019's step: the outline of every large UTF-8 document.
pub(super) fn fill_0019(tx: &mut postgres::Transaction) -> Result<()> {
    // From nothing, so that a migration run again finds them anew.
    tx.batch_execute("DELETE FROM outlines")?;
    let documents = tx.query(
        "SELECT prefix, id FROM documents WHERE is_text AND size >= $1 ORDER BY prefix, id",
        &[&(outline::OUTLINE_MIN_BYTES as i64)],
    )?;
    for document in documents {
        let key = key(document.get(0), document.get(1))?;
        let row = tx.query_one(
            "SELECT body FROM documents WHERE prefix = $1 AND id = $2",
            &[&key.prefix.as_str(), &key.id],
        )?;
        let body: Vec<u8> = row.get(0);
        if let Ok(text) = std::str::from_utf8(&body)
            && let Some(stored) = outline::to_store(text)
        {
            put(tx, &key, Some(&stored.encode()), false)?;
        }
    }
    Ok(())
}

impl PgReader {
    /// As SQLite's `Reader::outline`.
    pub fn outline(&self, key: &DocKey) -> Result<Option<Stored>> {
        let mut conn = self.conn.borrow_mut();
        let statement =
            conn.prepared("SELECT outline FROM outlines WHERE prefix = $1 AND id = $2")?;
        let row = conn.query_opt(&statement, &[&key.prefix.as_str(), &key.id])?;
        Ok(row.and_then(|row| Stored::decode(row.get::<_, &[u8]>(0))))
    }

    /// As SQLite's `Reader::body_range`.
    pub fn body_range(&self, key: &DocKey, start: u64, len: u64) -> Result<Option<Vec<u8>>> {
        let mut conn = self.conn.borrow_mut();
        let statement = conn.prepared(
            "SELECT substring(body from $3 for $4) FROM documents WHERE prefix = $1 AND id = $2",
        )?;
        let row = conn.query_opt(
            &statement,
            &[
                &key.prefix.as_str(),
                &key.id,
                &((start + 1).min(i32::MAX as u64) as i32),
                &(len.min(i32::MAX as u64) as i32),
            ],
        )?;
        Ok(row.map(|row| row.get(0)))
    }
}
