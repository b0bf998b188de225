//! Search on PostgreSQL: `PgReader::search`, the same query language, filters, pages, cursors and hits as the SQLite store's, over the `search` vector and the `fields` terms that `import_tx` writes.
//!
//! The query is compiled once, by `crate::search`, into the FTS5 expression
//! SQLite runs; that expression (quoted terms, `AND`, `OR`, `NOT`,
//! parentheses, a `*` for a prefix: a grammar of our own making, never the
//! user's) is read back here and becomes a `tsquery` built in SQL from bound
//! values: a term is `phraseto_tsquery('orchestra', $n)`, a prefix term
//! `to_tsquery('orchestra', $n)` of one quoted operand ending in `:*`. No
//! user text is ever SQL or `tsquery` syntax.
//!
//! # Where PostgreSQL answers differently
//! - Ranking: `ts_rank` with the weights key and title 1.0, description 0.5,
//!   body 0.1 (SQLite's 10 : 5 : 1), divided by 1 + log(length). It counts
//!   how often and where the terms occur, without BM25's inverse document
//!   frequency: in a query of several words, a rare word weighs no more than
//!   a common one. So the order of hits may differ from SQLite's; the hits,
//!   the total and the ties (by key) do not. Scores are `real`.
//! - Tokens: PostgreSQL's parser is not SQLite's `unicode61`, and the vector
//!   is made by it. A key is one token (`features/feat-0012`, a path), so
//!   the words of a key are not found one by one: `0012` or `adr` find no
//!   key. To find a document by its id, a term without spaces also matches
//!   the whole key `PREFIX/term` (`FEAT-0012`, `adr/0006`, `FEAT-00*`). In
//!   text, `FEAT-0012` is `feat` and `-0012` (a signed number), so `0012`
//!   alone does not find it; `foo.bar`, `v2.1`, `a/b` and e-mail addresses
//!   are one token each (found whole, not by their parts); `C++` is `c`, as
//!   on SQLite. The same text in the query is parsed the same way, so a term
//!   finds the text it copies.
//! - Phrases: the key, title, description and body are one vector, so a
//!   phrase may run from the end of one into the next; positions stop at
//!   16383, and only the first 256 KB of a body are indexed.
//! - Prefixes: every word of a prefix term is a prefix (`"sign i"*` is
//!   `sign:* <-> i:*`; SQLite: only the last).
//! - Snippets: `ts_headline`'s best fragment of 32 words, then clipped by the
//!   SQLite store's own rule (`clip`: one line of at most
//!   [`SNIPPET_CHARS`](crate::store::SNIPPET_CHARS), a few words before the
//!   first match, `…` where text was cut). `ts_headline` marks every word of
//!   a phrase wherever it occurs in the fragment, not only in the phrase.

use anyhow::Result;
use postgres::types::ToSql;

use self::query::Expr;
use self::snippet::{indexed_text, lead, placed};
use super::reader::{PgReader, key};
use crate::cursor::SearchResume;
use crate::search::Search;
use crate::store::sqlite::pair_term;
use crate::store::{Hit, SearchPage, successor};

/// How hits are ranked: `ts_rank` over the weights of D (body), C (unused),
/// B (description) and A (key, title), and normalization 1 (divided by
/// 1 + the log of the document's length, as BM25 favours short documents).
const RANK: &str = "ts_rank('{0.1, 0.1, 0.5, 1.0}', d.search, q.q, 1)";
/// The options of `ts_headline`: the best fragment of about as many words as
/// SQLite's snippet has tokens, matches marked as `clip` expects. `ShortWord=0`
/// lets a fragment start with a short word: otherwise `ts_headline` puts the
/// match first, with no context before it.
const HEADLINE: &str =
    "StartSel=\u{2}, StopSel=\u{3}, MaxFragments=1, MaxWords=32, MinWords=16, ShortWord=0";
/// The part of a body that the search vector holds (`import_tx`'s
/// `MAX_INDEXED_BODY`), and so the part whose matches a snippet can show.
const INDEXED_BODY: usize = 256 * 1024;
/// Bytes of a body a snippet without a match is made from, as on SQLite.
const LEAD_BYTES: usize = 2048;

/// Statement parameters, numbered as they are bound.
#[derive(Default)]
struct Params(Vec<Box<dyn ToSql + Sync>>);

impl Params {
    /// Binds `value`, and returns its placeholder.
    fn bind(&mut self, value: impl ToSql + Sync + 'static) -> String {
        self.0.push(Box::new(value));
        format!("${}", self.0.len())
    }

