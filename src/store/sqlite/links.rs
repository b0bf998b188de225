//! The SQL of links on SQLite: a document's links written with it in the import's transaction, its names for mentions, the pages of its links and backlinks, the broken links, and the upgrade that finds the links of a database made before them.
//!
//! An import writes only what changed: the stored links of a replaced
//! document are read and compared with the new ones row by row, and only
//! the rows that differ are written, each by its key. Like every other
//! statement of an import, each is a plain single-row one (see
//! `ImportTx::put`).

use anyhow::Result;
use rusqlite::types::Value;
use rusqlite::{Connection, params, params_from_iter};

use super::{Reader, key_from_row, numbered};
use crate::access::Areas;
use crate::doc::DocKey;
use crate::links::{self, Link, LinkTarget};
use crate::store::{BrokenLink, InLink, NewDocument, OutLink, areas_sql};

/// A link as its row holds it: (line, target prefix, target id, text,
/// context); a mention's prefix is empty.
type Row = (u32, String, String, String, String);

fn row_of(link: &Link) -> Row {
    let (prefix, id) = match &link.target {
        LinkTarget::Document(key) => (key.prefix.as_str().to_string(), key.id.clone()),
        LinkTarget::Mention(name) => (String::new(), name.clone()),
    };
    (
        link.line,
        prefix,
        id,
        link.text.clone(),
        link.context.clone(),
    )
}

