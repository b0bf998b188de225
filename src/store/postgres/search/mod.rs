//! Search on PostgreSQL: `PgReader::search`, the same query language, filters, pages, cursors and hits as the SQLite store's, over the `search` vector and the `fields` terms that `import_tx` writes.
//!
//! The query is compiled once, by `crate::search`, into the FTS5 expression
//! SQLite runs; that expression (quoted terms, `AND`, `OR`, `NOT`,
//! parentheses, a `*` for a prefix: a grammar of our own making, never the
//! user's) is read back here and written as a `tsquery` whose operands are
//! the terms' words, split as the vectors' were (`words`), each quoted: a
//! term is a phrase of its words (`<->`), a prefix term's last word a
//! prefix (`:*`). The `tsquery` is bound as a value: no user text is ever
//! SQL, nor `tsquery` syntax.
//!
//! # Where PostgreSQL answers differently
//! - Ranking: `ts_rank` with the weights key and title 1.0, description 0.5,
//!   body 0.1 (SQLite's 10 : 5 : 1), divided by 1 + log(length). It counts
//!   how often and where the terms occur, without BM25's inverse document
//!   frequency: in a query of several words, a rare word weighs no more than
//!   a common one. So the order of hits may differ from SQLite's; the hits,
//!   the total and the ties (by key) do not. Scores are `real`.
//! - Words are SQLite's (`unicode61 remove_diacritics 2`, made by orchestra
//!   at import: `words`), so a query finds the same documents on both. Only
//!   positions differ: they stop at 16383, a word keeps its first 256, and a
//!   vector keeps the distinct words that fit PostgreSQL's 1 MB.
//! - Snippets are made by orchestra (`snippet`) as FTS5 makes them: the
//!   window of 32 words with the most distinct matched terms, each match
//!   marked whole, clipped by the SQLite store's rule (`clip`), from the
//!   first 256 KB of a body. The window may start a word or two away from
//!   SQLite's.

use anyhow::Result;
use postgres::types::ToSql;

use self::query::{Expr, Phrase};
use self::snippet::{indexed_text, lead, snippet};
use super::reader::{PgReader, key};
use crate::access::Areas;
use crate::cursor::SearchResume;
use crate::search::Search;
use crate::store::sqlite::pair_term;
use crate::store::{Hit, SearchPage, areas_sql, successor};

/// How hits are ranked: `ts_rank` over the weights of D (body), C (unused),
/// B (description) and A (key, title), and normalization 1 (divided by
/// 1 + the log of the document's length, as BM25 favours short documents).
const RANK: &str = "ts_rank('{0.1, 0.1, 0.5, 1.0}', d.search, q.q, 1)";
/// The part of a body a snippet is made from.
const INDEXED_BODY: usize = 256 * 1024;
/// Bytes of a body a snippet without a match is made from, as on SQLite.
const LEAD_BYTES: usize = 2048;

/// Statement parameters, numbered as they are bound.
#[derive(Default)]
pub(super) struct Params(Vec<Box<dyn ToSql + Sync>>);

impl Params {
    /// Binds `value`, and returns its placeholder.
    pub(super) fn bind(&mut self, value: impl ToSql + Sync + 'static) -> String {
        self.0.push(Box::new(value));
        format!("${}", self.0.len())
    }

    pub(super) fn refs(&self) -> Vec<&(dyn ToSql + Sync)> {
        self.0.iter().map(|p| p.as_ref()).collect()
    }
}

