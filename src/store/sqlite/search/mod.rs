//! Full-text search in SQL: running a search page (ranked hits with snippets, or filters in key order) over the index that `indexing` keeps; seeing areas, ranked as in an index of only their documents.
//!
//! A reader seeing areas ranks with [`rank::seeing`]: the rows of the areas
//! as a bitmap (cached per state of the database and set of areas) keep
//! the hits (`orchestra_sees(rowid)`, no document read) and give BM25 its
//! statistics, so that hits, order, scores, totals, the relaxed decision
//! and a long query's terms are those of a store of only those documents.

mod fields;
mod indexing;
mod snippet;
#[cfg(test)]
mod tests;

pub(super) use fields::fill as fill_fields;
pub(in crate::store) use fields::{pair_term, terms_of as field_terms};
pub(in crate::store) use indexing::body_start;
pub(super) use indexing::{
    IndexWrites, backfill, begin, commit, index, load, remove_fields, unindex,
};
pub use snippet::SNIPPET_CHARS;
pub(in crate::store) use snippet::{CLOSE, OPEN, clip};

use std::sync::Arc;

use anyhow::Result;
use rusqlite::params_from_iter;
use rusqlite::types::Value;

use super::{Reader, key_from_row, rank, successor};
use crate::access::Areas;
use crate::cursor::SearchResume;
use crate::doc::DocKey;
use crate::search::Search;
use crate::store::areas_sql;

/// The rows of a reader seeing areas.
struct Seen<'a> {
    areas: &'a Areas,
    rows: Arc<rank::Visible>,
}

impl Seen<'_> {
    /// Its rows, both kept and counted: a search not limited to a folder.
    fn everywhere(&self) -> rank::Seeing {
        rank::Seeing {
            stats: Some(Arc::clone(&self.rows)),
            keep: Arc::clone(&self.rows),
        }
    }
}

/// Runs `query` seeing `seeing` ([`rank::seeing`]), or as it is.
fn in_sight<T>(seeing: Option<&rank::Seeing>, query: impl FnOnce() -> T) -> T {
    match seeing {
        Some(seeing) => rank::seeing(seeing, query),
        None => query(),
    }
}

/// One hit of a search.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    pub key: DocKey,
    pub title: String,
    pub description: Option<String>,
    pub size: u64,
    /// About 200 characters around the best match, matched terms in `**`.
    pub snippet: String,
    /// Relevance, higher is better; 0 for hits listed in key order.
    pub score: f64,
    /// Its current version, when the caller asked for it
    /// (`Reader::versions_of`); searches leave it `None`.
    pub version: Option<u32>,
}

/// One page of a search.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SearchPage {
    pub hits: Vec<Hit>,
    /// Hits of the whole search, on every page: of the relaxed search when
    /// `relaxed`.
    pub total: u64,
    /// Where the next page starts, when there is one (a relaxed search's
    /// pages resume it: [`SearchResume::Relaxed`]).
    pub next: Option<SearchResume>,
    /// Whether no document matched all of the query's words, and the hits
    /// are the documents that hold any of them ([`Compiled::relaxed`](crate::search::Compiled::relaxed)).
    pub relaxed: bool,
    /// For a query of more than [`MAX_TERMS`](crate::search::MAX_TERMS)
    /// terms, the terms it was answered from
    /// ([`Compiled::used`](crate::search::Compiled::used)).
    pub terms: Option<Vec<String>>,
}

/// Tokens FTS5 puts in a snippet before it is clipped to [`SNIPPET_CHARS`].
const SNIPPET_TOKENS: i64 = 32;
/// How hits are ranked: BM25 with a match in the key or the title worth ten
/// times one in the body, one in the description five times (the weights of
/// the `rank` that migration 0004 configures for other SQLite clients), by
/// the function of [`rank`](super::rank).
const RANK: &str = "orchestra_bm25(10.0, 10.0, 5.0, 1.0)";
/// Hits a ranked page looks at past its end, to order ties there by key.
const TIE_SLACK: usize = 32;
/// A listing in key order walks the documents when its hits are at least
/// one in this many of them (else it reads the hits and sorts them).
const WALK_SHARE: i64 = 100;

