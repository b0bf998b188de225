//! Keeping the FTS5 index and the `where` fields equal to the documents, inside an import's transaction.
//!
//! The index (`search`, migration 0004) is external-content over the view
//! `search_source`, which says once what is indexed. A first load indexes
//! each document from its values in memory, the text the view gives for the
//! row it writes (FTS5's `integrity-check` compares the two in the tests);
//! later imports index through the view; a delete passes the old values,
//! read through the view (FTS5 needs them; a delete by rowid alone corrupts
//! an external-content index).

use std::collections::BTreeSet;

use anyhow::Result;
use rusqlite::{Connection, OptionalExtension};

use crate::doc::DocKey;
use crate::store::NewDocument;

/// An import's changes to the full-text index wait in two temporary tables
/// until its commit, and are then written in two statements, in rowid order.
/// Written a document at a time, they would cost 3x more: FTS5 writes its
/// pending terms out as a new segment at every statement that opens a
/// statement journal (the upsert of [`ImportTx::put`]) and at every write to
/// a rowid lower than the last one (the files come in key order, which is
/// rowid order only for a first load), so each document would become a
/// segment of its own, merged again and again.
///
/// [`ImportTx::put`]: crate::store::ImportTx::put
pub(in crate::store) fn begin(conn: &Connection) -> Result<()> {
    conn.execute_batch(
        "CREATE TEMP TABLE IF NOT EXISTS search_old
             (rowid INTEGER PRIMARY KEY, key TEXT, title TEXT, description TEXT, body TEXT);
         CREATE TEMP TABLE IF NOT EXISTS search_new (rowid INTEGER PRIMARY KEY);
         DELETE FROM temp.search_old;
         DELETE FROM temp.search_new;",
    )?;
    Ok(())
}

/// A stored document about to be replaced or removed: its rowid and its
/// frontmatter (JSON text), whose `where` fields it has.
pub(in crate::store) struct Stored {
    pub(in crate::store) rowid: i64,
    frontmatter: Option<String>,
}

/// Takes the document with this key out of the index (at commit: its
/// indexed values are kept until then, as FTS5 needs them to delete it).
/// `None` when no document has this key.
pub(in crate::store) fn unindex(conn: &Connection, key: &DocKey) -> Result<Option<Stored>> {
    let stored = conn
        .prepare_cached("SELECT rowid, frontmatter FROM documents WHERE prefix = ?1 AND id = ?2")?
        .query_row(rusqlite::params![key.prefix.as_str(), key.id], |r| {
            Ok(Stored {
                rowid: r.get(0)?,
                frontmatter: r.get(1)?,
            })
        })
        .optional()?;
    if let Some(stored) = &stored {
        conn.prepare_cached(
            "INSERT OR IGNORE INTO temp.search_old (rowid, key, title, description, body)
             SELECT rowid, key, title, description, body FROM search_source WHERE rowid = ?1",
        )?
        .execute([stored.rowid])?;
    }
    Ok(stored)
}

/// Indexes the document stored under `rowid` (at commit, as it is then),
/// and brings its `where` fields from those of `old`, the document it
/// replaced, to those of `frontmatter`: only the pairs that changed are
/// written (each is an entry of the lookup index, at a random place in it).
pub(in crate::store) fn index(
    conn: &Connection,
    rowid: i64,
    old: Option<&Stored>,
    frontmatter: Option<&str>,
) -> Result<()> {
    conn.prepare_cached("INSERT OR IGNORE INTO temp.search_new (rowid) VALUES (?1)")?
        .execute([rowid])?;
    let pairs = |frontmatter: Option<&str>| -> BTreeSet<(String, String)> {
        frontmatter
            .map(fields_of)
            .unwrap_or_default()
            .into_iter()
            .collect()
    };
    let before = pairs(old.and_then(|o| o.frontmatter.as_deref()));
    let after = pairs(frontmatter);
    let mut delete =
        conn.prepare_cached("DELETE FROM fields WHERE doc = ?1 AND name = ?2 AND value = ?3")?;
    for (name, value) in before.difference(&after) {
        delete.execute(rusqlite::params![rowid, name, value])?;
    }
    let mut insert =
        conn.prepare_cached("INSERT OR IGNORE INTO fields (doc, name, value) VALUES (?1, ?2, ?3)")?;
    for (name, value) in after.difference(&before) {
        insert.execute(rusqlite::params![rowid, name, value])?;
    }
    Ok(())
}

/// Removes every `where` field of the document stored under `rowid`.
pub(in crate::store) fn remove_fields(conn: &Connection, rowid: i64) -> Result<()> {
    conn.prepare_cached("DELETE FROM fields WHERE doc = ?1")?
        .execute([rowid])?;
    Ok(())
}

/// Writes what [`unindex`] and [`index`] queued: deletes with the old
/// values, then the new rows through `search_source`.
pub(in crate::store) fn commit(conn: &Connection) -> Result<()> {
    conn.execute_batch(
        "INSERT INTO search (search, rowid, key, title, description, body)
             SELECT 'delete', rowid, key, title, description, body FROM temp.search_old
             ORDER BY rowid;
         INSERT INTO search (rowid, key, title, description, body)
             SELECT s.rowid, s.key, s.title, s.description, s.body
             FROM temp.search_new n JOIN search_source s ON s.rowid = n.rowid
             ORDER BY n.rowid;
         DELETE FROM temp.search_old;
         DELETE FROM temp.search_new;",
    )?;
    Ok(())
}