fn stored_rows(conn: &Connection, key: &DocKey) -> Result<Vec<Row>> {
    let mut stmt = conn.prepare_cached(
        "SELECT line, target_prefix, target_id, text, context FROM links
         WHERE prefix = ?1 AND id = ?2 ORDER BY n",
    )?;
    let rows = stmt.query_map(params![key.prefix.as_str(), key.id], |r| {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Writes the links of `doc`; `replaced` when a stored document had its
/// key (whose links it replaces). A new document also gets its name.
pub(super) fn put(conn: &Connection, doc: &NewDocument, replaced: bool) -> Result<()> {
    let key = &doc.key;
    let new: Vec<Row> = doc.links.iter().map(row_of).collect();
    let old = match replaced {
        true => stored_rows(conn, key)?,
        false => {
            if let Some(name) = links::name_of(&key.id) {
                conn.prepare_cached("INSERT INTO names (name, prefix, id) VALUES (?1, ?2, ?3)")?
                    .execute(params![name, key.prefix.as_str(), key.id])?;
            }
            Vec::new()
        }
    };
    for n in 0..old.len().max(new.len()) {
        match (old.get(n), new.get(n)) {
            (Some(old), Some(new)) if old == new => {}
            (Some(_), Some(new)) => {
                conn.prepare_cached(
                    "UPDATE links SET line = ?4, target_prefix = ?5, target_id = ?6, text = ?7,
                        context = ?8
                     WHERE prefix = ?1 AND id = ?2 AND n = ?3",
                )?
                .execute(params![
                    key.prefix.as_str(),
                    key.id,
                    n as i64,
                    new.0,
                    new.1,
                    new.2,
                    new.3,
                    new.4
                ])?;
            }
            (None, Some(new)) => {
                conn.prepare_cached(
                    "INSERT INTO links (prefix, id, n, line, target_prefix, target_id, text, context)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                )?
                .execute(params![
                    key.prefix.as_str(),
                    key.id,
                    n as i64,
                    new.0,
                    new.1,
                    new.2,
                    new.3,
                    new.4
                ])?;
            }
            (Some(_), None) => delete(conn, key, n)?,
            (None, None) => unreachable!(),
        }
    }
    Ok(())
}

fn delete(conn: &Connection, key: &DocKey, n: usize) -> Result<()> {
    conn.prepare_cached("DELETE FROM links WHERE prefix = ?1 AND id = ?2 AND n = ?3")?
        .execute(params![key.prefix.as_str(), key.id, n as i64])?;
    Ok(())
}

/// Removes the links of a removed document, and its name. Links to it stay:
/// broken now, whole again if it comes back.
pub(super) fn remove(conn: &Connection, key: &DocKey) -> Result<()> {
    let count: i64 = conn
        .prepare_cached("SELECT count(*) FROM links WHERE prefix = ?1 AND id = ?2")?
        .query_row(params![key.prefix.as_str(), key.id], |r| r.get(0))?;
    for n in 0..count as usize {
        delete(conn, key, n)?;
    }
    if let Some(name) = links::name_of(&key.id) {
        conn.prepare_cached("DELETE FROM names WHERE name = ?1 AND prefix = ?2 AND id = ?3")?
            .execute(params![name, key.prefix.as_str(), key.id])?;
    }
    Ok(())
}

/// Migration 0016's step: the links and names of every stored document,
/// from the bodies the database holds.
pub(super) fn fill_0016(conn: &Connection) -> Result<()> {
    let mut documents = conn.prepare("SELECT prefix, id, is_text, body FROM documents")?;
    let mut rows = documents.query([])?;
    let mut insert = conn.prepare(
        "INSERT INTO links (prefix, id, n, line, target_prefix, target_id, text, context)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?;
    let mut name = conn.prepare("INSERT INTO names (name, prefix, id) VALUES (?1, ?2, ?3)")?;
    while let Some(row) = rows.next()? {
        let key = key_from_row(row.get_ref(0)?.as_str()?, row.get(1)?)?;
        if let Some(found) = links::name_of(&key.id) {
            name.execute(params![found, key.prefix.as_str(), key.id])?;
        }
        let is_text: bool = row.get(2)?;
        let Ok(text) = std::str::from_utf8(row.get_ref(3)?.as_blob()?) else {
            continue;
        };
        if !is_text {
            continue;
        }
        for (n, link) in links::extract(&key, text).iter().enumerate() {
            let (line, prefix, id, text, context) = row_of(link);
            insert.execute(params![
                key.prefix.as_str(),
                key.id,
                n as i64,
                line,
                prefix,
                id,
                text,
                context
            ])?;
        }
    }
    Ok(())
}

/// The keyset of a page of links after the link `after` (its source and
/// place): before every link when `None`.
fn after_link(after: Option<(&DocKey, u32)>) -> (&str, &str, i64) {
    match after {
        Some((key, n)) => (key.prefix.as_str(), key.id.as_str(), i64::from(n)),
        None => ("", "", -1),
    }
}

impl Reader {
    /// Up to `limit` of the links of `key` after its link `after`, in the
    /// order they are written. A mention of a name no document has is no
    /// link and is left out.
    pub fn links_out(
        &self,
        key: &DocKey,
        after: Option<u32>,
        limit: usize,
    ) -> Result<Vec<OutLink>> {
        self.links_out_seeing(key, None, after, limit)
    }

    /// [`Reader::links_out`] on a store that holds only the documents in
    /// `areas` (`None`: all): a link to a document outside them is to a
    /// missing one; a mention names the first document of its name in
    /// them, and is left out when none is.
    pub fn links_out_seeing(
        &self,
        key: &DocKey,
        areas: Option<&Areas>,
        after: Option<u32>,
        limit: usize,
    ) -> Result<Vec<OutLink>> {
        let mut args: Vec<Value> = vec![
            key.prefix.as_str().to_string().into(),
            key.id.clone().into(),
            after.map_or(-1, i64::from).into(),
            (limit as i64).into(),
        ];
        let (target_seen, name_seen) = match areas {
            None => (String::new(), String::new()),
            Some(areas) => {
                // `+`: the document's links drive the query, not the targets' index.
                let target = areas_sql(areas, "+l.target_prefix", "+l.target_id", |v| {
                    numbered(&mut args, v)
                });
                let named = areas_sql(areas, "m.prefix", "m.id", |v| numbered(&mut args, v));
                (format!(" AND {target}"), format!(" AND {named}"))
            }
        };
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT l.n, l.line, l.text, l.target_prefix, l.target_id,
                    l.target_prefix = '' OR EXISTS (SELECT 1 FROM documents d
                        WHERE d.prefix = l.target_prefix AND d.id = l.target_id){target_seen},
                    (SELECT m.prefix || '/' || m.id FROM names m WHERE m.name = l.target_id{name_seen}
                     ORDER BY m.prefix, m.id LIMIT 1)
             FROM links l
             WHERE l.prefix = ?1 AND l.id = ?2 AND l.n > ?3
               AND (l.target_prefix <> ''
                    OR EXISTS (SELECT 1 FROM names m WHERE m.name = l.target_id{name_seen}))
             ORDER BY l.n LIMIT ?4"
        ))?;
        let rows = stmt.query_map(params_from_iter(args.iter()), |r| {
            let prefix: String = r.get(3)?;
            let mention = prefix.is_empty();
            let target = match mention {
                false => key_from_row(&prefix, r.get(4)?)?,
                true => {
                    let named: String = r.get(6)?;
                    let (prefix, id) = named.split_once('/').unwrap_or_default();
                    key_from_row(prefix, id.to_string())?
                }
            };
            Ok(OutLink {
                n: r.get(0)?,
                line: r.get(1)?,
                text: r.get(2)?,
                target,
                exists: r.get(5)?,
                mention,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Up to `limit` of the links to `key` from other documents, after the
    /// link `after` (its source and place), in the sources' key order: the
    /// links naming it, and the mentions of its name when it is the first
    /// document of that name.
    pub fn links_in(
        &self,
        key: &DocKey,
        after: Option<(&DocKey, u32)>,
        limit: usize,
    ) -> Result<Vec<InLink>> {
        self.links_in_seeing(key, None, after, limit)
    }

    /// [`Reader::links_in`] on a store that holds only the documents in
    /// `areas` (`None`: all): links from sources in them, and mentions
    /// when `key` is the first document of its name in them.
    pub fn links_in_seeing(
        &self,
        key: &DocKey,
        areas: Option<&Areas>,
        after: Option<(&DocKey, u32)>,
        limit: usize,
    ) -> Result<Vec<InLink>> {
        let mut found = self.links_to(key.prefix.as_str(), &key.id, areas, after, limit, false)?;
        if let Some(name) = links::name_of(&key.id) {
            let mut args: Vec<Value> = vec![name.to_string().into()];
            let seen = match areas {
                None => String::new(),
                Some(areas) => {
                    let named = areas_sql(areas, "prefix", "id", |v| numbered(&mut args, v));
                    format!(" AND {named}")
                }
            };
            let first: Option<(String, String)> = self
                .conn
                .prepare_cached(&format!(
                    "SELECT prefix, id FROM names WHERE name = ?1{seen} ORDER BY prefix, id LIMIT 1"
                ))?
                .query_row(params_from_iter(args.iter()), |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })
                .ok();
            if first.is_some_and(|(p, i)| p == key.prefix.as_str() && i == key.id) {
                found.extend(self.links_to("", name, areas, after, limit, true)?);
                found.sort_by(|a, b| (&a.source, a.n).cmp(&(&b.source, b.n)));
                found.truncate(limit);
            }
        }
        Ok(found)
    }

    fn links_to(
        &self,
        prefix: &str,
        id: &str,
        areas: Option<&Areas>,
        after: Option<(&DocKey, u32)>,
        limit: usize,
        mention: bool,
    ) -> Result<Vec<InLink>> {
        let (after_prefix, after_id, after_n) = after_link(after);
        let mut args: Vec<Value> = vec![
            prefix.to_string().into(),
            id.to_string().into(),
            after_prefix.to_string().into(),
            after_id.to_string().into(),
            after_n.into(),
            (limit as i64).into(),
        ];
        let seen = match areas {
            None => String::new(),
            Some(areas) => {
                // `+`: the index of targets drives the query, not the sources' key.
                let sources = areas_sql(areas, "+prefix", "+id", |v| numbered(&mut args, v));
                format!(" AND {sources}")
            }
        };
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT prefix, id, n, line, text, context FROM links
             WHERE target_prefix = ?1 AND target_id = ?2 AND (prefix, id, n) > (?3, ?4, ?5){seen}
             ORDER BY prefix, id, n LIMIT ?6"
        ))?;
        let rows = stmt.query_map(params_from_iter(args.iter()), |r| {
            Ok(InLink {
                source: key_from_row(r.get_ref(0)?.as_str()?, r.get(1)?)?,
                n: r.get(2)?,
                line: r.get(3)?,
                text: r.get(4)?,
                context: r.get(5)?,
                mention,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Up to `limit` links to documents that are not in the store, after
    /// the link `after`, in the sources' key order.
    pub fn broken_links(
        &self,
        after: Option<(&DocKey, u32)>,
        limit: usize,
    ) -> Result<Vec<BrokenLink>> {
        let (after_prefix, after_id, after_n) = after_link(after);
        let mut stmt = self.conn.prepare_cached(
            "SELECT l.prefix, l.id, l.n, l.line, l.target_prefix, l.target_id, l.text FROM links l
             WHERE (l.prefix, l.id, l.n) > (?1, ?2, ?3) AND l.target_prefix <> ''
               AND NOT EXISTS (SELECT 1 FROM documents d
                               WHERE d.prefix = l.target_prefix AND d.id = l.target_id)
             ORDER BY l.prefix, l.id, l.n LIMIT ?4",
        )?;
        let rows = stmt.query_map(
            params![after_prefix, after_id, after_n, limit as i64],
            |r| {
                Ok(BrokenLink {
                    source: key_from_row(r.get_ref(0)?.as_str()?, r.get(1)?)?,
                    n: r.get(2)?,
                    line: r.get(3)?,
                    target: key_from_row(r.get_ref(4)?.as_str()?, r.get(5)?)?,
                    text: r.get(6)?,
                })
            },
        )?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }
}
