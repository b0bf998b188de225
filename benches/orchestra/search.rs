//! The `search` tool over a pipe: a rare word, a word in half of the documents, filters only, the server's RSS after 1,000 searches and the index's share of the database; and their rows beside the raw FTS5 baseline.

use std::path::Path;

use rusqlite::Connection;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::Res;
use crate::backlog::{HALF_WORD, RARE_WORDS, planted};
use crate::process::proc_rss;
use crate::raw_sqlite::{RawSearch, pages_of};
use crate::report::Row;
use crate::stats::{micros, percentile_ms};
use crate::stdio_client::{Envelope, Server};
use crate::units::{mb, ratio, thousands};

/// Searches of each kind sent to one server, in this order; the first
/// [`WARMUP`] of each kind are not timed. 1,000 in all: the RSS figure is
/// taken after them.
const RARE_SEARCHES: usize = 500;
const COMMON_SEARCHES: usize = 200;
const FILTER_SEARCHES: usize = 300;
const WARMUP: usize = 10;
/// Hits per page asked for (the tool's default).
const LIMIT: usize = 20;
/// The frontmatter filter of the filters-only search (one of the backlog's
/// five statuses: about 18% of the documents).
pub const STATUS: &str = "open";

/// What the `search` tool's `structuredContent` holds (the parts checked).
#[derive(Deserialize)]
struct ToolResult {
    #[serde(rename = "structuredContent")]
    structured: Option<SearchResult>,
    #[serde(rename = "isError")]
    is_error: Option<bool>,
}

#[derive(Deserialize)]
struct SearchResult {
    hits: Vec<SearchHit>,
    total: u64,
}

#[derive(Deserialize)]
struct SearchHit {
    snippet: String,
}

pub struct SearchFigures {
    /// Round trips in µs, warm-ups left out.
    pub rare_us: Vec<f64>,
    pub common_us: Vec<f64>,
    pub filter_us: Vec<f64>,
    /// Hits of each rare word, of the common word and of the filter.
    pub rare_hits: Vec<u64>,
    pub common_hits: u64,
    pub filter_hits: u64,
    /// Snippets of the word searches that do not show the match.
    pub unmarked: Unmarked,
    pub server_rss_kb: u64,
    pub server_hwm_kb: u64,
    /// Pages of `search*` and `fields*` (`dbstat`), and of the whole database.
    pub index_bytes: u64,
    pub db_bytes: u64,
}

/// Hits of `word` in the backlog, as planted by the generator.
fn planted_hits(word: &str, n: usize, seed: u64) -> u64 {
    (0..n)
        .filter(|&i| planted(i, n, seed).contains(&word))
        .count() as u64
}

/// Whether a snippet shows `word` marked as the match (`**word**`).
pub fn marks(snippet: &str, word: &str) -> bool {
    snippet.to_lowercase().contains(&format!("**{word}**"))
}

/// The snippets of the word searches' first pages (each distinct search
/// once) that do not show the word marked.
#[derive(Default)]
pub struct Unmarked {
    pub snippets: u64,
    pub unmarked: u64,
    /// The first one, for the report.
    pub example: Option<String>,
}

impl Unmarked {
    pub fn add(&mut self, word: &str, snippets: &[String]) {
        self.snippets += snippets.len() as u64;
        for snippet in snippets.iter().filter(|s| !marks(s, word)) {
            self.unmarked += 1;
            self.example.get_or_insert_with(|| snippet.clone());
        }
    }

    fn share(&self) -> f64 {
        100.0 * self.unmarked as f64 / self.snippets.max(1) as f64
    }
}

/// Sends one search and checks its page: no error, `total` as expected, a
/// full first page. Returns the round trip (µs) and the hits' snippets.
fn call(server: &mut Server, arguments: &Value, expected: u64) -> Res<(f64, Vec<String>)> {
    let line = server.request_line(
        "tools/call",
        &json!({ "name": "search", "arguments": arguments }),
    );
    let (took, reply) = server.call_line(&line)?;
    let envelope: Envelope<ToolResult> = serde_json::from_str(&reply)?;
    let result = match (envelope.result, envelope.error) {
        (Some(result), None) if result.is_error != Some(true) => result,
        _ => return Err(format!("search {arguments} failed: {reply}").into()),
    };
    let page = result
        .structured
        .ok_or_else(|| format!("search {arguments}: no structuredContent"))?;
    if page.total != expected {
        return Err(format!(
            "search {arguments}: total {}, expected {expected}",
            page.total
        )
        .into());
    }
    if page.hits.len() as u64 != page.total.min(LIMIT as u64) {
        return Err(format!(
            "search {arguments}: {} hits on the first page of {}",
            page.hits.len(),
            page.total
        )
        .into());
    }
    let snippets = page.hits.into_iter().map(|h| h.snippet).collect();
    Ok((micros(took), snippets))
}