    fn refs(&self) -> Vec<&(dyn ToSql + Sync)> {
        self.0.iter().map(|p| p.as_ref()).collect()
    }
}

/// `under` and `where` on the documents aliased `d`, as ` AND …` conditions.
fn filters(search: &Search, params: &mut Params) -> String {
    let mut sql = String::new();
    if let Some(under) = &search.under {
        let prefix = params.bind(under.prefix.as_str().to_string());
        sql.push_str(&format!(" AND d.prefix = {prefix}"));
        if let Some(folder) = &under.folder {
            let lower = params.bind(folder.clone());
            sql.push_str(&format!(" AND d.id >= {lower}"));
            if let Some(upper) = successor(folder) {
                let upper = params.bind(upper);
                sql.push_str(&format!(" AND d.id < {upper}"));
            }
        }
    }
    if !search.filters.is_empty() {
        // The same terms as SQLite's `fields` index; a document passes when
        // it has all of them.
        let terms: Vec<String> = search
            .filters
            .iter()
            .map(|filter| pair_term(&filter.name, &filter.value))
            .collect();
        let terms = params.bind(terms);
        sql.push_str(&format!(" AND d.fields @> {terms}::text[]"));
    }
    sql
}

impl PgReader {
    /// One page of `search`: up to `limit` hits from `resume` on, and the
    /// number of hits in all. One snapshot, so page and total agree.
    pub fn search(
        &self,
        search: &Search,
        resume: Option<&SearchResume>,
        limit: usize,
    ) -> Result<SearchPage> {
        self.in_transaction(|| {
            let compiled = search.compile();
            match compiled.matching {
                Some(matching) => self.ranked(search, &matching, resume, limit),
                None => self.in_key_order(search, compiled.excluded.as_deref(), resume, limit),
            }
        })
    }

    /// The `tsquery` of an FTS5 expression made by `search::compile`, as
    /// text (which reads back as the same `tsquery`).
    fn tsquery(&self, fts: &str) -> Result<String> {
        let expr = Expr::parse(fts)?;
        let mut params = Params::default();
        let sql = format!("SELECT ({})::text", expr.sql(&mut params));
        Ok(self
            .conn
            .borrow_mut()
            .query_one(&sql, &params.refs())?
            .get(0))
    }

    /// Hits by relevance, ties by key, paged by offset as on SQLite.
    fn ranked(
        &self,
        search: &Search,
        matching: &str,
        resume: Option<&SearchResume>,
        limit: usize,
    ) -> Result<SearchPage> {
        let offset = match resume {
            Some(SearchResume::Offset(offset)) => *offset,
            // A key-order cursor cannot come from a search with words: its
            // fingerprint would differ. Start over rather than fail.
            _ => 0,
        };
        let query = self.tsquery(matching)?;
        let mut params = Params::default();
        let q = params.bind(query.clone());
        let conditions = filters(search, &mut params);
        let from = format!(
            "documents d, (SELECT {q}::text::tsquery AS q) q WHERE d.search @@ q.q{conditions}"
        );
        let total: i64 = self
            .conn
            .borrow_mut()
            .query_one(&format!("SELECT count(*) FROM {from}"), &params.refs())?
            .get(0);
        let wanted = params.bind(limit as i64 + 1);
        let skipped = params.bind(i64::try_from(offset).unwrap_or(i64::MAX));
        // The page is chosen first, and only its rows' bodies are read: in
        // one select list with the rank, every hit's body would be read
        // before the sort.
        let rows = self.conn.borrow_mut().query(
            &format!(
                "SELECT p.prefix, p.id, p.title, p.description, p.size, p.score,
                        CASE WHEN b.is_text
                             THEN substring(b.body FROM b.body_start + 1 FOR {INDEXED_BODY}) END
                 FROM (SELECT d.prefix, d.id, d.title, d.description, d.size, {RANK} AS score
                       FROM {from}
                       ORDER BY score DESC, d.prefix, d.id LIMIT {wanted} OFFSET {skipped}) p
                 JOIN documents b ON b.prefix = p.prefix AND b.id = p.id
                 ORDER BY p.score DESC, p.prefix, p.id"
            ),
            &params.refs(),
        )?;
        let mut hits = Vec::with_capacity(rows.len());
        let mut heads = Vec::with_capacity(rows.len());
        for row in &rows {
            hits.push(Hit {
                key: key(row.get(0), row.get(1))?,
                title: row.get(2),
                description: row.get(3),
                size: row.get::<_, i64>(4) as u64,
                snippet: String::new(),
                score: f64::from(row.get::<_, f32>(5)),
            });
            heads.push(row.get::<_, Option<Vec<u8>>>(6));
        }
        let next =
            (hits.len() > limit).then(|| SearchResume::Offset(offset.saturating_add(limit as u64)));
        hits.truncate(limit);
        heads.truncate(limit);
        self.snippets(&query, &mut hits, &heads)?;
        Ok(SearchPage {
            hits,
            total: total as u64,
            next,
        })
    }