/// A hit from the columns `prefix, id, title, description, size` of a row,
/// starting at column `first`; its snippet comes later.
fn hit_at(r: &rusqlite::Row<'_>, first: usize, score: f64) -> rusqlite::Result<Hit> {
    Ok(Hit {
        key: key_from_row(r.get_ref(first)?.as_str()?, r.get(first + 1)?)?,
        title: r.get(first + 2)?,
        description: r.get(first + 3)?,
        size: r.get::<_, i64>(first + 4)? as u64,
        snippet: String::new(),
        score,
        version: None,
    })
}

/// The first hits of a ranked search, chosen in the index alone.
#[derive(Default)]
struct Window {
    /// The hits with their rowids, best first, ties by key; `None` when
    /// ties at the end need every hit joined to its key.
    rows: Option<Vec<(i64, Hit)>>,
    /// The search's hits, when the ranking counted them.
    counted: Option<u64>,
}

/// The SQL conditions and their arguments shared by a page and its count.
struct Conditions {
    sql: String,
    args: Vec<Value>,
}

impl Conditions {
    fn new() -> Conditions {
        Conditions {
            sql: String::new(),
            args: Vec::new(),
        }
    }

    fn push(&mut self, sql: &str, args: impl IntoIterator<Item = Value>) {
        self.sql.push_str(" AND ");
        self.sql.push_str(sql);
        self.args.extend(args);
    }
}

/// How a condition on an index tests a document `d` of a listing in key
/// order.
#[derive(Clone, Copy)]
enum Test {
    /// The index's hits as one set, built once by SQLite (all of them, as
    /// many as there are), against which `d.rowid` is tested, or which
    /// drives the query.
    Set,
    /// One lookup in the index per document `d` that the query reaches: a
    /// walk in key order pays for the rows it walks, not for every hit
    /// (a set of 180k hits at 1M documents took 39 ms to build, the 116
    /// lookups of a page 1.2 ms).
    Probe,
}

/// `under`, the areas seen and `where`, on the documents aliased `d`:
/// `where` as `test` says. (A ranked search keeps its rows otherwise: see
/// [`Reader::ranked`].)
fn filters(search: &Search, areas: Option<&Areas>, test: Test) -> Conditions {
    let mut conditions = Conditions::new();
    if let Some(areas) = areas {
        let mut args = Vec::new();
        let sql = areas_sql(areas, "d.prefix", "d.id", |value| {
            args.push(Value::from(value));
            "?".to_string()
        });
        conditions.push(&sql, args);
    }
    if let Some(under) = &search.under {
        conditions.push(
            "d.prefix = ?",
            [Value::from(under.prefix.as_str().to_string())],
        );
        if let Some(folder) = &under.folder {
            conditions.push("d.id >= ?", [Value::from(folder.clone())]);
            if let Some(upper) = successor(folder) {
                conditions.push("d.id < ?", [Value::from(upper)]);
            }
        }
    }
    // One condition for all the filters: SQLite lets a virtual table skip
    // re-checking only its first 16 conditions, and beyond them MATCH fails.
    if let Some((docs, args)) = filtered_docs(search) {
        let condition = match test {
            Test::Set => format!("d.rowid IN ({docs})"),
            Test::Probe => format!("EXISTS ({docs} AND fields.rowid = d.rowid)"),
        };
        conditions.push(&condition, args);
    }
    conditions
}

/// The rowids of the documents that pass every `where` filter, as one
/// query on the fields' index and its arguments; `None` without filters.
fn filtered_docs(search: &Search) -> Option<(String, Vec<Value>)> {
    if search.filters.is_empty() {
        return None;
    }
    let pairs = search
        .filters
        .iter()
        .map(|filter| (filter.name.as_str(), filter.value.as_str()));
    Some((
        "SELECT rowid FROM fields WHERE fields MATCH ?".to_string(),
        vec![Value::from(fields::all_of(pairs))],
    ))
}

/// [`filters`] on `d`, and a query's exclusions: the conditions of a
/// listing in key order.
fn key_order_conditions(
    search: &Search,
    areas: Option<&Areas>,
    excluded: Option<&str>,
    test: Test,
) -> Conditions {
    let mut conditions = filters(search, areas, test);
    if let Some(excluded) = excluded {
        let condition = match test {
            Test::Set => {
                "d.rowid NOT IN (SELECT rowid FROM search WHERE search MATCH ?)".to_string()
            }
            Test::Probe => "NOT EXISTS (SELECT 1 FROM search WHERE search MATCH ? \
                 AND search.rowid = d.rowid)"
                .to_string(),
        };
        conditions.push(&condition, [Value::from(excluded.to_string())]);
    }
    conditions
}

