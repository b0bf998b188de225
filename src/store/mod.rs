//! The store: the documents and everything kept beside them (versions, search indexes, the change feed), in SQLite (the default, embedded) or PostgreSQL (a team's shared server). The only module that speaks SQL.
//!
//! This module holds what both backends share: the values the rest of
//! orchestra reads and writes, and the SQL condition of the areas a reader
//! sees (`Reader::seeing`). `sqlite` and `postgres` hold the SQL.

mod bodies;
mod dispatch;
pub mod postgres;
#[cfg(test)]
pub(in crate::store) mod seeing_tests;
mod sqlite;
mod stored_stats;

use crate::access::Areas;
use crate::doc::{ChangeKind, DocKey};

pub use dispatch::{Access, ChangeWatcher, ImportTx, Location, Reader, Store};
pub use sqlite::{
    ChangeBatch, DocMeta, HistoryStats, Hit, PrefixStats, PruneReport, PruneRules, SNIPPET_CHARS,
    SearchPage, StoreStats, Version, VersionBody, VersionBytes,
};
pub use stored_stats::StoredStats;

/// The store cannot be reached now (its PostgreSQL server down or
/// restarting): what a client is told, without the details, which go to
/// the log. Asking again later may succeed.
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("the database is unavailable; try again shortly")]
pub struct Unavailable;

/// Whether `error` says that the store cannot be reached now: no
/// connection to be had ([`Unavailable`]), or PostgreSQL's connection lost
/// or its server shutting down or starting (SQLSTATE classes 08 and 57P).
pub fn is_unavailable(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause.is::<Unavailable>()
            || cause.downcast_ref::<::postgres::Error>().is_some_and(|e| {
                e.is_closed()
                    || e.code().is_some_and(|code| {
                        let code = code.code();
                        code.starts_with("08") || code.starts_with("57P")
                    })
            })
    })
}

/// Imports whose changes the feed keeps. A server further behind than this
/// (asleep for a thousand imports) is told that everything may have changed.
const FEED_IMPORTS: i64 = 1000;

/// Connections a server reads on at once; more requests wait their turn
/// (`reads`, in the server).
pub const READ_CONNECTIONS: usize = 8;

/// What a listing shows of a document: everything but its bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct DocSummary {
    pub key: DocKey,
    pub title: String,
    pub description: Option<String>,
    pub size: u64,
    pub mtime_ns: i64,
}

/// A whole document as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    pub key: DocKey,
    pub title: String,
    pub description: Option<String>,
    /// The frontmatter as JSON text, when the file had a well-formed block.
    pub frontmatter: Option<String>,
    pub mtime_ns: i64,
    /// False for bytes that are not UTF-8: served as a blob.
    pub is_text: bool,
    pub body: Vec<u8>,
    /// The number of its newest version, which these bytes are (what a
    /// write's `ifVersion` names), when its history has one.
    pub version: Option<u32>,
    pub hash: [u8; 32],
}

/// A point read: the document, or only its size when it is too large to load.
#[derive(Debug, Clone, PartialEq)]
pub enum Fetched {
    Document(Document),
    TooLarge { size: u64 },
}

/// What import needs to know of a stored document to decide whether to reread it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStat {
    pub size: u64,
    pub mtime_ns: i64,
    pub hash: [u8; 32],
}

/// A document as import writes it, with what its index entries are made of
/// computed once, by [`NewDocument::new`], on the thread that read the file
/// (import's one writer is its bottleneck).
#[derive(Debug, Clone)]
pub struct NewDocument {
    pub key: DocKey,
    pub stat: FileStat,
    pub is_text: bool,
    pub title: String,
    pub description: Option<String>,
    pub frontmatter: Option<String>,
    pub body: Vec<u8>,
    /// Where its Markdown starts, past the frontmatter (`search::body_start`).
    body_start: usize,
    /// Its row in the fields' index (`fields::terms_of`).
    field_terms: String,
    /// Its search vector on PostgreSQL, when import's reader threads made
    /// it ([`Location::prepare`]); else the writer makes it.
    pg_vector: Option<postgres::TsVector>,
    /// The links of its Markdown (`links::extract`), found on import's
    /// reader threads; none for a binary document.
    links: Vec<crate::links::Link>,
    /// Its outline, encoded (`parts::outline::Stored`), for a UTF-8
    /// document of at least `OUTLINE_MIN_BYTES`, found on import's reader
    /// threads too; none for a smaller one, whose outline the tools compute.
    outline: Option<Vec<u8>>,
}

impl NewDocument {
    pub fn new(
        key: DocKey,
        stat: FileStat,
        is_text: bool,
        title: String,
        description: Option<String>,
        frontmatter: Option<String>,
        body: Vec<u8>,
    ) -> NewDocument {
        let (links, outline) = match std::str::from_utf8(&body) {
            Ok(text) if is_text => (
                crate::links::extract(&key, text),
                crate::parts::outline::to_store(text).map(|o| o.encode()),
            ),
            _ => (Vec::new(), None),
        };
        NewDocument {
            links,
            outline,
            body_start: sqlite::body_start(&body),
            field_terms: sqlite::field_terms(frontmatter.as_deref()),
            pg_vector: None,
            key,
            stat,
            is_text,
            title,
            description,
            frontmatter,
            body,
        }
    }
}

/// Where a moved document went, or came from: on a version of its history
/// (a write's `move`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Moved {
    /// On the old key's removal: the key it was moved to.
    To(DocKey),
    /// On the new key's first version: the key it was moved from.
    From(DocKey),
}