/// The index's share of `db` (read before the server opens it), then 1,000
/// searches through one server: each rare word in turn, the word in half of
/// the documents, and `where status=open` with an empty query; every total
/// is checked against the backlog, and against the raw baseline's counts
/// (`filter_hits`: the raw scan's).
pub fn measure(
    bin: &Path,
    db: &Path,
    n: usize,
    seed: u64,
    raw: &RawSearch,
    filter_hits: u64,
) -> Res<SearchFigures> {
    let (index_bytes, db_bytes) = {
        let conn = Connection::open(db)?;
        pages_of(&conn, "name LIKE 'search%' OR name LIKE 'fields%'")?
    };
    let rare_hits: Vec<u64> = RARE_WORDS
        .iter()
        .map(|w| planted_hits(w, n, seed))
        .collect();
    let common_hits = planted_hits(HALF_WORD, n, seed);
    if raw.rare_hits != rare_hits || raw.common_hits != common_hits {
        return Err(format!(
            "the raw FTS5 table finds {:?} and {} hits, the backlog has {rare_hits:?} and {common_hits}",
            raw.rare_hits, raw.common_hits
        )
        .into());
    }

    let mut server = Server::start(bin, db, None)?;
    let mut unmarked = Unmarked::default();
    let mut rare_us = Vec::with_capacity(RARE_SEARCHES);
    for k in 0..RARE_SEARCHES {
        let word = RARE_WORDS[k % RARE_WORDS.len()];
        let arguments = json!({ "query": word, "limit": LIMIT });
        let (us, snippets) = call(&mut server, &arguments, rare_hits[k % RARE_WORDS.len()])?;
        if k < RARE_WORDS.len() {
            unmarked.add(word, &snippets);
        }
        if k >= WARMUP {
            rare_us.push(us);
        }
    }
    let mut common_us = Vec::with_capacity(COMMON_SEARCHES);
    for k in 0..COMMON_SEARCHES {
        let arguments = json!({ "query": HALF_WORD, "limit": LIMIT });
        let (us, snippets) = call(&mut server, &arguments, common_hits)?;
        if k == 0 {
            unmarked.add(HALF_WORD, &snippets);
        }
        if k >= WARMUP {
            common_us.push(us);
        }
    }
    let mut filter_us = Vec::with_capacity(FILTER_SEARCHES);
    for k in 0..FILTER_SEARCHES {
        let arguments = json!({ "query": "", "where": { "status": STATUS }, "limit": LIMIT });
        let (us, _) = call(&mut server, &arguments, filter_hits)?;
        if k >= WARMUP {
            filter_us.push(us);
        }
    }
    let (server_rss_kb, server_hwm_kb) = proc_rss(server.pid());
    server.stop()?;
    Ok(SearchFigures {
        rare_us,
        common_us,
        filter_us,
        rare_hits,
        common_hits,
        filter_hits,
        unmarked,
        server_rss_kb,
        server_hwm_kb,
        index_bytes,
        db_bytes,
    })
}

/// The figure of a latency row (p50), its p99 after the verdict.
fn latency_row(figure: String, raw: Option<&[f64]>, orch: &[f64], target_ms: f64, n: usize) -> Row {
    let p50 = percentile_ms(orch, 50.0);
    let raw_p50 = raw.map(|r| percentile_ms(r, 50.0));
    let p99 = |samples: &[f64]| format!("{:.2} ms", percentile_ms(samples, 99.0) / 1e3);
    Row {
        figure,
        unit: "µs",
        raw: raw_p50,
        orchestra: Ok(p50),
        ratio: raw_p50.map_or(String::new(), |r| ratio(r, p50)),
        target: format!("≤ {target_ms} ms at 100k"),
        meets: (n == 100_000).then_some(p50 <= target_ms * 1e3),
        why: match raw {
            Some(raw) => format!("p99 {} (raw {})", p99(orch), p99(raw)),
            None => format!("p99 {}", p99(orch)),
        },
    }
}

impl SearchFigures {
    /// p50 (µs) of the rare-word, half-word and filters-only searches.
    pub fn p50s(&self) -> [f64; 3] {
        [&self.rare_us, &self.common_us, &self.filter_us].map(|us| percentile_ms(us, 50.0))
    }