/// Indexes a document just inserted under `rowid` (a load into an empty
/// database), from its values in memory: the text `search_source` gives.
pub(in crate::store) fn index_new(
    conn: &Connection,
    rowid: i64,
    doc: &NewDocument,
    body_start: usize,
) -> Result<()> {
    let body = match doc.is_text {
        true => std::str::from_utf8(&doc.body[body_start..]).unwrap_or_default(),
        false => "",
    };
    conn.prepare_cached(
        "INSERT INTO search (rowid, key, title, description, body) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?
    .execute(rusqlite::params![
        rowid,
        doc.key.to_string(),
        doc.title,
        doc.description.as_deref().unwrap_or_default(),
        body
    ])?;
    Ok(())
}

/// The `where` fields of the document stored under `rowid`.
pub(in crate::store) fn insert_fields(
    conn: &Connection,
    rowid: i64,
    frontmatter: Option<&str>,
) -> Result<()> {
    let Some(frontmatter) = frontmatter else {
        return Ok(());
    };
    let mut insert =
        conn.prepare_cached("INSERT OR IGNORE INTO fields (doc, name, value) VALUES (?1, ?2, ?3)")?;
    for (name, value) in fields_of(frontmatter) {
        insert.execute(rusqlite::params![rowid, name, value])?;
    }
    Ok(())
}

/// What `where` filters compare: every scalar top-level field of a
/// frontmatter (JSON text), and every scalar item of a top-level list, as
/// YAML text (`open`, `3`, `false`, `null`).
pub(in crate::store) fn fields_of(frontmatter: &str) -> Vec<(String, String)> {
    let Ok(serde_json::Value::Object(map)) = serde_json::from_str(frontmatter) else {
        return Vec::new();
    };
    let mut fields = Vec::new();
    for (name, value) in &map {
        match value {
            serde_json::Value::Array(items) => fields.extend(
                items
                    .iter()
                    .filter_map(yaml_text)
                    .map(|item| (name.clone(), item)),
            ),
            scalar => fields.extend(yaml_text(scalar).map(|text| (name.clone(), text))),
        }
    }
    fields
}

fn yaml_text(value: &serde_json::Value) -> Option<String> {
    match value {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        serde_json::Value::Bool(b) => Some(b.to_string()),
        serde_json::Value::Null => Some("null".to_string()),
        serde_json::Value::Array(_) | serde_json::Value::Object(_) => None,
    }
}

/// Where the Markdown of a document starts: past its frontmatter block, if
/// it has one (`search_source` indexes the body from there).
pub(in crate::store) fn body_start(body: &[u8]) -> usize {
    std::str::from_utf8(body)
        .ok()
        .and_then(crate::frontmatter::split)
        .map_or(0, |(_, markdown)| body.len() - markdown.len())
}

/// Migration 0004's step in Rust: `body_start` and the fields of every
/// stored document, then the index, from the stored rows alone.
pub(in crate::store) fn backfill(conn: &Connection) -> Result<()> {
    let mut starts = Vec::new();
    {
        let mut stmt = conn.prepare("SELECT rowid, is_text, body, frontmatter FROM documents")?;
        let mut rows = stmt.query([])?;
        while let Some(row) = rows.next()? {
            let rowid: i64 = row.get(0)?;
            if row.get::<_, bool>(1)? {
                let start = body_start(row.get_ref(2)?.as_bytes()?);
                if start > 0 {
                    starts.push((rowid, start as i64));
                }
            }
            insert_fields(conn, rowid, row.get_ref(3)?.as_str_or_null()?)?;
        }
    }
    let mut update = conn.prepare("UPDATE documents SET body_start = ?2 WHERE rowid = ?1")?;
    for (rowid, start) in starts {
        update.execute([rowid, start])?;
    }
    rebuild_index(conn)
}

/// The lookup index of `fields`, as migration 0004 creates it. A load into
/// an empty database drops it first and builds it again at the end: one
/// sort instead of half a million inserts at random places (4x faster).
const FIELDS_LOOKUP: &str = "CREATE INDEX fields_lookup ON fields (name, value, doc)";

/// Starts a load into an empty database.
pub(in crate::store) fn begin_bulk(conn: &Connection) -> Result<()> {
    conn.execute_batch("DROP INDEX IF EXISTS fields_lookup")?;
    Ok(())
}

/// Ends a load into an empty database: the fields' lookup index.
pub(in crate::store) fn commit_bulk(conn: &Connection) -> Result<()> {
    conn.execute_batch(FIELDS_LOOKUP)?;
    Ok(())
}

/// Builds the full-text index again from the stored rows.
pub(in crate::store) fn rebuild_index(conn: &Connection) -> Result<()> {
    conn.execute_batch("INSERT INTO search (search) VALUES ('rebuild')")?;
    Ok(())
}