impl Reader {
    /// One page of `search`: up to `limit` hits from `resume` on, and the
    /// number of hits in all. One read transaction, so page and total agree.
    pub fn search(
        &self,
        search: &Search,
        resume: Option<&SearchResume>,
        limit: usize,
    ) -> Result<SearchPage> {
        self.search_seeing(search, None, resume, limit)
    }

    /// [`Reader::search`] on a store that holds only the documents in
    /// `areas` (`None`: all): hits, their order and scores, totals, the
    /// relaxed decision and a long query's rarest terms are theirs. Ranked,
    /// the areas' rows are a set of rowids (see [`rank::seeing`]) that
    /// keeps the hits and gives BM25 its statistics, so that the window of
    /// hits is chosen in the index alone, as without areas. In key order,
    /// the areas are a condition on the documents.
    pub fn search_seeing(
        &self,
        search: &Search,
        areas: Option<&Areas>,
        resume: Option<&SearchResume>,
        limit: usize,
    ) -> Result<SearchPage> {
        self.in_transaction(|| self.search_in_transaction(search, areas, resume, limit))
    }

    fn search_in_transaction(
        &self,
        search: &Search,
        areas: Option<&Areas>,
        resume: Option<&SearchResume>,
        limit: usize,
    ) -> Result<SearchPage> {
        // Seeing everything is the store's own search.
        let areas = areas.filter(|areas| !areas.is_everything());
        let seen = match areas {
            Some(areas) => Some(Seen {
                areas,
                rows: rank::visible(&self.conn, &self.cache, areas)?,
            }),
            None => None,
        };
        let seen = seen.as_ref();
        let compiled = match search.is_long() {
            true => search.compile_selected(&self.term_documents(&search.terms(), seen)?),
            false => search.compile(),
        };
        let mut page = match (&compiled.matching, &compiled.relaxed, resume) {
            (_, Some(relaxed), Some(SearchResume::Relaxed(offset))) => {
                self.relaxed(search, seen, relaxed, *offset, limit)?
            }
            (Some(matching), relaxed, resume) => {
                let offset = match resume {
                    Some(SearchResume::Offset(offset) | SearchResume::Relaxed(offset)) => *offset,
                    // A key-order cursor cannot come from a search with
                    // words: its fingerprint would differ. Start over
                    // rather than fail.
                    _ => 0,
                };
                let page = self.ranked(search, seen, matching, offset, limit)?;
                match relaxed {
                    // Nothing holds every word: the first page of the
                    // relaxed search (a strict page's cursor stays strict).
                    Some(relaxed) if page.total == 0 && offset == 0 => {
                        let relaxed = self.relaxed(search, seen, relaxed, 0, limit)?;
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
    }

    /// A page of the relaxed search: `relaxed` ranked, its cursor marked so
    /// that the next page resumes it.
    fn relaxed(
        &self,
        search: &Search,
        seen: Option<&Seen<'_>>,
        relaxed: &str,
        offset: u64,
        limit: usize,
    ) -> Result<SearchPage> {
        let mut page = self.ranked(search, seen, relaxed, offset, limit)?;
        page.relaxed = true;
        page.next = page.next.map(|next| match next {
            SearchResume::Offset(offset) => SearchResume::Relaxed(offset),
            other => other,
        });
        Ok(page)
    }

    /// The number of documents that hold each of `terms` (FTS5 strings), in
    /// the whole index or the rows `seen`: counted by the rank function in
    /// one query of all of them (FTS5 counts each phrase's rows for its
    /// IDF; seeing areas, those among the rows seen), else one count per
    /// term.
    fn term_documents(&self, terms: &[String], seen: Option<&Seen<'_>>) -> Result<Vec<u64>> {
        if terms.is_empty() {
            return Ok(Vec::new());
        }
        let seeing = seen.map(Seen::everywhere);
        let sees = match seeing {
            Some(_) => " AND orchestra_sees(search.rowid)",
            None => "",
        };
        let any = terms.join(" OR ");
        let (first, counts) = in_sight(seeing.as_ref(), || {
            rank::phrase_rows(|| {
                self.conn
                    .prepare_cached(&format!(
                        "SELECT orchestra_bm25(search) FROM search WHERE search MATCH ?1{sees} LIMIT 1"
                    ))?
                    .query_map([&any], |r| r.get::<_, f64>(0))?
                    .collect::<rusqlite::Result<Vec<f64>>>()
            })
        });
        if first?.is_empty() {
            // No document holds any of them.
            return Ok(vec![0; terms.len()]);
        }
        if let Some(counts) = counts.filter(|counts| counts.len() == terms.len()) {
            return Ok(counts.into_iter().map(|n| n.max(0) as u64).collect());
        }
        let mut count = self.conn.prepare_cached(&format!(
            "SELECT count(*) FROM search WHERE search MATCH ?1{sees}"
        ))?;
        in_sight(seeing.as_ref(), || {
            terms
                .iter()
                .map(|term| Ok(count.query_row([term], |r| r.get::<_, i64>(0))? as u64))
                .collect()
        })
    }

    /// Hits by relevance (BM25 as configured in the index), ties by key.
    fn ranked(
        &self,
        search: &Search,
        seen: Option<&Seen<'_>>,
        matching: &str,
        offset: u64,
        limit: usize,
    ) -> Result<SearchPage> {
        let mut args = vec![Value::from(matching.to_string())];
        // The rows kept: those seen, under `under`, as a set of rowids
        // (see [`rank::seeing`]), so that no hit's document is read. A
        // search seeing everything ranks with the whole index's
        // statistics, one seeing areas with theirs.
        let visible = |areas: &Areas| rank::visible(&self.conn, &self.cache, areas);
        let keep = match (seen, &search.under) {
            (None, None) => None,
            (Some(seen), None) => Some(Arc::clone(&seen.rows)),
            (Some(seen), Some(under)) => Some(visible(&seen.areas.within(under))?),
            (None, Some(under)) => Some(visible(&Areas::from_areas([under.clone()]))?),
        };
        let seeing = keep.map(|keep| rank::Seeing {
            stats: seen.map(|seen| Arc::clone(&seen.rows)),
            keep,
        });
        let mut conditions = Conditions::new();
        if seeing.is_some() {
            conditions.push("orchestra_sees(search.rowid)", []);
        }
        if let Some((docs, docs_args)) = filtered_docs(search) {
            conditions.push(&format!("search.rowid IN ({docs})"), docs_args);
        }
        // Every hit ranked, counted as it is: no condition but the words
        // (and the rows seen, whose statistics rank).
        let every_hit = search.filters.is_empty() && search.under.is_none();
        args.extend(conditions.args.iter().cloned());
        let offset = usize::try_from(offset).unwrap_or(usize::MAX);
        // One row more than the page says whether another follows.
        let wanted = offset.saturating_add(limit).saturating_add(1);
        let (rows, total) = in_sight(seeing.as_ref(), || -> Result<_> {
            let window = self.ranked_window(&conditions.sql, &args, wanted, every_hit)?;
            let rows = match window.rows {
                Some(rows) => rows,
                None => self.ranked_joined(&conditions.sql, &args, wanted)?,
            };
            // Counted by the ranking, else a second pass over every hit.
            let total = match window.counted {
                Some(hits) => hits,
                None => self.count_ranked(&conditions.sql, &args)?,
            };
            Ok((rows, total))
        })?;
        let mut rows: Vec<(i64, Hit)> = rows.into_iter().skip(offset).collect();
        let next = (rows.len() > limit).then(|| SearchResume::Offset((offset + limit) as u64));
        rows.truncate(limit);
        // Snippets for the page only: computed in the ranking query, they
        // would cost one per hit of the whole search. Marked with control
        // characters first, so that a document's own `**` is not taken for
        // a match.
        let mut snippet = self.conn.prepare_cached(&format!(
            "SELECT snippet(search, 3, '{OPEN}', '{CLOSE}', '…', {SNIPPET_TOKENS}),
                    snippet(search, 2, '{OPEN}', '{CLOSE}', '…', {SNIPPET_TOKENS})
             FROM search WHERE search MATCH ?1 AND rowid = ?2"
        ))?;
        let mut hits = Vec::with_capacity(rows.len());
        for (rowid, mut hit) in rows {
            let (body, description): (Option<String>, Option<String>) = snippet
                .query_row(rusqlite::params![matching, rowid], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })?;
            let marked =
                |text: &Option<String>| text.as_deref().filter(|t| t.contains(OPEN)).map(clip);
            // The body around the match, else the description around it,
            // else (a match in the key or title) the start of the body.
            hit.snippet = match marked(&body).or_else(|| marked(&description)) {
                Some(snippet) => snippet,
                None => self.lead(rowid)?,
            };
            hits.push(hit);
        }
        Ok(SearchPage {
            hits,
            total,
            next,
            ..SearchPage::default()
        })
    }

    /// The hits of a ranked search, counted: `args` are the words' and the
    /// `conditions`'.
    fn count_ranked(&self, conditions: &str, args: &[Value]) -> Result<u64> {
        let total: i64 = self
            .conn
            .prepare_cached(&format!(
                "SELECT count(*) FROM search WHERE search MATCH ?{conditions}"
            ))?
            .query_row(params_from_iter(args.iter()), |r| r.get(0))?;
        Ok(total as u64)
    }

    /// The first `wanted` hits by rank, ties by key, chosen in the index
    /// alone: only the window's rows are read from the documents (joined
    /// before the LIMIT, every hit's row would be read: 50k reads for a word
    /// in half of 100k documents). `+rank` keeps FTS5 from sorting every hit
    /// itself; SQLite's sorter keeps only the window. The window goes
    /// [`TIE_SLACK`] rows past the page, so that hits of equal rank at its
    /// end can be put in key order; `None` when they run past even that
    /// (then [`Reader::ranked_joined`] answers).
    ///
    /// With `every_hit` (no condition but the words), the hits are counted
    /// as they are ranked, and a query of one phrase is ranked in one pass
    /// (see [`rank`]).
    fn ranked_window(
        &self,
        conditions: &str,
        args: &[Value],
        wanted: usize,
        every_hit: bool,
    ) -> Result<Window> {
        let window = wanted.saturating_add(TIE_SLACK);
        let mut args = args.to_vec();
        args.push(Value::from(i64::try_from(window).unwrap_or(i64::MAX)));
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT search.rowid, search.rank FROM search
             WHERE search MATCH ?{conditions} AND search.rank MATCH '{RANK}'
             ORDER BY +search.rank, search.rowid LIMIT ?"
        ))?;
        let mut run = || {
            stmt.query_map(params_from_iter(args.iter()), |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, f64>(1)?))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()
        };
        let (ranked, counted) = match every_hit {
            true => rank::ranking_every_hit(run),
            false => (run(), None),
        };
        // Scores, higher first: the same order as the ranks.
        let ranked: Vec<(i64, f64)> = ranked?
            .into_iter()
            .map(|(rowid, rank)| (rowid, counted.map_or(-rank, |c| c.score(rank))))
            .collect();
        let counted = counted.and_then(|c| u64::try_from(c.hits).ok());
        if ranked.len() == window && ranked.len() > wanted {
            // The last wanted row ties with the window's end: its equals
            // may lie beyond the window, and some of them sort before it.
            if ranked[wanted - 1].1 == ranked[window - 1].1 {
                return Ok(Window {
                    rows: None,
                    counted,
                });
            }
        }
        let mut document = self.conn.prepare_cached(
            "SELECT prefix, id, title, description, size FROM documents WHERE rowid = ?1",
        )?;
        let mut rows = Vec::with_capacity(ranked.len());
        for (rowid, score) in ranked {
            let hit = document.query_row([rowid], |r| hit_at(r, 0, score))?;
            rows.push((rowid, hit));
        }
        // Higher scores first, ties by key.
        rows.sort_by(|(_, a), (_, b)| b.score.total_cmp(&a.score).then_with(|| a.key.cmp(&b.key)));
        rows.truncate(wanted);
        Ok(Window {
            rows: Some(rows),
            counted,
        })
    }