    /// Fills the snippets of a ranked page: the body around its best match,
    /// else the description around it, else (a match in the key or title)
    /// the start of the body. One statement for the whole page.
    fn snippets(&self, query: &str, hits: &mut [Hit], heads: &[Option<Vec<u8>>]) -> Result<()> {
        // The text the vector was made from, so that the headline finds the
        // matches the search found.
        let bodies: Vec<String> = heads
            .iter()
            .map(|head| head.as_deref().map(indexed_text).unwrap_or_default())
            .collect();
        let descriptions: Vec<Option<String>> =
            hits.iter().map(|hit| hit.description.clone()).collect();
        let rows = self.conn.borrow_mut().query(
            "SELECT ts_headline('orchestra', t.body, q.q, $2),
                    CASE WHEN t.description IS NOT NULL
                         THEN ts_headline('orchestra', t.description, q.q, $2) END
             FROM unnest($3::text[], $4::text[]) WITH ORDINALITY AS t(body, description, n),
                  (SELECT $1::text::tsquery AS q) q
             ORDER BY t.n",
            &[&query, &HEADLINE, &bodies, &descriptions],
        )?;
        for (i, row) in rows.iter().enumerate() {
            let body: String = row.get(0);
            let description: Option<String> = row.get(1);
            hits[i].snippet = match placed(&bodies[i], &body) {
                Some(snippet) => snippet,
                None => description
                    .as_deref()
                    .zip(hits[i].description.as_deref())
                    .and_then(|(marked, text)| placed(text, marked))
                    .unwrap_or_else(|| lead(heads[i].as_deref())),
            };
        }
        Ok(())
    }

    /// Hits in key order: a search with filters only, or with exclusions
    /// only. Keyset pages, as on SQLite.
    fn in_key_order(
        &self,
        search: &Search,
        excluded: Option<&str>,
        resume: Option<&SearchResume>,
        limit: usize,
    ) -> Result<SearchPage> {
        let mut params = Params::default();
        let mut conditions = filters(search, &mut params);
        if let Some(excluded) = excluded {
            let excluded = params.bind(self.tsquery(excluded)?);
            conditions.push_str(&format!(" AND NOT d.search @@ {excluded}::text::tsquery"));
        }
        let total: i64 = self
            .conn
            .borrow_mut()
            .query_one(
                &format!("SELECT count(*) FROM documents d WHERE true{conditions}"),
                &params.refs(),
            )?
            .get(0);
        let (prefix, id) = match resume {
            Some(SearchResume::After(key)) => (key.prefix.as_str(), key.id.clone()),
            _ => ("", String::new()),
        };
        let prefix = params.bind(prefix.to_string());
        let id = params.bind(id);
        let wanted = params.bind(limit as i64 + 1);
        let rows = self.conn.borrow_mut().query(
            &format!(
                "SELECT p.prefix, p.id, p.title, p.description, p.size,
                        CASE WHEN b.is_text
                             THEN substring(b.body FROM b.body_start + 1 FOR {LEAD_BYTES}) END
                 FROM (SELECT d.prefix, d.id, d.title, d.description, d.size FROM documents d
                       WHERE (d.prefix, d.id) > ({prefix}, {id}){conditions}
                       ORDER BY d.prefix, d.id LIMIT {wanted}) p
                 JOIN documents b ON b.prefix = p.prefix AND b.id = p.id
                 ORDER BY p.prefix, p.id"
            ),
            &params.refs(),
        )?;
        let mut hits = rows
            .iter()
            .map(|row| {
                Ok(Hit {
                    key: key(row.get(0), row.get(1))?,
                    title: row.get(2),
                    description: row.get(3),
                    size: row.get::<_, i64>(4) as u64,
                    snippet: lead(row.get::<_, Option<&[u8]>>(5)),
                    score: 0.0,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let next = if hits.len() > limit {
            hits.truncate(limit);
            hits.last().map(|hit| SearchResume::After(hit.key.clone()))
        } else {
            None
        };
        Ok(SearchPage {
            hits,
            total: total as u64,
            next,
        })
    }
}

mod query;
mod snippet;
#[cfg(test)]
mod tests;
