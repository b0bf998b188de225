//! The SQL of links on PostgreSQL: the same tables and answers as SQLite's (`store::sqlite::links`), a document's links written in one statement of arrays (one round trip), a load's by binary COPY with its batch, the upgrade from the stored bodies.

use anyhow::Result;
use postgres::binary_copy::BinaryCopyInWriter;
use postgres::types::Type;
use postgres::{Client, GenericClient};

use super::import_tx::text;
use super::reader::{PgReader, key};
use super::search::Params;
use crate::access::Areas;
use crate::doc::DocKey;
use crate::links::{self, Link, LinkTarget};
use crate::store::{BrokenLink, InLink, OutLink, areas_sql};

/// A link as its row holds it, for a COPY: (n, line, target prefix, target
/// id, text, context); a mention's prefix is empty.
pub(super) type Row = (i32, i32, &'static str, String, String, String);

pub(super) fn rows_of(links: &[Link]) -> Vec<Row> {
    links
        .iter()
        .enumerate()
        .map(|(n, link)| {
            let (prefix, id) = match &link.target {
                LinkTarget::Document(key) => (key.prefix.as_str(), key.id.clone()),
                LinkTarget::Mention(name) => ("", name.clone()),
            };
            (
                n as i32,
                link.line as i32,
                prefix,
                id,
                text(&link.text).into_owned(),
                text(&link.context).into_owned(),
            )
        })
        .collect()
}

/// Writes the links of the document `key` (its stored ones replaced when
/// `replaced`), and the name of a new document.
pub(super) fn put(
    client: &mut impl GenericClient,
    key: &DocKey,
    found: &[Link],
    replaced: bool,
) -> Result<()> {
    let (prefix, id) = (key.prefix.as_str(), key.id.as_str());
    if replaced {
        client.execute(
            "DELETE FROM links WHERE prefix = $1 AND id = $2",
            &[&prefix, &id],
        )?;
    } else if let Some(name) = links::name_of(id) {
        client.execute(
            "INSERT INTO names (name, prefix, id) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
            &[&name, &prefix, &id],
        )?;
    }
    if found.is_empty() {
        return Ok(());
    }
    let rows = rows_of(found);
    let column = |f: fn(&Row) -> String| rows.iter().map(f).collect::<Vec<String>>();
    let n: Vec<i32> = rows.iter().map(|r| r.0).collect();
    let line: Vec<i32> = rows.iter().map(|r| r.1).collect();
    client.execute(
        "INSERT INTO links (prefix, id, n, line, target_prefix, target_id, text, context)
         SELECT $1, $2, * FROM unnest($3::integer[], $4::integer[], $5::text[], $6::text[],
                                      $7::text[], $8::text[])",
        &[
            &prefix,
            &id,
            &n,
            &line,
            &column(|r| r.2.to_string()),
            &column(|r| r.3.clone()),
            &column(|r| r.4.clone()),
            &column(|r| r.5.clone()),
        ],
    )?;
    Ok(())
}

/// Removes the links and the name of a removed document; links to it stay.
pub(super) fn remove(client: &mut impl GenericClient, key: &DocKey) -> Result<()> {
    let (prefix, id) = (key.prefix.as_str(), key.id.as_str());
    client.execute(
        "DELETE FROM links WHERE prefix = $1 AND id = $2",
        &[&prefix, &id],
    )?;
    client.execute(
        "DELETE FROM names WHERE prefix = $1 AND id = $2",
        &[&prefix, &id],
    )?;
    Ok(())
}

/// The links and names of a load's batch, by binary COPY.
pub(super) fn copy(client: &mut Client, batch: &[(&'static str, &str, &[Row])]) -> Result<()> {
    let sink = client.copy_in(
        "COPY links (prefix, id, n, line, target_prefix, target_id, text, context)
         FROM STDIN BINARY",
    )?;
    let types = [
        Type::TEXT,
        Type::TEXT,
        Type::INT4,
        Type::INT4,
        Type::TEXT,
        Type::TEXT,
        Type::TEXT,
        Type::TEXT,
    ];
    let mut writer = BinaryCopyInWriter::new(sink, &types);
    for (prefix, id, rows) in batch {
        for row in *rows {
            writer.write(&[prefix, id, &row.0, &row.1, &row.2, &row.3, &row.4, &row.5])?;
        }
    }
    writer.finish()?;
    let sink = client.copy_in("COPY names (name, prefix, id) FROM STDIN BINARY")?;
    let mut writer = BinaryCopyInWriter::new(sink, &[Type::TEXT, Type::TEXT, Type::TEXT]);
    for (prefix, id, _) in batch {
        if let Some(name) = links::name_of(id) {
            writer.write(&[&name, prefix, id])?;
        }
    }
    writer.finish()?;
    Ok(())
}

/// Migration 0016's step: the links and names of every stored document.
pub(super) fn fill_0016(tx: &mut postgres::Transaction) -> Result<()> {
    // From nothing, so that a migration run again finds them anew.
    tx.batch_execute("DELETE FROM links; DELETE FROM names")?;
    let documents = tx.query("SELECT prefix, id FROM documents ORDER BY prefix, id", &[])?;
    for document in documents {
        let key = key(document.get(0), document.get(1))?;
        let row = tx.query_one(
            "SELECT is_text, body FROM documents WHERE prefix = $1 AND id = $2",
            &[&key.prefix.as_str(), &key.id],
        )?;
        let body: Vec<u8> = row.get(1);
        let found = match std::str::from_utf8(&body) {
            Ok(text) if row.get::<_, bool>(0) => links::extract(&key, text),
            _ => Vec::new(),
        };
        put(tx, &key, &found, false)?;
    }
    Ok(())
}

/// As SQLite's: the keyset of a page of links after the link `after`.
fn after_link(after: Option<(&DocKey, u32)>) -> Result<(&str, &str, i32)> {
    Ok(match after {
        Some((key, n)) => (key.prefix.as_str(), key.id.as_str(), i32::try_from(n)?),
        None => ("", "", -1),
    })
}

/// The statement of [`PgReader::links_out`] (`None`: every document seen),
/// its placeholders `$1`…`$4` and then the areas'.
fn links_out_sql(target_seen: &str, name_seen: &str) -> String {
    format!(
        "SELECT l.n, l.line, l.text, l.target_prefix, l.target_id,
                l.target_prefix = '' OR EXISTS (SELECT 1 FROM documents d
                    WHERE d.prefix = l.target_prefix AND d.id = l.target_id){target_seen},
                (SELECT m.prefix FROM names m WHERE m.name = l.target_id{name_seen}
                 ORDER BY m.prefix, m.id LIMIT 1),
                (SELECT m.id FROM names m WHERE m.name = l.target_id{name_seen}
                 ORDER BY m.prefix, m.id LIMIT 1)
         FROM links l
         WHERE l.prefix = $1 AND l.id = $2 AND l.n > $3
           AND (l.target_prefix <> ''
                OR EXISTS (SELECT 1 FROM names m WHERE m.name = l.target_id{name_seen}))
         ORDER BY l.n LIMIT $4"
    )
}

/// ` AND ` the areas on the columns `prefix` and `id`, their values bound
/// after `params`; empty for `None`.
fn seen(areas: Option<&Areas>, prefix: &str, id: &str, params: &mut Params) -> String {
    match areas {
        None => String::new(),
        Some(areas) => format!(" AND {}", areas_sql(areas, prefix, id, |v| params.bind(v))),
    }
}

/// The statement of [`PgReader::links_to`], with the areas' condition.
fn links_to_sql(seen: &str) -> String {
    format!(
        "SELECT prefix, id, n, line, text, context FROM links
         WHERE target_prefix = $1 AND target_id = $2 AND (prefix, id, n) > ($3, $4, $5){seen}
         ORDER BY prefix, id, n LIMIT $6"
    )
}

impl PgReader {
    /// As SQLite's `Reader::links_out`.
    pub fn links_out(
        &self,
        key: &DocKey,
        after: Option<u32>,
        limit: usize,
    ) -> Result<Vec<OutLink>> {
        self.links_out_seeing(key, None, after, limit)
    }

    /// As SQLite's `Reader::links_out_seeing`.
    pub fn links_out_seeing(
        &self,
        key: &DocKey,
        areas: Option<&Areas>,
        after: Option<u32>,
        limit: usize,
    ) -> Result<Vec<OutLink>> {
        let after = match after {
            Some(n) => i32::try_from(n)?,
            None => -1,
        };
        let mut params = Params::default();
        params.bind(key.prefix.as_str().to_string());
        params.bind(key.id.clone());
        params.bind(after);
        params.bind(limit as i64);
        let target_seen = seen(areas, "l.target_prefix", "l.target_id", &mut params);
        let name_seen = seen(areas, "m.prefix", "m.id", &mut params);
        let mut conn = self.conn.borrow_mut();
        let rows = match areas {
            None => {
                static SQL: std::sync::LazyLock<String> =
                    std::sync::LazyLock::new(|| links_out_sql("", ""));
                let statement = conn.prepared(SQL.as_str())?;
                conn.query(&statement, &params.refs())?
            }
            Some(_) => conn.query(&links_out_sql(&target_seen, &name_seen), &params.refs())?,
        };
        rows.iter()
            .map(|r| {
                let prefix: &str = r.get(3);
                let mention = prefix.is_empty();
                let target = match mention {
                    false => self::key(prefix, r.get(4))?,
                    true => self::key(r.get(6), r.get(7))?,
                };
                Ok(OutLink {
                    n: r.get::<_, i32>(0) as u32,
                    line: r.get::<_, i32>(1) as u32,
                    text: r.get(2),
                    target,
                    exists: r.get(5),
                    mention,
                })
            })
            .collect()
    }

    /// As SQLite's `Reader::links_in`.
    pub fn links_in(
        &self,
        key: &DocKey,
        after: Option<(&DocKey, u32)>,
        limit: usize,
    ) -> Result<Vec<InLink>> {
        self.links_in_seeing(key, None, after, limit)
    }

    /// As SQLite's `Reader::links_in_seeing`.
    pub fn links_in_seeing(
        &self,
        key: &DocKey,
        areas: Option<&Areas>,
        after: Option<(&DocKey, u32)>,
        limit: usize,
    ) -> Result<Vec<InLink>> {
        let mut found = self.links_to(key.prefix.as_str(), &key.id, areas, after, limit, false)?;
        if let Some(name) = links::name_of(&key.id) {
            let first = {
                let mut conn = self.conn.borrow_mut();
                let row = match areas {
                    None => {
                        let statement = conn.prepared(
                            "SELECT prefix, id FROM names WHERE name = $1 ORDER BY prefix, id LIMIT 1",
                        )?;
                        conn.query_opt(&statement, &[&name])?
                    }
                    Some(_) => {
                        let mut params = Params::default();
                        params.bind(name.to_string());
                        let seen = seen(areas, "prefix", "id", &mut params);
                        conn.query_opt(
                            &format!(
                                "SELECT prefix, id FROM names WHERE name = $1{seen}
                                 ORDER BY prefix, id LIMIT 1"
                            ),
                            &params.refs(),
                        )?
                    }
                };
                row.map(|r| (r.get::<_, String>(0), r.get::<_, String>(1)))
            };
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
        let (after_prefix, after_id, after_n) = after_link(after)?;
        let mut params = Params::default();
        params.bind(prefix.to_string());
        params.bind(id.to_string());
        params.bind(after_prefix.to_string());
        params.bind(after_id.to_string());
        params.bind(after_n);
        params.bind(limit as i64);
        let sources = seen(areas, "prefix", "id", &mut params);
        let mut conn = self.conn.borrow_mut();
        let rows = match areas {
            None => {
                static SQL: std::sync::LazyLock<String> =
                    std::sync::LazyLock::new(|| links_to_sql(""));
                let statement = conn.prepared(SQL.as_str())?;
                conn.query(&statement, &params.refs())?
            }
            Some(_) => conn.query(&links_to_sql(&sources), &params.refs())?,
        };
        rows.iter()
            .map(|r| {
                Ok(InLink {
                    source: self::key(r.get(0), r.get(1))?,
                    n: r.get::<_, i32>(2) as u32,
                    line: r.get::<_, i32>(3) as u32,
                    text: r.get(4),
                    context: r.get(5),
                    mention,
                })
            })
            .collect()
    }

    /// As SQLite's `Reader::broken_links`.
    pub fn broken_links(
        &self,
        after: Option<(&DocKey, u32)>,
        limit: usize,
    ) -> Result<Vec<BrokenLink>> {
        let (after_prefix, after_id, after_n) = after_link(after)?;
        let mut conn = self.conn.borrow_mut();
        let statement = conn.prepared(
            "SELECT l.prefix, l.id, l.n, l.line, l.target_prefix, l.target_id, l.text FROM links l
             WHERE (l.prefix, l.id, l.n) > ($1, $2, $3) AND l.target_prefix <> ''
               AND NOT EXISTS (SELECT 1 FROM documents d
                               WHERE d.prefix = l.target_prefix AND d.id = l.target_id)
             ORDER BY l.prefix, l.id, l.n LIMIT $4",
        )?;
        let rows = conn.query(
            &statement,
            &[&after_prefix, &after_id, &after_n, &(limit as i64)],
        )?;
        rows.iter()
            .map(|r| {
                Ok(BrokenLink {
                    source: self::key(r.get(0), r.get(1))?,
                    n: r.get::<_, i32>(2) as u32,
                    line: r.get::<_, i32>(3) as u32,
                    target: self::key(r.get(4), r.get(5))?,
                    text: r.get(6),
                })
            })
            .collect()
    }
}