    /// The first `wanted` hits by rank, ties by key, every hit joined to its
    /// document: for ties that a window cannot settle.
    fn ranked_joined(
        &self,
        conditions: &str,
        args: &[Value],
        wanted: usize,
    ) -> Result<Vec<(i64, Hit)>> {
        let mut args = args.to_vec();
        args.push(Value::from(i64::try_from(wanted).unwrap_or(i64::MAX)));
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT d.rowid, search.rank, d.prefix, d.id, d.title, d.description, d.size
             FROM search JOIN documents d ON d.rowid = search.rowid
             WHERE search MATCH ?{conditions} AND search.rank MATCH '{RANK}'
             ORDER BY +search.rank, d.prefix, d.id LIMIT ?"
        ))?;
        let rows = stmt
            .query_map(params_from_iter(args.iter()), |r| {
                Ok((r.get::<_, i64>(0)?, hit_at(r, 2, -r.get::<_, f64>(1)?)?))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    }

    /// Hits in key order: a search with filters only, or with exclusions only.
    fn in_key_order(
        &self,
        search: &Search,
        areas: Option<&Areas>,
        excluded: Option<&str>,
        resume: Option<&SearchResume>,
        limit: usize,
    ) -> Result<SearchPage> {
        let total = self.count_in_key_order(search, areas, excluded)?;
        // Hits that are a good share of the documents: walk the documents in
        // key order (the covering index) and look each up in the indexes:
        // about documents / hits lookups per hit of the page, whatever the
        // number of hits. Fewer hits: read each by rowid, then sort them.
        let documents: i64 = self
            .conn
            .prepare_cached("SELECT coalesce(max(rowid), 0) FROM documents")?
            .query_row([], |r| r.get(0))?;
        let walk = total.saturating_mul(WALK_SHARE) >= documents;
        let test = if walk { Test::Probe } else { Test::Set };
        let conditions = key_order_conditions(search, areas, excluded, test);
        let (prefix, id) = match resume {
            Some(SearchResume::After(key)) => (key.prefix.as_str(), key.id.as_str()),
            _ => ("", ""),
        };
        let mut args = vec![Value::from(prefix.to_string()), Value::from(id.to_string())];
        // Under one prefix, SQLite seeks the index by `prefix = ?` alone and
        // reads the row comparison row by row: a page deep in a prefix of
        // 300k documents walked 290k of them first (49 ms, 5 ms with this).
        let after_id = match &search.under {
            Some(under) if under.prefix.as_str() == prefix => {
                args.push(Value::from(id.to_string()));
                " AND d.id > ?"
            }
            _ => "",
        };
        args.extend(conditions.args.iter().cloned());
        args.push(Value::from(limit as i64 + 1));
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT d.rowid, d.prefix, d.id, d.title, d.description, d.size FROM documents d
             WHERE (d.prefix, d.id) > (?, ?){after_id}{} ORDER BY d.prefix, d.id LIMIT ?",
            conditions.sql
        ))?;
        let mut rows = stmt
            .query_map(params_from_iter(args.iter()), |r| {
                Ok((r.get::<_, i64>(0)?, hit_at(r, 1, 0.0)?))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let next = if rows.len() > limit {
            rows.truncate(limit);
            rows.last()
                .map(|(_, hit)| SearchResume::After(hit.key.clone()))
        } else {
            None
        };
        let mut hits = Vec::with_capacity(rows.len());
        for (rowid, mut hit) in rows {
            hit.snippet = self.lead(rowid)?;
            hits.push(hit);
        }
        Ok(SearchPage {
            hits,
            total: total as u64,
            next,
            ..SearchPage::default()
        })
    }

    /// The number of hits of a search in key order. Filters alone are
    /// counted in the fields' index, without reading a document; one filter
    /// is its term's number of rows there.
    fn count_in_key_order(
        &self,
        search: &Search,
        areas: Option<&Areas>,
        excluded: Option<&str>,
    ) -> Result<i64> {
        if search.under.is_none() && areas.is_none() && excluded.is_none() {
            if let [filter] = search.filters.as_slice() {
                return fields::count(&self.conn, &filter.name, &filter.value);
            }
            if let Some((docs, args)) = filtered_docs(search) {
                return Ok(self
                    .conn
                    .prepare_cached(&format!("SELECT count(*) FROM ({docs})"))?
                    .query_row(params_from_iter(args.iter()), |r| r.get(0))?);
            }
        }
        let conditions = key_order_conditions(search, areas, excluded, Test::Set);
        Ok(self
            .conn
            .prepare_cached(&format!(
                "SELECT count(*) FROM documents d WHERE 1{}",
                conditions.sql
            ))?
            .query_row(params_from_iter(conditions.args.iter()), |r| r.get(0))?)
    }

    /// The start of a document's Markdown, past its frontmatter, clipped
    /// like a snippet. Empty for a binary document.
    fn lead(&self, rowid: i64) -> Result<String> {
        // Enough bytes for the snippet, even with long runs of whitespace.
        let head: Option<Vec<u8>> = self
            .conn
            .prepare_cached(
                "SELECT CASE WHEN is_text THEN substr(body, body_start + 1, 2048) END
                 FROM documents WHERE rowid = ?1",
            )?
            .query_row([rowid], |r| r.get(0))?;
        let Some(head) = head else {
            return Ok(String::new());
        };
        let text = String::from_utf8_lossy(&head);
        // The cut may have split the last character.
        Ok(clip(text.trim_end_matches('\u{FFFD}')))
    }
}
