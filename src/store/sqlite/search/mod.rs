//! Full-text search in SQL: running a search page (ranked hits with snippets, or filters in key order) over the index that `indexing` keeps.

mod fields;
mod indexing;

pub(super) use fields::fill as fill_fields;
pub(in crate::store) use fields::{pair_term, terms_of as field_terms};
pub(in crate::store) use indexing::body_start;
pub(super) use indexing::{
    IndexWrites, backfill, begin, commit, index, load, remove_fields, unindex,
};

use anyhow::Result;
use rusqlite::params_from_iter;
use rusqlite::types::Value;

use super::{Reader, key_from_row, successor};
use crate::cursor::SearchResume;
use crate::doc::DocKey;
use crate::search::Search;

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
}

/// One page of a search.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchPage {
    pub hits: Vec<Hit>,
    /// Hits of the whole search, on every page.
    pub total: u64,
    /// Where the next page starts, when there is one.
    pub next: Option<SearchResume>,
}

/// Characters a snippet keeps around the best match.
pub const SNIPPET_CHARS: usize = 200;
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
    })
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

/// How a condition on the index tests a row.
#[derive(Clone, Copy)]
enum Test<'a> {
    /// The index's hits as one set, built once by SQLite (all of them, as
    /// many as there are), against which the rowid column named here is
    /// tested, or which drives the query.
    Set(&'a str),
    /// One lookup in the index per document `d` that the query reaches: a
    /// walk in key order pays for the rows it walks, not for every hit
    /// (a set of 180k hits at 1M documents took 39 ms to build, the 116
    /// lookups of a page 1.2 ms).
    Probe,
}

