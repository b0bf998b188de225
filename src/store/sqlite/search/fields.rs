//! The `where` fields: the name/value pairs of a document's frontmatter that filters compare, and the terms under which the `fields` index holds them.
//!
//! `fields` (migration 0007) is a contentless FTS5 index with one row per
//! document that has pairs, whose text is the terms of its pairs. A term is
//! the first 128 bits of the blake3 hash of its pair, in hex: a filter is an
//! exact comparison of the value's text, whatever its length, case or
//! characters, and two different pairs share a term with a chance of about
//! 2^-128.
//!
//! An import compares a replaced document's terms, computed from its stored
//! frontmatter, with its new ones, and writes its row only when they differ.
//! So a change to what counts as a pair (`fields_of`) or to `pair_term` needs
//! a migration that fills `fields` again, as 0007's step does.

use std::collections::BTreeSet;

use anyhow::Result;
use rusqlite::Connection;

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

/// The term of the pair `name`=`value` in `fields`. The name's length comes
/// first, so that no two pairs hash the same bytes.
pub(in crate::store) fn pair_term(name: &str, value: &str) -> String {
    let mut hasher = blake3::Hasher::new();
    hasher.update(&(name.len() as u64).to_le_bytes());
    hasher.update(name.as_bytes());
    hasher.update(value.as_bytes());
    hasher.finalize().to_hex()[..32].to_string()
}

/// The text of a document's row in `fields`: the terms of its pairs, each
/// once, in order, separated by spaces; empty when it has none.
pub(in crate::store) fn terms_of(frontmatter: Option<&str>) -> String {
    let terms: BTreeSet<String> = frontmatter
        .map(fields_of)
        .unwrap_or_default()
        .iter()
        .map(|(name, value)| pair_term(name, value))
        .collect();
    terms.into_iter().collect::<Vec<_>>().join(" ")
}

/// How many rows of `fields` hold a term (migration 0015).
const TERMS: &str = "fields_terms";

/// The number of documents with the pair `name`=`value`.
pub(in crate::store) fn count(conn: &Connection, name: &str, value: &str) -> Result<i64> {
    Ok(conn
        .prepare_cached(&format!(
            "SELECT coalesce((SELECT doc FROM {TERMS} WHERE term = ?1), 0)"
        ))?
        .query_row([pair_term(name, value)], |r| r.get(0))?)
}

/// The FTS5 query on `fields` of the documents that have every pair.
pub(in crate::store) fn all_of<'a>(pairs: impl Iterator<Item = (&'a str, &'a str)>) -> String {
    pairs
        .map(|(name, value)| format!("\"{}\"", pair_term(name, value)))
        .collect::<Vec<_>>()
        .join(" AND ")
}

/// Writes the row of the document stored under `rowid` (a plain single-row
/// statement: see `IndexWrites`). Nothing for no terms.
pub(in crate::store) fn insert(conn: &Connection, rowid: i64, terms: &str) -> Result<()> {
    if !terms.is_empty() {
        conn.prepare_cached("INSERT INTO fields (rowid, pairs) VALUES (?1, ?2)")?
            .execute(rusqlite::params![rowid, terms])?;
    }
    Ok(())
}

/// Deletes the row of the document stored under `rowid` (by rowid alone:
/// `contentless_delete`). Nothing for no terms.
pub(in crate::store) fn delete(conn: &Connection, rowid: i64, terms: &str) -> Result<()> {
    if !terms.is_empty() {
        conn.prepare_cached("DELETE FROM fields WHERE rowid = ?1")?
            .execute([rowid])?;
    }
    Ok(())
}

/// Migration 0007's step: the row of every stored document, in rowid order.
pub(in crate::store) fn fill(conn: &Connection) -> Result<()> {
    let mut stmt = conn.prepare("SELECT rowid, frontmatter FROM documents ORDER BY rowid")?;
    let mut rows = stmt.query([])?;
    while let Some(row) = rows.next()? {
        insert(
            conn,
            row.get(0)?,
            &terms_of(row.get_ref(1)?.as_str_or_null()?),
        )?;
    }
    Ok(())
}