    /// The three searches, the server's RSS and the index's share, beside the
    /// raw FTS5 table (`raw`) and the raw frontmatter scan (`raw_filter_us`).
    pub fn rows(&self, raw: &RawSearch, raw_filter_us: &[f64], n: usize) -> Vec<Row> {
        let (fewest, most) = (
            self.rare_hits.iter().min().copied().unwrap_or(0),
            self.rare_hits.iter().max().copied().unwrap_or(0),
        );
        let mut rows = vec![
            latency_row(
                format!(
                    "search p50, rare word ({fewest}–{most} hits: {}; top 20 with snippets)",
                    RARE_WORDS.join(", ")
                ),
                Some(&raw.rare_us),
                &self.rare_us,
                2.0,
                n,
            ),
            latency_row(
                format!(
                    "search p50, word in half the documents ({} hits; top 20 with snippets)",
                    thousands(self.common_hits)
                ),
                Some(&raw.common_us),
                &self.common_us,
                25.0,
                n,
            ),
            latency_row(
                format!(
                    "search p50, filters only: `where status={STATUS}`, empty query ({} hits; first 20 in key order; raw: `json_extract` scan of the frontmatter)",
                    thousands(self.filter_hits)
                ),
                Some(raw_filter_us),
                &self.filter_us,
                50.0,
                n,
            ),
        ];
        let rss = mb(self.server_rss_kb);
        rows.push(Row {
            figure: format!(
                "server RSS after {} searches",
                thousands((RARE_SEARCHES + COMMON_SEARCHES + FILTER_SEARCHES) as u64)
            ),
            unit: "MB",
            raw: None,
            orchestra: Ok(rss),
            ratio: String::new(),
            target: "< 60 MB".into(),
            meets: Some(rss < 60.0),
            why: String::new(),
        });
        rows.push(Row {
            figure: format!(
                "search snippets without the matched word marked (first page of each word search: {} snippets)",
                self.unmarked.snippets
            ),
            unit: "%",
            raw: Some(raw.unmarked.share()),
            orchestra: Ok(self.unmarked.share()),
            ratio: String::new(),
            target: String::new(),
            meets: None,
            why: format!("{} of {}", self.unmarked.unmarked, self.unmarked.snippets),
        });
        let share = |part: u64, whole: u64| 100.0 * part as f64 / whole as f64;
        rows.push(Row {
            figure: "search index share of the database (`search*` + `fields*` pages, `dbstat`; raw: `fts*`)".into(),
            unit: "%",
            raw: Some(share(raw.index_bytes, raw.db_bytes)),
            orchestra: Ok(share(self.index_bytes, self.db_bytes)),
            ratio: String::new(),
            target: String::new(),
            meets: None,
            why: format!(
                "{:.1} of {:.1} MB (raw {:.1} of {:.1} MB)",
                self.index_bytes as f64 / 1e6,
                self.db_bytes as f64 / 1e6,
                raw.index_bytes as f64 / 1e6,
                raw.db_bytes as f64 / 1e6
            ),
        });
        rows
    }

    pub fn to_json(&self, raw: &RawSearch, raw_filter_us: &[f64]) -> Value {
        let summary = |samples: &[f64]| {
            json!({
                "p50_us": percentile_ms(samples, 50.0),
                "p99_us": percentile_ms(samples, 99.0),
                "samples": samples.len(),
            })
        };
        json!({
            "rare_words": RARE_WORDS,
            "rare_hits": self.rare_hits,
            "common_word": HALF_WORD,
            "common_hits": self.common_hits,
            "filter": format!("status={STATUS}"),
            "filter_hits": self.filter_hits,
            "snippets_checked": self.unmarked.snippets,
            "snippets_without_the_match": self.unmarked.unmarked,
            "snippet_without_the_match_example": self.unmarked.example,
            "raw_snippets_without_the_match": raw.unmarked.unmarked,
            "rare": summary(&self.rare_us),
            "common": summary(&self.common_us),
            "filter_only": summary(&self.filter_us),
            "raw_rare": summary(&raw.rare_us),
            "raw_common": summary(&raw.common_us),
            "raw_filter_scan": summary(raw_filter_us),
            "raw_fts_rebuild_s": raw.build_s,
            "server_rss_kb": self.server_rss_kb,
            "server_vmhwm_kb": self.server_hwm_kb,
            "index_bytes": self.index_bytes,
            "db_bytes": self.db_bytes,
            "raw_index_bytes": raw.index_bytes,
            "raw_db_bytes_with_fts": raw.db_bytes,
        })
    }
}