/// `under` and `where`: `under` on the documents aliased `d`, `where` as
/// `test` says (on a rowid column, so that a search without `under` need
/// not read the documents of every hit).
fn filters(search: &Search, test: Test<'_>) -> Conditions {
    let mut conditions = Conditions::new();
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
            Test::Set(rowid) => format!("{rowid} IN ({docs})"),
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
fn key_order_conditions(search: &Search, excluded: Option<&str>, test: Test<'_>) -> Conditions {
    let mut conditions = filters(search, test);
    if let Some(excluded) = excluded {
        let condition = match test {
            Test::Set(rowid) => {
                format!("{rowid} NOT IN (SELECT rowid FROM search WHERE search MATCH ?)")
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
        self.in_transaction(|| self.search_in_transaction(search, resume, limit))
    }

    fn search_in_transaction(
        &self,
        search: &Search,
        resume: Option<&SearchResume>,
        limit: usize,
    ) -> Result<SearchPage> {
        let compiled = search.compile();
        match compiled.matching {
            Some(matching) => self.ranked(search, &matching, resume, limit),
            None => self.in_key_order(search, compiled.excluded.as_deref(), resume, limit),
        }
    }

    /// Hits by relevance (BM25 as configured in the index), ties by key.
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
        let mut args = vec![Value::from(matching.to_string())];
        let conditions = filters(search, Test::Set("search.rowid"));
        // Counting needs the documents only to apply `under`.
        let from = match search.under {
            Some(_) => "search JOIN documents d ON d.rowid = search.rowid",
            None => "search",
        };
        let total: i64 = self
            .conn
            .prepare_cached(&format!(
                "SELECT count(*) FROM {from} WHERE search MATCH ?{}",
                conditions.sql
            ))?
            .query_row(
                params_from_iter(args.iter().chain(conditions.args.iter())),
                |r| r.get(0),
            )?;
        args.extend(conditions.args.iter().cloned());
        let offset = usize::try_from(offset).unwrap_or(usize::MAX);
        // One row more than the page says whether another follows.
        let wanted = offset.saturating_add(limit).saturating_add(1);
        let mut rows = match search.under {
            None => self.ranked_window(&conditions.sql, &args, wanted)?,
            Some(_) => None,
        };
        if rows.is_none() {
            rows = Some(self.ranked_joined(&conditions.sql, &args, wanted)?);
        }
        let mut rows: Vec<(i64, Hit)> = rows.unwrap_or_default().into_iter().skip(offset).collect();
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
            total: total as u64,
            next,
        })
    }

    /// The first `wanted` hits by rank, ties by key, chosen in the index
    /// alone: only the window's rows are read from the documents (joined
    /// before the LIMIT, every hit's row would be read: 50k reads for a word
    /// in half of 100k documents). `+rank` keeps FTS5 from sorting every hit
    /// itself; SQLite's sorter keeps only the window. The window goes
    /// [`TIE_SLACK`] rows past the page, so that hits of equal rank at its
    /// end can be put in key order; `None` when they run past even that
    /// (then [`Reader::ranked_joined`] answers).
    fn ranked_window(
        &self,
        conditions: &str,
        args: &[Value],
        wanted: usize,
    ) -> Result<Option<Vec<(i64, Hit)>>> {
        let window = wanted.saturating_add(TIE_SLACK);
        let mut args = args.to_vec();
        args.push(Value::from(i64::try_from(window).unwrap_or(i64::MAX)));
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT search.rowid, search.rank FROM search
             WHERE search MATCH ?{conditions} AND search.rank MATCH '{RANK}'
             ORDER BY +search.rank, search.rowid LIMIT ?"
        ))?;
        let ranked = stmt
            .query_map(params_from_iter(args.iter()), |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, f64>(1)?))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        if ranked.len() == window && ranked.len() > wanted {
            // The last wanted row ties with the window's end: its equals
            // may lie beyond the window, and some of them sort before it.
            if ranked[wanted - 1].1 == ranked[window - 1].1 {
                return Ok(None);
            }
        }
        let mut document = self.conn.prepare_cached(
            "SELECT prefix, id, title, description, size FROM documents WHERE rowid = ?1",
        )?;
        let mut rows = Vec::with_capacity(ranked.len());
        for (rowid, rank) in ranked {
            let hit = document.query_row([rowid], |r| hit_at(r, 0, -rank))?;
            rows.push((rowid, hit));
        }
        // Higher scores first, ties by key.
        rows.sort_by(|(_, a), (_, b)| b.score.total_cmp(&a.score).then_with(|| a.key.cmp(&b.key)));
        rows.truncate(wanted);
        Ok(Some(rows))
    }

    /// The first `wanted` hits by rank, ties by key, every hit joined to its
    /// document: for `under` (a condition on the key) and for ties that a
    /// window cannot settle.
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
        excluded: Option<&str>,
        resume: Option<&SearchResume>,
        limit: usize,
    ) -> Result<SearchPage> {
        let total = self.count_in_key_order(search, excluded)?;
        // Hits that are a good share of the documents: walk the documents in
        // key order (the covering index) and look each up in the indexes:
        // about documents / hits lookups per hit of the page, whatever the
        // number of hits. Fewer hits: read each by rowid, then sort them.
        let documents: i64 = self
            .conn
            .prepare_cached("SELECT coalesce(max(rowid), 0) FROM documents")?
            .query_row([], |r| r.get(0))?;
        let walk = total.saturating_mul(WALK_SHARE) >= documents;
        let test = if walk {
            Test::Probe
        } else {
            Test::Set("d.rowid")
        };
        let conditions = key_order_conditions(search, excluded, test);
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
        })
    }

    /// The number of hits of a search in key order. Filters alone are
    /// counted in the fields' index, without reading a document; one filter
    /// is its term's number of rows there.
    fn count_in_key_order(&self, search: &Search, excluded: Option<&str>) -> Result<i64> {
        if search.under.is_none()
            && excluded.is_none()
            && let [filter] = search.filters.as_slice()
        {
            return fields::count(&self.conn, &filter.name, &filter.value);
        }
        if search.under.is_none()
            && excluded.is_none()
            && let Some((docs, args)) = filtered_docs(search)
        {
            return Ok(self
                .conn
                .prepare_cached(&format!("SELECT count(*) FROM ({docs})"))?
                .query_row(params_from_iter(args.iter()), |r| r.get(0))?);
        }
        let conditions = key_order_conditions(search, excluded, Test::Set("d.rowid"));
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

/// Where FTS5 marks a match in a snippet, before the marks become `**`:
/// control characters, so that a document's own `**` is never taken for one.
pub(in crate::store) const OPEN: char = '\u{2}';
pub(in crate::store) const CLOSE: char = '\u{3}';
/// Characters of context a snippet keeps before its first match.
const CONTEXT_BEFORE: usize = 60;

/// One line of at most about [`SNIPPET_CHARS`] characters, whitespace runs
/// made one space. When `text` holds marked matches, the line starts a few
/// words before the first one, so the match is always shown; a cut never
/// leaves a mark open. The marks become `**`.
pub(in crate::store) fn clip(text: &str) -> String {
    let words: Vec<&str> = text.split_whitespace().collect();
    let first = words.iter().position(|w| w.contains(OPEN)).unwrap_or(0);
    let mut start = first;
    let mut before = 0;
    while start > 0 && before + words[start - 1].chars().count() < CONTEXT_BEFORE {
        start -= 1;
        before += words[start].chars().count() + 1;
    }
    let mut line = String::with_capacity(SNIPPET_CHARS * 2);
    if start > 0 && !words[start].starts_with('…') {
        line.push('…');
    }
    // Characters as shown: a mark becomes `**`, and a cut may add one.
    let shown = |c: char| if c == OPEN || c == CLOSE { 2 } else { 1 };
    let budget = SNIPPET_CHARS - 2;
    let mut chars = 0;
    let mut clipped = false;
    for (i, word) in words.iter().enumerate().skip(start) {
        let len: usize = word.chars().map(shown).sum();
        // The word of the first match is shown, cut if it must be.
        if chars > 0 && chars + 1 + len > budget && i != first {
            clipped = true;
            break;
        }
        if chars > 0 {
            line.push(' ');
            chars += 1;
        }
        if chars + len > budget {
            for c in word.chars() {
                if chars + shown(c) > budget {
                    break;
                }
                line.push(c);
                chars += shown(c);
            }
            clipped = true;
            break;
        }
        line.push_str(word);
        chars += len;
    }
    if line.matches(OPEN).count() > line.matches(CLOSE).count() {
        line.push(CLOSE);
    }
    if clipped && !line.ends_with('…') {
        line.push('…');
    }
    line.replace([OPEN, CLOSE], "**")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::Prefix;
    use crate::search::{Filter, Under};
    use crate::store::sqlite::Store;
    use crate::store::{FileStat, NewDocument};

    fn doc(key: &str, title: &str, frontmatter: Option<&str>, body: &[u8]) -> NewDocument {
        let (prefix, id) = key.split_once('/').unwrap();
        NewDocument::new(
            DocKey::new(Prefix::parse(prefix).unwrap(), id),
            FileStat {
                size: body.len() as u64,
                mtime_ns: 1,
                hash: *blake3::hash(body).as_bytes(),
            },
            std::str::from_utf8(body).is_ok(),
            title.to_string(),
            None,
            frontmatter.map(str::to_string),
            body.to_vec(),
        )
    }

    fn import(store: &Store, docs: &[NewDocument], removed: &[&str]) {
        let tx = store.begin_import("/p", false).unwrap();
        for d in docs {
            tx.put(d).unwrap();
        }
        for key in removed {
            let (prefix, id) = key.split_once('/').unwrap();
            tx.remove(&DocKey::new(Prefix::parse(prefix).unwrap(), id))
                .unwrap();
        }
        tx.commit(true).unwrap();
    }

    /// The keys of every hit, following the cursors, and the total.
    fn keys(store: &Store, query: &str, under: Option<&str>, filters: &[&str]) -> Vec<String> {
        let search = Search::new(
            query,
            under.map(|u| Under::parse(u).unwrap()),
            filters.iter().map(|f| Filter::parse(f).unwrap()).collect(),
        )
        .unwrap();
        let reader = store.reader().unwrap();
        let mut keys = Vec::new();
        let mut resume = None;
        loop {
            let page = reader.search(&search, resume.as_ref(), 2).unwrap();
            keys.extend(page.hits.iter().map(|h| h.key.to_string()));
            assert!(page.total as usize >= keys.len());
            match page.next {
                Some(next) => resume = Some(next),
                None => {
                    assert_eq!(page.total as usize, keys.len(), "{query:?}: total");
                    return keys;
                }
            }
        }
    }

    fn integrity(store: &Store) {
        let reader = store.reader().unwrap();
        reader
            .conn
            .execute(
                "INSERT INTO search (search, rank) VALUES ('integrity-check', 1)",
                [],
            )
            .unwrap();
    }

    #[test]
    fn finds_what_the_documents_hold() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_or_create(&dir.path().join("db")).unwrap();
        let docs = [
            doc(
                "features/FEAT-0012",
                "Login code",
                Some(r#"{"status":"open","tags":["sync","offline"],"points":3,"done":false}"#),
                b"---\nstatus: open\n---\nThe login code is sent by mail. Sign in with it.",
            ),
            doc(
                "features/FEAT-0013",
                "Café Résumé",
                Some(r#"{"status":"closed","tags":["sync"]}"#),
                b"A draft about the C++ port, v2.1, and foo.bar syncing.",
            ),
            doc(
                "docs/adr/0006",
                "Sync protocol",
                Some(r#"{"status":"open"}"#),
                b"We sign documents in batches. See FEAT-0012.",
            ),
            doc("docs/adrs", "Not under docs/adr", None, b"signin and login"),
            doc(
                "notes/blob",
                "Binary zebra",
                None,
                b"\xff\xfe zebra-in-body",
            ),
        ];
        import(&store, &docs, &[]);
        integrity(&store);
        let check = |query: &str, under: Option<&str>, filters: &[&str], expected: &[&str]| {
            assert_eq!(
                keys(&store, query, under, filters),
                expected,
                "{query:?} {under:?} {filters:?}"
            );
        };
        check("login code", None, &[], &["features/FEAT-0012"]);
        check("cafe resume", None, &[], &["features/FEAT-0013"]);
        check("CAFÉ", None, &[], &["features/FEAT-0013"]);
        check("\"sign in\"", None, &[], &["features/FEAT-0012"]);
        check("sync*", None, &[], &["docs/adr/0006", "features/FEAT-0013"]);
        check(
            "login OR signin",
            None,
            &[],
            &["docs/adrs", "features/FEAT-0012"],
        );
        check("login -draft -signin", None, &[], &["features/FEAT-0012"]);
        // The id ranks first, then a document that mentions it.
        check(
            "FEAT-0012",
            None,
            &[],
            &["features/FEAT-0012", "docs/adr/0006"],
        );
        check(
            "orchestra://features/FEAT-0012",
            None,
            &[],
            &["features/FEAT-0012"],
        );
        check("C++", None, &[], &["features/FEAT-0013"]);
        check("v2.1 foo.bar", None, &[], &["features/FEAT-0013"]);
        // A binary document: found by its title and key, not its bytes.
        check("zebra", None, &[], &["notes/blob"]);
        check("body", None, &[], &[]);
        check("sign*", Some("docs/adr"), &[], &["docs/adr/0006"]);
        check("", Some("docs/adr"), &[], &["docs/adr/0006"]);
        check("", Some("docs"), &[], &["docs/adr/0006", "docs/adrs"]);
        check(
            "",
            None,
            &["status=open"],
            &["docs/adr/0006", "features/FEAT-0012"],
        );
        check(
            "",
            None,
            &["tags=sync"],
            &["features/FEAT-0012", "features/FEAT-0013"],
        );
        check(
            "",
            None,
            &["tags=sync", "status=open"],
            &["features/FEAT-0012"],
        );
        check(
            "",
            None,
            &["points=3", "done=false"],
            &["features/FEAT-0012"],
        );
        check("", None, &["status=Open"], &[]);
        check("sync*", None, &["status=open"], &["docs/adr/0006"]);
        check("-sync*", Some("features"), &[], &["features/FEAT-0012"]);
        let every = [
            "docs/adr/0006",
            "docs/adrs",
            "features/FEAT-0012",
            "features/FEAT-0013",
            "notes/blob",
        ];
        check("", None, &[], &every);
        check("AND NOT NEAR(", None, &[], &[]);
        check(") \" * -", None, &[], &every);

        // Incremental: new words found, old ones gone, removed never a hit.
        let changed = [doc(
            "features/FEAT-0012",
            "Passkeys",
            Some(r#"{"status":"closed"}"#),
            b"Passkeys replace the mailed code.",
        )];
        import(&store, &changed, &["docs/adr/0006"]);
        integrity(&store);
        check("passkeys", None, &[], &["features/FEAT-0012"]);
        check("login", None, &[], &["docs/adrs"]);
        check("batches", None, &[], &[]);
        check("", None, &["status=open"], &[]);
        check(
            "",
            None,
            &["status=closed"],
            &["features/FEAT-0012", "features/FEAT-0013"],
        );
    }

    /// Listings in key order, page by page (2 hits a page), and their
    /// totals, against the documents filtered here: many hits (the walk
    /// that looks each document up in the indexes), few (the set of hits
    /// read and sorted), under one prefix or folder, resumed deep inside it;
    /// after a load, then after imports that change and remove documents
    /// (the deleted rows that a filter's count must leave out).
    #[test]
    fn listings_in_key_order_walk_or_sort_and_resume_inside_a_prefix() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_or_create(&dir.path().join("db")).unwrap();
        let statuses = ["open", "closed", "draft"];
        let key_of = |i: usize| match i % 3 {
            0 => format!("features/F-{i:03}"),
            1 => format!("notes/N-{i:03}"),
            _ => format!("docs/guide/G-{i:03}"),
        };
        // (key, status, has the word "alpha"), of the documents stored.
        let mut facts: Vec<(String, &str, bool)> = Vec::new();
        for round in 0..3 {
            let mut docs = Vec::new();
            let mut removed = Vec::new();
            for i in 0..300 {
                let key = key_of(i);
                // One document in 300 is `rare`: under 1% of them.
                let status = match (round, i) {
                    (_, 152) => "rare",
                    (0, _) => statuses[i % 7 % 3],
                    _ if i % 4 == round => statuses[(i + round) % 3],
                    _ => continue,
                };
                if round > 0 && i % 10 == round && i != 152 {
                    removed.push(key.clone());
                    facts.retain(|(k, _, _)| *k != key);
                    continue;
                }
                let alpha = (i + round) % 5 == 0;
                let body = if alpha { "alpha beta" } else { "beta" };
                docs.push(doc(
                    &key,
                    "Title",
                    Some(&format!(r#"{{"status":"{status}"}}"#)),
                    body.as_bytes(),
                ));
                facts.retain(|(k, _, _)| *k != key);
                facts.push((key, status, alpha));
            }
            let removed: Vec<&str> = removed.iter().map(String::as_str).collect();
            import(&store, &docs, &removed);
            let cases: &[(&str, Option<&str>, &[&str])] = &[
                ("", None, &["status=open"]),
                ("", None, &["status=rare"]),
                ("", None, &["status=draft"]),
                ("", Some("features"), &["status=open"]),
                ("", Some("notes"), &["status=closed"]),
                ("", Some("docs/guide"), &["status=draft"]),
                ("", Some("docs"), &["status=rare"]),
                ("", Some("features"), &[]),
                ("-alpha", None, &[]),
                ("-alpha", Some("notes"), &["status=open"]),
            ];
            for (query, under, filters) in cases {
                let mut expected: Vec<String> = facts
                    .iter()
                    .filter(|(key, status, alpha)| {
                        under.is_none_or(|u| key.starts_with(&format!("{u}/")))
                            && filters
                                .iter()
                                .all(|f| f.strip_prefix("status=") == Some(status))
                            && !(query.contains("-alpha") && *alpha)
                    })
                    .map(|(key, _, _)| key.clone())
                    .collect();
                expected.sort();
                let case = format!("round {round}: {query:?} {under:?} {filters:?}");
                assert!(!expected.is_empty(), "{case}");
                // `keys` also checks the total against the hits it paged.
                assert_eq!(keys(&store, query, *under, filters), expected, "{case}");
            }
        }
    }

    /// The keys of the documents whose row in `fields` has the pair
    /// (`?` for a row without a document), and the number of rows.
    fn with_pair(store: &Store, name: &str, value: &str) -> (Vec<String>, i64) {
        let reader = store.reader().unwrap();
        let keys = reader
            .conn
            .prepare(
                "SELECT coalesce(d.prefix || '/' || d.id, '?')
                 FROM fields f LEFT JOIN documents d ON d.rowid = f.rowid
                 WHERE fields MATCH ?1 ORDER BY 1",
            )
            .unwrap()
            .query_map([fields::all_of([(name, value)].into_iter())], |r| r.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        let rows = reader
            .conn
            .query_row("SELECT count(*) FROM fields_docsize", [], |r| r.get(0))
            .unwrap();
        (keys, rows)
    }

    #[test]
    fn fields_hold_the_pairs_of_the_current_documents_and_no_other() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_or_create(&dir.path().join("db")).unwrap();
        let check = |pairs: &[(&str, &str, &[&str])], rows: i64| {
            for (name, value, keys) in pairs {
                assert_eq!(
                    with_pair(&store, name, value),
                    (keys.iter().map(|k| k.to_string()).collect(), rows),
                    "{name}={value}"
                );
            }
            store
                .reader()
                .unwrap()
                .conn
                .execute_batch("INSERT INTO fields (fields, rank) VALUES ('integrity-check', 0)")
                .unwrap();
        };
        // A load rolled back leaves nothing for the next one.
        let tx = store.begin_import("/p", false).unwrap();
        tx.put(&doc("notes/gone", "G", Some(r#"{"k":"lost"}"#), b"x"))
            .unwrap();
        drop(tx);
        import(
            &store,
            &[
                doc(
                    "notes/a",
                    "A",
                    Some(r#"{"k":"v","tags":["x","y","x"]}"#),
                    b"a",
                ),
                doc("notes/b", "B", Some(r#"{"k":"w","n":3}"#), b"b"),
                doc("notes/c", "C", None, b"c"),
            ],
            &[],
        );
        check(
            &[
                ("k", "v", &["notes/a"]),
                ("tags", "x", &["notes/a"]),
                ("tags", "y", &["notes/a"]),
                ("k", "w", &["notes/b"]),
                ("n", "3", &["notes/b"]),
                ("k", "lost", &[]),
                ("K", "v", &[]),
                ("k", "V", &[]),
                ("tags", "x y", &[]),
            ],
            2,
        );
        // Replaced, removed (the last rowid, which SQLite gives again), new,
        // and unchanged fields under a new body.
        import(
            &store,
            &[
                doc("notes/a", "A", Some(r#"{"k":"w","tags":["y"]}"#), b"a2"),
                doc("notes/d", "D", Some(r#"{"n":4}"#), b"d"),
            ],
            &["notes/c", "notes/b"],
        );
        check(
            &[
                ("k", "v", &[]),
                ("k", "w", &["notes/a"]),
                ("tags", "x", &[]),
                ("tags", "y", &["notes/a"]),
                ("n", "3", &[]),
                ("n", "4", &["notes/d"]),
            ],
            2,
        );
        import(
            &store,
            &[doc(
                "notes/a",
                "A",
                Some(r#"{"k":"w","tags":["y"]}"#),
                b"a3",
            )],
            &["notes/d"],
        );
        check(&[("k", "w", &["notes/a"]), ("n", "4", &[])], 1);
        assert_eq!(keys(&store, "", None, &["k=w"]), ["notes/a"]);
        assert_eq!(keys(&store, "", None, &["k=w", "tags=y"]), ["notes/a"]);
        assert!(keys(&store, "", None, &["k=w", "tags=x"]).is_empty());
        assert!(keys(&store, "", None, &["k=lost"]).is_empty());
    }

    #[test]
    fn ties_go_by_key_on_every_page() {
        for copies in [10, TIE_SLACK * 2] {
            let dir = tempfile::tempdir().unwrap();
            let store = Store::open_or_create(&dir.path().join("db")).unwrap();
            // Inserted in reverse: rowid order is the opposite of key order.
            let docs: Vec<NewDocument> = (0..copies)
                .rev()
                .map(|i| doc(&format!("notes/n{i:03}"), "Same", None, b"equal words"))
                .collect();
            let mut all = docs.clone();
            all.push(doc("notes/zz-better", "Equal", None, b"equal words"));
            import(&store, &all, &[]);
            let mut expected: Vec<String> = docs.iter().map(|d| d.key.to_string()).collect();
            expected.sort();
            // The title match ranks first, then the ties in key order.
            expected.insert(0, "notes/zz-better".to_string());
            assert_eq!(
                keys(&store, "equal", None, &[]),
                expected,
                "{copies} copies"
            );
        }
    }

    #[test]
    fn snippets_mark_the_match() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_or_create(&dir.path().join("db")).unwrap();
        let long = format!(
            "---\ntitle: x\n---\n{} needle {}",
            "hay ".repeat(200),
            "stack ".repeat(200)
        );
        import(
            &store,
            &[doc("notes/a", "A title", Some("{}"), long.as_bytes())],
            &[],
        );
        let reader = store.reader().unwrap();
        let page = reader
            .search(&Search::new("needle", None, vec![]).unwrap(), None, 20)
            .unwrap();
        let snippet = &page.hits[0].snippet;
        assert!(snippet.contains("**needle**"), "{snippet}");
        assert!(snippet.chars().count() <= SNIPPET_CHARS + 2, "{snippet}");
        assert!(page.hits[0].score > 0.0);
        // A title hit shows the start of the body, past the frontmatter.
        let page = reader
            .search(&Search::new("title", None, vec![]).unwrap(), None, 20)
            .unwrap();
        assert!(
            page.hits[0].snippet.starts_with("hay hay"),
            "{}",
            page.hits[0].snippet
        );
    }

    #[test]
    fn clips_to_one_short_line() {
        assert_eq!(clip("  a\n\n b\tc "), "a b c");
        let long = "word ".repeat(100);
        let clipped = clip(&long);
        assert!(clipped.chars().count() <= SNIPPET_CHARS + 1, "{clipped}");
        // Marks count as the `**` they become.
        let marked = "\u{2}word\u{3} ".repeat(100);
        let clipped = clip(&marked);
        assert!(clipped.chars().count() <= SNIPPET_CHARS + 1, "{clipped}");
        assert!(clipped.ends_with('…'));
        // The match is kept, with some context before it, however late.
        let late = format!("{} \u{2}needle\u{3} tail", "hay ".repeat(100));
        let clipped = clip(&late);
        assert!(clipped.starts_with("…hay hay"), "{clipped}");
        assert!(clipped.ends_with("**needle** tail"), "{clipped}");
        assert!(clipped.chars().count() < 90, "{clipped}");
        // A cut never leaves a match open; a document's own ** is text.
        let open = format!("**bold** {} \u{2}{}\u{3}", "x".repeat(50), "y".repeat(300));
        let clipped = clip(&open);
        assert_eq!(clipped.matches("**").count(), 4, "{clipped}");
        assert!(clipped.contains("**yyy"), "{clipped}");
        assert!(clipped.chars().count() <= SNIPPET_CHARS + 4, "{clipped}");
        assert_eq!(clip("a \u{2}b\u{3} c"), "a **b** c");
        let word = clip(&"é".repeat(300));
        assert!(word.ends_with("é…"), "{word}");
        assert!(word.chars().count() <= SNIPPET_CHARS + 1, "{word}");
    }

    /// Every hit's score by the rank function and by FTS5's own `bm25()`
    /// (the `rank` migration 0004 configures, same weights), by rowid.
    fn scores(conn: &rusqlite::Connection, query: &str) -> Vec<(i64, f64, f64)> {
        let ranked = |extra: &str| -> Vec<(i64, f64)> {
            conn.prepare(&format!(
                "SELECT rowid, rank FROM search WHERE search MATCH ?1 {extra} ORDER BY rowid"
            ))
            .unwrap()
            .query_map([query], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<rusqlite::Result<Vec<_>>>()
            .unwrap()
        };
        let ours = ranked(&format!("AND rank MATCH '{RANK}'"));
        let fts5 = ranked("");
        assert_eq!(ours.len(), fts5.len(), "{query}: hits");
        assert!(!ours.is_empty(), "{query}: no hit");
        ours.into_iter()
            .zip(fts5)
            .map(|((rowid, a), (other, b))| {
                assert_eq!(rowid, other);
                (rowid, a, b)
            })
            .collect()
    }

    fn assert_same_scores(conn: &rusqlite::Connection, queries: &[&str]) {
        for query in queries {
            for (rowid, ours, fts5) in scores(conn, query) {
                assert!(
                    (ours - fts5).abs() <= 1e-12 * fts5.abs().max(1.0),
                    "{query}, row {rowid}: {ours}, FTS5's bm25() {fts5}"
                );
            }
        }
    }

    #[test]
    fn ranks_as_fts5_bm25_with_and_without_the_lengths_in_memory() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_or_create(&dir.path().join("db")).unwrap();
        // Lengths from 3 to ~100 tokens; `common` in every document and in
        // the title of some, `rare` in one, `twice` twice in some bodies.
        let docs: Vec<_> = (0..48)
            .map(|i| {
                let body = format!(
                    "common {}{}{}",
                    "filler ".repeat(i * 2),
                    if i % 5 == 0 { "twice twice " } else { "" },
                    if i == 7 { "rare word" } else { "" }
                );
                let title = if i % 3 == 0 {
                    "Common title"
                } else {
                    "Other title"
                };
                doc(&format!("notes/n{i:02}"), title, None, body.as_bytes())
            })
            .collect();
        import(&store, &docs, &[]);
        // A rare word first: too few hits to read every length, each hit
        // asks FTS5. A common word then reads them all; the rare word, asked
        // again, uses them.
        let queries = [
            "rare",
            "common",
            "rare",
            "common twice",
            "\"rare word\"",
            "commo*",
            "twice OR rare",
            "common NOT twice",
            "title",
        ];
        let in_read_transaction = |store: &Store| {
            let reader = store.reader().unwrap();
            reader
                .in_transaction(|| {
                    assert_same_scores(&reader.conn, &queries);
                    Ok(())
                })
                .unwrap();
        };
        in_read_transaction(&store);
        // A re-import changes lengths and rows: nothing stale is used.
        let longer = doc(
            "notes/n01",
            "Common title",
            None,
            "common rare twice ".repeat(40).as_bytes(),
        );
        import(&store, &[longer], &["notes/n02", "notes/n03"]);
        in_read_transaction(&store);
        // In a write transaction that indexed one row again, shorter (same
        // rows, same sequence number): the lengths in memory are stale
        // there, FTS5's are used.
        let tx = store.begin_import("/p", false).unwrap();
        tx.conn
            .execute_batch(
                "INSERT INTO search (search, rowid, key, title, description, body)
                     SELECT 'delete', rowid, key, title, description, body
                     FROM search_source WHERE key = 'notes/n04';
                 INSERT INTO search (rowid, key, title, description, body)
                     SELECT rowid, key, 'Common', '', 'common common filler filler filler'
                     FROM search_source WHERE key = 'notes/n04';",
            )
            .unwrap();
        assert_same_scores(&tx.conn, &queries[1..2]);
    }

    /// The segments of the full-text index and of the fields' index, as
    /// their structure records say (`_data` row 10: a 4-byte cookie, the
    /// marker of version 2 when the table has one, then the number of levels
    /// and of segments, as SQLite varints, one byte each here).
    fn segments(store: &Store) -> [i64; 2] {
        let reader = store.reader().unwrap();
        ["search_data", "fields_data"].map(|table| {
            let record: Vec<u8> = reader
                .conn
                .query_row(
                    &format!("SELECT block FROM {table} WHERE id = 10"),
                    [],
                    |r| r.get(0),
                )
                .unwrap();
            let header = match record.get(4..8) == Some(&[0xff, 0x00, 0x00, 0x01]) {
                true => &record[8..],
                false => &record[4..],
            };
            assert!(header[0] < 0x80 && header[1] < 0x80, "{table}: {record:?}");
            i64::from(header[1])
        })
    }

    fn numbered(i: usize, revision: usize) -> NewDocument {
        doc(
            &format!("notes/n{i:03}"),
            &format!("Note {i}"),
            Some(&format!(
                r#"{{"status":"open","rev":{revision},"tags":["a","b"]}}"#
            )),
            format!("---\nstatus: open\n---\nword{i} rev{revision} common").as_bytes(),
        )
    }

    /// A load into an empty database writes each index as one segment, and so
    /// does a later import whose changes come in rowid order (as they do
    /// for documents loaded together: key order); one with changes out of
    /// that order, two. More would mean that FTS5 wrote out its pending terms
    /// during the import: at a statement that opened a statement journal,
    /// or at a rowid lower than the last one written (see
    /// `search::IndexWrites`).
    #[test]
    fn an_import_writes_its_index_changes_in_few_segments() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_or_create(&dir.path().join("db")).unwrap();
        // Each change: a document put, or the key of one removed.
        let write = |changes: Vec<Result<NewDocument, &str>>| {
            let before = segments(&store);
            let tx = store.begin_import("/p", false).unwrap();
            for change in &changes {
                match change {
                    Ok(d) => {
                        tx.put(d).unwrap();
                        tx.record(crate::doc::ChangeKind::New, &d.key).unwrap();
                    }
                    Err(key) => {
                        let (prefix, id) = key.split_once('/').unwrap();
                        let key = DocKey::new(Prefix::parse(prefix).unwrap(), id);
                        tx.remove(&key).unwrap();
                        tx.record(crate::doc::ChangeKind::Removed, &key).unwrap();
                    }
                }
            }
            tx.commit(true).unwrap();
            integrity(&store);
            let after = segments(&store);
            [after[0] - before[0], after[1] - before[1]]
        };
        // A load into an empty database.
        assert_eq!(
            write((0..300).map(|i| Ok(numbered(i, 0))).collect()),
            [1, 1]
        );
        // In key order: 60 documents replaced, 5 removed among them.
        let removed = [
            "notes/n001",
            "notes/n002",
            "notes/n003",
            "notes/n004",
            "notes/n006",
        ];
        let mut changes: Vec<_> = (0..60).map(|i| Ok(numbered(i * 5, 1))).collect();
        changes.extend(removed.iter().map(|&key| Err(key)));
        changes.sort_by_key(|c| match c {
            Ok(d) => d.key.to_string(),
            Err(key) => key.to_string(),
        });
        // (FTS5 may merge a segment that lost many rows: `deletemerge`.)
        let [search, fields] = write(changes);
        assert!(search == 1 && fields <= 1, "{search} and {fields} segments");
        assert_eq!(keys(&store, "word5", None, &[]), ["notes/n005"]);
        assert_eq!(keys(&store, "rev1", None, &[]).len(), 60);
        assert_eq!(keys(&store, "rev0", None, &[]).len(), 300 - 60 - 5);
        assert!(keys(&store, "word2", None, &[]).is_empty());
        // Out of rowid order: new documents (above every stored rowid)
        // before replaced and removed ones, and a rowid going back.
        let mut changes: Vec<_> = (300..305).map(|i| Ok(numbered(i, 2))).collect();
        changes.extend([Ok(numbered(10, 2)), Ok(numbered(200, 2))]);
        changes.extend([Err("notes/n007"), Ok(numbered(100, 2)), Err("notes/n008")]);
        let [search, fields] = write(changes);
        assert!(search <= 2 && fields <= 2, "{search} and {fields} segments");
        assert_eq!(keys(&store, "rev2", None, &[]).len(), 8);
        assert_eq!(keys(&store, "rev1", None, &[]).len(), 60 - 3);
        assert!(keys(&store, "word7", None, &[]).is_empty());
        assert_eq!(keys(&store, "word302", None, &[]), ["notes/n302"]);
        assert_eq!(keys(&store, "", None, &["rev=2"]).len(), 8);
        assert_eq!(keys(&store, "", None, &["rev=1"]).len(), 60 - 3);
        assert_eq!(keys(&store, "", None, &["rev=0"]).len(), 300 - 60 - 5 - 2);
        assert_eq!(keys(&store, "", None, &["tags=b"]).len(), 300 - 5 - 2 + 5);
    }
}
