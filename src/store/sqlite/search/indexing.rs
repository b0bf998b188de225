//! Keeping the full-text index and the `where` fields equal to the documents, inside an import's transaction.
//!
//! The index (`search`, migration 0004) is external-content over the view
//! `search_source`, which says once what is indexed. An import indexes each
//! document from its values in memory, the text the view gives for the row
//! it writes (FTS5's `integrity-check` compares the two in the tests), where
//! FTS5 can take it in memory, and the rest through the view at the commit
//! (see [`IndexWrites`]); a delete passes the old values, the text the view
//! gives for the stored row (FTS5 needs them; a delete by rowid alone
//! corrupts an external-content index). The fields (`fields`, migration
//! 0007) follow the same order.

use std::cell::Cell;

use anyhow::{Context, Result};
use rusqlite::Connection;

use super::fields;
use crate::doc::DocKey;
use crate::store::NewDocument;
use crate::store::sqlite::import_tx::StoredDoc;

/// An incremental import's writes to the two FTS5 indexes (`search` and
/// `fields`): each straight to FTS5 when it can take it in memory, the
/// others queued in temporary tables until the commit.
///
/// FTS5 keeps the terms of the rows it is given in memory and writes them
/// out as a new segment at the commit, but also at every statement that
/// opens a statement journal (an upsert, an `INSERT … SELECT`) and at every
/// write to a lower rowid than the last one. A segment per document would be
/// merged again and again (3x the time). So every write of an import is a
/// plain single-row statement, and a replaced or removed document is
/// unindexed and indexed at once only when its rowid is above the last one
/// written so (the files come in key order, which is rowid order for
/// documents loaded together). The others, and new documents (whose rowids
/// are above every stored one), are written at the commit, in rowid order.
pub(in crate::store) struct IndexWrites {
    /// The highest rowid written straight to FTS5 by this import.
    written_up_to: Cell<i64>,
    /// Whether anything waits in the temporary tables.
    queued: Cell<bool>,
}

/// Starts an incremental import's index writes.
pub(in crate::store) fn begin(conn: &Connection) -> Result<IndexWrites> {
    conn.execute_batch(
        "CREATE TEMP TABLE IF NOT EXISTS search_old
             (rowid INTEGER PRIMARY KEY, key TEXT, title TEXT, description TEXT, body TEXT);
         CREATE TEMP TABLE IF NOT EXISTS search_new (rowid INTEGER PRIMARY KEY);
         CREATE TEMP TABLE IF NOT EXISTS fields_queue
             (rowid INTEGER NOT NULL, step INTEGER NOT NULL, pairs TEXT,
              PRIMARY KEY (rowid, step)) WITHOUT ROWID;
         DELETE FROM temp.search_old;
         DELETE FROM temp.search_new;
         DELETE FROM temp.fields_queue;",
    )?;
    Ok(IndexWrites {
        written_up_to: Cell::new(0),
        queued: Cell::new(false),
    })
}

/// When [`unindex`] took a document out of the index, and so when its new
/// values and its fields are written.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(in crate::store) enum When {
    /// Now: the document's new values can follow at once.
    Now,
    /// At the commit.
    AtCommit,
}

/// Takes `old`, the stored document `key`, out of the full-text index,
/// before its row changes. FTS5 needs the values it indexed: the text
/// `search_source` gives for the stored row.
pub(in crate::store) fn unindex(
    conn: &Connection,
    writes: &IndexWrites,
    key: &DocKey,
    old: &StoredDoc,
) -> Result<When> {
    let body = source_body(old.is_text, &old.body, old.body_start)
        .with_context(|| format!("{key}: the stored text is not what it was indexed from"))?;
    let values = rusqlite::params![
        old.rowid,
        key.to_string(),
        old.title,
        old.description.as_deref().unwrap_or_default(),
        body
    ];
    let (sql, when) = match old.rowid > writes.written_up_to.get() {
        true => {
            writes.written_up_to.set(old.rowid);
            (
                "INSERT INTO search (search, rowid, key, title, description, body)
                 VALUES ('delete', ?1, ?2, ?3, ?4, ?5)",
                When::Now,
            )
        }
        false => {
            writes.queued.set(true);
            (
                "INSERT OR IGNORE INTO temp.search_old (rowid, key, title, description, body)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                When::AtCommit,
            )
        }
    };
    conn.prepare_cached(sql)?.execute(values)?;
    Ok(when)
}

/// Indexes `doc`, just written under `rowid`, and brings its fields from
/// those of `old`, the document it replaced, to its own (nothing when they
/// are the same). From memory if `old` was unindexed [`When::Now`], else at
/// the commit (a new document, or one unindexed at the commit).
pub(in crate::store) fn index(
    conn: &Connection,
    writes: &IndexWrites,
    rowid: i64,
    doc: &NewDocument,
    old: Option<(&StoredDoc, When)>,
) -> Result<()> {
    let when = old.map_or(When::AtCommit, |(_, when)| when);
    let old_terms = fields::terms_of(old.and_then(|(old, _)| old.frontmatter.as_deref()));
    let new_terms = &doc.field_terms;
    match when {
        When::Now => index_new(conn, rowid, doc)?,
        When::AtCommit => {
            conn.prepare_cached("INSERT OR IGNORE INTO temp.search_new (rowid) VALUES (?1)")?
                .execute([rowid])?;
            writes.queued.set(true);
        }
    }
    if old_terms != *new_terms {
        write_fields(conn, writes, rowid, &old_terms, new_terms, when)?;
    }
    Ok(())
}