/// A stored document as a write's transaction sees it
/// ([`ImportTx::current`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Current {
    /// The number of its newest version in its history.
    pub version: u32,
    pub hash: [u8; 32],
    pub is_text: bool,
}

/// A scoped API key as a store keeps it: its hash, never the key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiKey {
    /// blake3 of the key, in hex (`access::keys::hash`).
    pub hash: String,
    pub name: String,
    /// Space-separated scopes.
    pub scopes: String,
    /// Unix seconds.
    pub created_at: i64,
    pub expires_at: Option<i64>,
    pub revoked_at: Option<i64>,
}

impl ApiKey {
    /// Whether the key lets its holder in at `now` (unix seconds).
    pub fn is_live(&self, now: i64) -> bool {
        self.revoked_at.is_none() && self.expires_at.is_none_or(|at| now < at)
    }
}

/// A file the last import left out, and why (`orchestra check`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedFile {
    /// Relative to the project folder, `/`-separated.
    pub path: String,
    pub reason: String,
}

/// What `orchestra check` reads of a document, as [`Reader::check_page`]
/// pages them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckRow {
    pub key: DocKey,
    pub title: String,
    pub is_text: bool,
    /// Its bytes, only when check must read them: a document that is not
    /// UTF-8, or one that opens with `---` and has no frontmatter stored
    /// (whose block did not parse).
    pub body: Option<Vec<u8>>,
}

/// A link from a document, as [`Reader::links_out`] pages them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutLink {
    /// Its place among the document's links (the cursor of the next page).
    pub n: u32,
    pub line: u32,
    /// The document it links to: for a mention, the first of that name.
    pub target: DocKey,
    /// Whether that document is in the store (a mention's always is).
    pub exists: bool,
    /// A bare mention of the target's id, not a Markdown link.
    pub mention: bool,
    pub text: String,
}

/// A link to a document from another, as [`Reader::links_in`] pages them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InLink {
    /// The linking document, and the link's place among its links: with
    /// the source, the cursor of the next page.
    pub source: DocKey,
    pub n: u32,
    pub line: u32,
    pub mention: bool,
    pub text: String,
    /// The text of the line the link is on.
    pub context: String,
}

/// A link to a document that is not in the store, for `orchestra check`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokenLink {
    pub source: DocKey,
    /// Its place among the source's links (the cursor of the next page).
    pub n: u32,
    pub line: u32,
    pub target: DocKey,
    pub text: String,
}

/// The smallest string greater than every string that begins with `s`, or
/// `None` when there is none (`s` empty or made only of `char::MAX`).
pub(in crate::store) fn successor(s: &str) -> Option<String> {
    let mut chars: Vec<char> = s.chars().collect();
    while let Some(last) = chars.pop() {
        let next = (last as u32 + 1..=char::MAX as u32).find_map(char::from_u32);
        if let Some(next) = next {
            chars.push(next);
            return Some(chars.into_iter().collect());
        }
    }
    None
}

/// Whether a stored document of `size` bytes may have an outline stored:
/// only one of `OUTLINE_MIN_BYTES` or more does, so that replacing or
/// removing a small document costs no statement of outlines.
pub(in crate::store) fn may_have_outline(size: usize) -> bool {
    size >= crate::parts::outline::OUTLINE_MIN_BYTES
}

/// How the feed (`changes.kind`) records a change, on either backend.
pub(in crate::store) fn kind_code(kind: ChangeKind) -> i64 {
    match kind {
        ChangeKind::New => 1,
        ChangeKind::Updated => 2,
        ChangeKind::Removed => 3,
    }
}

/// The ids nearest a missing `key`, at most `limit`, in key order, from
/// `before` (the ids below it, nearest first) and `after` (those above it,
/// nearest first): half from each side when both have enough, the rest
/// from the side that has more. The same on both backends.
pub(in crate::store) fn nearest_of(
    key: &DocKey,
    before: Vec<String>,
    after: Vec<String>,
    limit: usize,
) -> Vec<DocKey> {
    let take_before = before
        .len()
        .min(limit.div_ceil(2).max(limit.saturating_sub(after.len())));
    let take_after = after.len().min(limit - take_before);
    let mut ids: Vec<String> = before.into_iter().take(take_before).collect();
    ids.reverse();
    ids.extend(after.into_iter().take(take_after));
    ids.into_iter()
        .map(|id| DocKey::new(key.prefix, id))
        .collect()
}

/// The documents in `areas` as one SQL condition on the columns `prefix`
/// and `id`, the same on both backends: `(prefix = $p AND id >= $low AND
/// id < $high) OR (prefix = $p) …`, each area a range of the (prefix, id)
/// index, and `FALSE` for no area. `bind` binds each value and returns its
/// placeholder.
pub(in crate::store) fn areas_sql(
    areas: &Areas,
    prefix: &str,
    id: &str,
    mut bind: impl FnMut(String) -> String,
) -> String {
    if areas.is_empty() {
        return "FALSE".to_string();
    }
    let each: Vec<String> = areas
        .as_slice()
        .iter()
        .map(|area| {
            let mut sql = format!("{prefix} = {}", bind(area.prefix.as_str().to_string()));
            if let Some(folder) = &area.folder {
                sql.push_str(&format!(" AND {id} >= {}", bind(folder.clone())));
                if let Some(upper) = successor(folder) {
                    sql.push_str(&format!(" AND {id} < {}", bind(upper)));
                }
            }
            format!("({sql})")
        })
        .collect();
    format!("({})", each.join(" OR "))
}