/// `under`, the areas seen and `where` on the documents aliased `d`, as
/// ` AND …` conditions.
fn filters(search: &Search, areas: Option<&Areas>, params: &mut Params) -> String {
    let mut sql = filters_of_areas(areas, params);
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

/// ` AND ` the areas on the documents aliased `d`; empty for `None`.
fn filters_of_areas(areas: Option<&Areas>, params: &mut Params) -> String {
    match areas {
        None => String::new(),
        Some(areas) => format!(
            " AND {}",
            areas_sql(areas, "d.prefix", "d.id", |v| params.bind(v))
        ),
    }
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
        self.search_seeing(search, None, resume, limit)
    }

    /// As SQLite's `Reader::search_seeing`: hits, totals, the relaxed
    /// decision and a long query's rarest terms of the documents in `areas`
    /// (`None`: all). Scores (`ts_rank`) depend on each document alone, so
    /// they are those of a store holding only those documents.
    pub fn search_seeing(
        &self,
        search: &Search,
        areas: Option<&Areas>,
        resume: Option<&SearchResume>,
        limit: usize,
    ) -> Result<SearchPage> {
        self.in_transaction(|| {
            let compiled = match search.is_long() {
                true => search.compile_selected(&self.term_documents(&search.terms(), areas)?),
                false => search.compile(),
            };
            // As on SQLite: a relaxed search's cursor resumes it; a query
            // of plain words that no document holds all of is relaxed.
            let mut page = match (&compiled.matching, &compiled.relaxed, resume) {
                (_, Some(relaxed), Some(SearchResume::Relaxed(offset))) => {
                    self.relaxed(search, areas, relaxed, *offset, limit)?
                }
                (Some(matching), relaxed, resume) => {
                    let offset = match resume {
                        Some(SearchResume::Offset(offset) | SearchResume::Relaxed(offset)) => {
                            *offset
                        }
                        // A key-order cursor cannot come from a search with
                        // words: its fingerprint would differ. Start over
                        // rather than fail.
                        _ => 0,
                    };
                    let page = self.ranked(search, areas, matching, offset, limit)?;
                    match relaxed {
                        Some(relaxed) if page.total == 0 && offset == 0 => {
                            let relaxed = self.relaxed(search, areas, relaxed, 0, limit)?;
                            // Relaxed only when that finds something: else the
                            // words are not what kept every document out.
                            if relaxed.total > 0 { relaxed } else { page }
                        }
                        _ => page,
                    }
                }
                (None, _, resume) => {
                    self.in_key_order(search, areas, compiled.excluded.as_deref(), resume, limit)?
                }
            };
            page.terms = compiled.used;
            Ok(page)
        })
    }

    /// A page of the relaxed search, its cursor marked to resume it.
    fn relaxed(
        &self,
        search: &Search,
        areas: Option<&Areas>,
        relaxed: &str,
        offset: u64,
        limit: usize,
    ) -> Result<SearchPage> {
        let mut page = self.ranked(search, areas, relaxed, offset, limit)?;
        page.relaxed = true;
        page.next = page.next.map(|next| match next {
            SearchResume::Offset(offset) => SearchResume::Relaxed(offset),
            other => other,
        });
        Ok(page)
    }

    /// The number of documents that hold each of `terms` (the FTS5 strings
    /// of `Search::terms`), in the whole index: one statement, a count of
    /// each term's matches in the GIN index (exact, as SQLite's, so that both
    /// choose the same terms).
    fn term_documents(&self, terms: &[String], areas: Option<&Areas>) -> Result<Vec<u64>> {
        let queries: Vec<Option<String>> = terms
            .iter()
            .map(|term| Ok(Expr::parse(term)?.tsquery()))
            .collect::<Result<_>>()?;
        let with_words: Vec<String> = queries.iter().flatten().cloned().collect();
        let mut params = Params::default();
        params.bind(with_words);
        let seen = filters_of_areas(areas, &mut params);
        let rows = self.conn.borrow_mut().query(
            &format!(
                "SELECT (SELECT count(*) FROM documents d WHERE d.search @@ u.q::tsquery{seen})
                 FROM unnest($1::text[]) WITH ORDINALITY AS u(q, n) ORDER BY u.n"
            ),
            &params.refs(),
        )?;
        let mut counts = rows.iter().map(|row| row.get::<_, i64>(0) as u64);
        // A term without words is in no document.
        Ok(queries
            .iter()
            .map(|query| match query {
                Some(_) => counts.next().unwrap_or(0),
                None => 0,
            })
            .collect())
    }

    /// Hits by relevance, ties by key, paged by offset as on SQLite.
    fn ranked(
        &self,
        search: &Search,
        areas: Option<&Areas>,
        matching: &str,
        offset: u64,
        limit: usize,
    ) -> Result<SearchPage> {
        let expr = Expr::parse(matching)?;
        let Some(query) = expr.tsquery() else {
            // Terms without words: nothing matches.
            return Ok(SearchPage::default());
        };
        let mut params = Params::default();
        let q = params.bind(query.clone());
        let conditions = filters(search, areas, &mut params);
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
                version: None,
            });
            heads.push(row.get::<_, Option<Vec<u8>>>(6));
        }
        let next =
            (hits.len() > limit).then(|| SearchResume::Offset(offset.saturating_add(limit as u64)));
        hits.truncate(limit);
        heads.truncate(limit);
        PgReader::snippets(&expr.phrases(), &mut hits, &heads);
        Ok(SearchPage {
            hits,
            total: total as u64,
            next,
            ..SearchPage::default()
        })
    }

    /// Fills the snippets of a ranked page: the body around its best match,
    /// else the description around it, else (a match in the key or title)
    /// the start of the body.
    fn snippets(phrases: &[Phrase], hits: &mut [Hit], heads: &[Option<Vec<u8>>]) {
        for (hit, head) in hits.iter_mut().zip(heads) {
            let body = head.as_deref().map(indexed_text).unwrap_or_default();
            hit.snippet = snippet(&body, phrases)
                .or_else(|| hit.description.as_deref().and_then(|d| snippet(d, phrases)))
                .unwrap_or_else(|| lead(head.as_deref()));
        }
    }

    /// Hits in key order: a search with filters only, or with exclusions
    /// only. Keyset pages, as on SQLite.
    fn in_key_order(
        &self,
        search: &Search,
        areas: Option<&Areas>,
        excluded: Option<&str>,
        resume: Option<&SearchResume>,
        limit: usize,
    ) -> Result<SearchPage> {
        let mut params = Params::default();
        let mut conditions = filters(search, areas, &mut params);
        if let Some(excluded) = excluded
            .map(Expr::parse)
            .transpose()?
            .and_then(|e| e.tsquery())
        {
            let excluded = params.bind(excluded);
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
                    version: None,
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
            ..SearchPage::default()
        })
    }
}

mod query;
mod snippet;
#[cfg(test)]
mod tests;