/// Removes the fields of `old`, a stored document being removed and
/// unindexed `when`.
pub(in crate::store) fn remove_fields(
    conn: &Connection,
    writes: &IndexWrites,
    old: &StoredDoc,
    when: When,
) -> Result<()> {
    let terms = fields::terms_of(old.frontmatter.as_deref());
    write_fields(conn, writes, old.rowid, &terms, "", when)
}

/// Replaces the fields' row under `rowid`, `old` by `new` (empty: none).
fn write_fields(
    conn: &Connection,
    writes: &IndexWrites,
    rowid: i64,
    old: &str,
    new: &str,
    when: When,
) -> Result<()> {
    if when == When::Now {
        fields::delete(conn, rowid, old)?;
        return fields::insert(conn, rowid, new);
    }
    let mut queue = conn.prepare_cached(
        "INSERT OR REPLACE INTO temp.fields_queue (rowid, step, pairs) VALUES (?1, ?2, ?3)",
    )?;
    if !old.is_empty() {
        queue.execute(rusqlite::params![rowid, 0, old])?;
    }
    if !new.is_empty() {
        queue.execute(rusqlite::params![rowid, 1, new])?;
    }
    writes.queued.set(true);
    Ok(())
}

/// Writes what was queued, in rowid order, a document's delete before its
/// new values: the full-text index in one statement, the fields a row at a
/// time (their deletes take no values: `contentless_delete`).
pub(in crate::store) fn commit(conn: &Connection, writes: &IndexWrites) -> Result<()> {
    if !writes.queued.get() {
        return Ok(());
    }
    conn.execute_batch(
        "INSERT INTO search (search, rowid, key, title, description, body)
             SELECT command, rowid, key, title, description, body FROM (
                 SELECT 'delete' AS command, rowid, key, title, description, body, 0 AS step
                 FROM temp.search_old
                 UNION ALL
                 SELECT NULL, s.rowid, s.key, s.title, s.description, s.body, 1
                 FROM temp.search_new n JOIN search_source s ON s.rowid = n.rowid
             )
             ORDER BY rowid, step;",
    )?;
    {
        let mut queued =
            conn.prepare("SELECT rowid, step, pairs FROM temp.fields_queue ORDER BY rowid, step")?;
        let mut rows = queued.query([])?;
        while let Some(row) = rows.next()? {
            let (rowid, pairs) = (row.get(0)?, row.get_ref(2)?.as_str()?);
            match row.get::<_, i64>(1)? {
                0 => fields::delete(conn, rowid, pairs)?,
                _ => fields::insert(conn, rowid, pairs)?,
            }
        }
    }
    conn.execute_batch(
        "DELETE FROM temp.search_old;
         DELETE FROM temp.search_new;
         DELETE FROM temp.fields_queue;",
    )?;
    writes.queued.set(false);
    Ok(())
}

/// Indexes a document just inserted under `rowid` by a load into an empty
/// database, and writes its fields, both at once (the rowids of a load only
/// ascend).
pub(in crate::store) fn load(conn: &Connection, rowid: i64, doc: &NewDocument) -> Result<()> {
    index_new(conn, rowid, doc)?;
    fields::insert(conn, rowid, &doc.field_terms)
}

/// Indexes a document just written under `rowid`, from its values in
/// memory: the text `search_source` gives.
fn index_new(conn: &Connection, rowid: i64, doc: &NewDocument) -> Result<()> {
    let body = source_body(doc.is_text, &doc.body, doc.body_start).unwrap_or_default();
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

/// The body `search_source` gives for a row: a text document's Markdown
/// past `body_start`, nothing for a binary one. `None` when the bytes there
/// are not text (a row the view could not have given).
fn source_body(is_text: bool, body: &[u8], body_start: usize) -> Option<&str> {
    match is_text {
        true => body
            .get(body_start..)
            .and_then(|text| std::str::from_utf8(text).ok()),
        false => Some(""),
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

/// Migration 0004's step in Rust: `body_start` of every stored document,
/// then the index, from the stored rows alone. (Their fields come with
/// migration 0007's step.)
pub(in crate::store) fn backfill(conn: &Connection) -> Result<()> {
    let mut starts = Vec::new();
    {
        let mut stmt = conn.prepare("SELECT rowid, is_text, body FROM documents")?;
        let mut rows = stmt.query([])?;
        while let Some(row) = rows.next()? {
            let rowid: i64 = row.get(0)?;
            if row.get::<_, bool>(1)? {
                let start = body_start(row.get_ref(2)?.as_bytes()?);
                if start > 0 {
                    starts.push((rowid, start as i64));
                }
            }
        }
    }
    let mut update = conn.prepare("UPDATE documents SET body_start = ?2 WHERE rowid = ?1")?;
    for (rowid, start) in starts {
        update.execute([rowid, start])?;
    }
    rebuild_index(conn)
}

/// Builds the full-text index again from the stored rows.
pub(in crate::store) fn rebuild_index(conn: &Connection) -> Result<()> {
    conn.execute_batch("INSERT INTO search (search) VALUES ('rebuild')")?;
    Ok(())
}
