//! The viewer's HTML pages: what each reads from the store (a document page: the document, its history, its mentions and a page of its backlinks, in one read transaction) and the askama template it fills (`templates/*.html`).
//!
//! Every read goes through [`read`] with the caller's read areas (the
//! search page: its search areas), so a page shows only what its caller
//! may read, filtered in the store's queries: a document outside them is
//! answered by [`missing`], byte for byte the page of one never stored.

use std::collections::HashMap;
use std::sync::Arc;

use askama::Template;
use axum::Extension;
use axum::extract::{Query, Request, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::Value;

use super::render::{self, Heading, doc_path, escape, uri_path};
use super::{LIST_PAGE, MAX_RENDERED_BYTES, Viewer, assets_version, html, key_of_path, under_of};
use crate::access::{Areas, Principal, Verb};
use crate::cursor::{self, LinksResume};
use crate::doc::{DocKey, Prefix};
use crate::search::{self, Filter, Search, SearchError, Under};
use crate::store::{DocSummary, Fetched, Hit, InLink, Reader, Store, Version};
use crate::uri;

/// What every page carries around its content.
pub(super) struct Chrome {
    /// The feed sequence the page shows (`data-seq`): live updates start
    /// after it.
    pub(super) seq: PageSeq,
    /// Which changes concern the page: `*` (any), `doc:prefix/id`, or
    /// `under:prefix/folder/`.
    pub(super) watch: String,
    /// The search box's text.
    pub(super) query: String,
    pub(super) asset_version: &'static str,
}

/// The feed sequence a page tells its script, as the caller may learn it.
///
/// The feed and its sequence are the store's: every import bumps it,
/// wherever it changed documents. A caller that reads everything gets the
/// number, and its live updates resume after it. A caller with partial
/// grants gets nothing (`data-seq=""`): the number would tell it when, and
/// how many, imports changed documents it may not read. Its page follows
/// live updates without resuming, and refreshes what it shows whenever its
/// stream (re)connects (`viewer.js`), so that nothing it missed leaves it
/// stale.
#[derive(Clone, Copy, Debug)]
pub(super) struct PageSeq(Option<i64>);

impl PageSeq {
    /// A page that follows no import (an error, a form): the same `0` for
    /// every caller, which tells nothing.
    pub(super) const STILL: PageSeq = PageSeq(Some(0));

    /// `seq` as a caller may learn it: the number only for a caller that
    /// reads everything (not `partial`: its read filter is `None`).
    pub(super) fn seen(seq: i64, partial: bool) -> PageSeq {
        PageSeq((!partial).then_some(seq))
    }
}

impl std::fmt::Display for PageSeq {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some(seq) => write!(f, "{seq}"),
            None => Ok(()),
        }
    }
}

impl Chrome {
    pub(super) fn new(seq: PageSeq, watch: String) -> Chrome {
        Chrome {
            seq,
            watch,
            query: String::new(),
            asset_version: assets_version(),
        }
    }
}

pub(super) struct Crumb {
    pub(super) name: String,
    pub(super) href: String,
}

/// `docs/adr/x` → `docs` (`/ls/docs`), `adr` (`/ls/docs/adr`), `x`…: the
/// folders above a document or listing, each a link to its listing.
pub(super) fn crumbs(prefix: Prefix, folders: &str) -> Vec<Crumb> {
    let mut crumbs = vec![Crumb {
        name: prefix.to_string(),
        href: format!("/ls/{prefix}"),
    }];
    let mut path = String::new();
    for folder in folders.split('/').filter(|f| !f.is_empty()) {
        path.push('/');
        path.push_str(&encode_segment(folder));
        crumbs.push(Crumb {
            name: folder.to_string(),
            href: format!("/ls/{prefix}{path}"),
        });
    }
    crumbs
}

fn encode_segment(segment: &str) -> String {
    percent_encoding::utf8_percent_encode(segment, percent_encoding::NON_ALPHANUMERIC).to_string()
}

fn encode_query(value: &str) -> String {
    percent_encoding::utf8_percent_encode(value, percent_encoding::NON_ALPHANUMERIC).to_string()
}

/// `1234` → `1.2 KB`.
pub fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KB", "MB", "GB", "TB"];
    if bytes < 1000 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1000.0;
    let mut unit = 0;
    while value >= 1000.0 && unit < UNITS.len() - 1 {
        value /= 1000.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// A commit time (ms since the epoch) as `2026-11-30 14:02 UTC`.
fn date_ms(ms: i64) -> String {
    date(ms.saturating_mul(1_000_000))
}

/// A file time as `2026-11-30 14:02 UTC`.
fn date(mtime_ns: i64) -> String {
    let time = std::time::UNIX_EPOCH + std::time::Duration::from_nanos(mtime_ns.max(0) as u64);
    let text = humantime::format_rfc3339_seconds(time).to_string();
    format!("{} {} UTC", &text[..10], &text[11..16])
}

/// Runs `read` on a pooled connection off the async threads, with a
/// reader that sees only the documents in `areas` (`None`: all of them).
pub(super) async fn read<T: Send + 'static>(
    store: &Store,
    areas: Option<Areas>,
    read: impl FnOnce(&crate::store::Reader) -> anyhow::Result<T> + Send + 'static,
) -> anyhow::Result<T> {
    let store = store.clone();
    crate::reads::run(move || read(&store.reader()?.seeing(areas)))
        .await
        .map_err(anyhow::Error::from)?
}

pub(super) fn internal(e: anyhow::Error) -> Response {
    if crate::store::is_unavailable(&e) {
        // The database down or restarting: a reload may succeed.
        tracing::warn!("viewer: {e:#}");
        return error_page(
            StatusCode::SERVICE_UNAVAILABLE,
            "Database unavailable",
            "The database cannot be reached just now; try again shortly.".to_string(),
        );
    }
    tracing::error!("viewer: {e:#}");
    error_page(
        StatusCode::INTERNAL_SERVER_ERROR,
        "Internal error",
        "The server could not read the database; the log says why.".to_string(),
    )
}

#[derive(Template)]
#[template(path = "error.html")]
struct ErrorPage {
    chrome: Chrome,
    heading: String,
    message: String,
    /// (href, text) of documents near a missing one.
    suggestions: Vec<(String, String)>,
}

pub(super) fn error_page(status: StatusCode, heading: &str, message: String) -> Response {
    let page = ErrorPage {
        chrome: Chrome::new(PageSeq::STILL, String::new()),
        heading: heading.to_string(),
        message,
        suggestions: Vec::new(),
    };
    rendered(status, page.render())
}

pub(super) fn rendered(status: StatusCode, page: askama::Result<String>) -> Response {
    match page {
        Ok(body) => html(status, body),
        Err(e) => internal(e.into()),
    }
}

pub(super) async fn not_found(message: &str) -> Response {
    error_page(StatusCode::NOT_FOUND, "Not found", message.to_string())
}

/// The page for a document (or version) that is not there, or not in the
/// caller's read `areas` (the same page: its existence is not revealed):
/// 404, the versions it had if it had any, else the nearest ids, all as a
/// reader seeing `areas` finds them.
pub(super) async fn missing(
    viewer: &Viewer,
    areas: Option<Areas>,
    key: DocKey,
    version: Option<u32>,
) -> Response {
    let lookup = key.clone();
    let partial = areas.is_some();
    let found = read(&viewer.store, areas, move |r| {
        Ok((
            r.seq()?,
            r.history(&lookup, None, HISTORY_SHOWN)?,
            r.nearest(&lookup, 5)?,
        ))
    })
    .await;
    let (seq, history, near) = found.unwrap_or_default();
    let path = uri_path(&key);
    let suggestions = if history.is_empty() {
        near.iter().map(|k| (doc_path(k), k.to_string())).collect()
    } else {
        history
            .iter()
            .filter(|v| !v.removed())
            .map(|v| {
                (
                    format!("/doc/{path}?version={}", v.number),
                    format!("version {}: {}", v.number, v.title),
                )
            })
            .collect()
    };
    let message = match (version, history.is_empty()) {
        (Some(n), _) => format!("There is no version {n} of {} to show.", uri::format(&key)),
        (None, true) => format!("There is no document {}.", uri::format(&key)),
        (None, false) => format!(
            "{} was removed; its versions stay readable.",
            uri::format(&key)
        ),
    };
    let page = ErrorPage {
        // Live from now on: the document may come (back).
        chrome: Chrome::new(PageSeq::seen(seq, partial), format!("doc:{key}")),
        heading: "Not found".to_string(),
        message,
        suggestions,
    };
    rendered(StatusCode::NOT_FOUND, page.render())
}

struct PrefixRow {
    name: &'static str,
    documents: u64,
}

#[derive(Template)]
#[template(path = "home.html")]
struct HomePage {
    chrome: Chrome,
    root: Option<String>,
    prefixes: Vec<PrefixRow>,
}

/// GET `/`: the prefixes and the caller's document counts.
pub(super) async fn home(
    State(viewer): State<Arc<Viewer>>,
    Extension(principal): Extension<Arc<Principal>>,
) -> Response {
    let (store, shared) = (viewer.store.clone(), viewer.clone());
    let root_store = store.clone();
    let areas = principal.grants.read_filter();
    let seen = areas.clone();
    let answered = read(&store, areas, move |r| {
        r.in_transaction(|| {
            let seq = r.seq()?;
            let mut prefixes = Vec::new();
            for prefix in Prefix::ALL {
                let under = Under {
                    prefix,
                    folder: None,
                };
                // Counted once per import, as on the list pages.
                let documents =
                    shared.count_under(&under, seen.as_ref(), seq, || r.count_under(&under))?;
                prefixes.push(PrefixRow {
                    name: prefix.as_str(),
                    documents,
                });
            }
            Ok((seq, prefixes, root_store.project_root()?))
        })
    })
    .await;
    match answered {
        Ok((seq, prefixes, root)) => rendered(
            StatusCode::OK,
            HomePage {
                chrome: Chrome::new(
                    PageSeq::seen(seq, principal.grants.read_filter().is_some()),
                    "*".to_string(),
                ),
                root,
                prefixes,
            }
            .render(),
        ),
        Err(e) => internal(e),
    }
}

struct IdPart {
    text: String,
    /// The folder's listing, for the folder parts of an id.
    href: Option<String>,
}

struct ListRow {
    href: String,
    title: String,
    id_parts: Vec<IdPart>,
    size: String,
    updated: String,
}

#[derive(Template)]
#[template(path = "list.html")]
struct ListPage {
    chrome: Chrome,
    under: String,
    crumbs: Vec<Crumb>,
    total: u64,
    rows: Vec<ListRow>,
    after: Option<String>,
    first_href: String,
    next_href: Option<String>,
    /// The "New" form of this folder, on a server that writes.
    new_href: Option<String>,
}

#[derive(serde::Deserialize)]
pub(super) struct ListQuery {
    after: Option<String>,
}

fn list_row(doc: &DocSummary) -> ListRow {
    let mut id_parts = Vec::new();
    let mut folder = String::new();
    let segments: Vec<&str> = doc.key.id.split('/').collect();
    for (i, segment) in segments.iter().enumerate() {
        if i + 1 < segments.len() {
            folder.push('/');
            folder.push_str(&encode_segment(segment));
            id_parts.push(IdPart {
                text: format!("{segment}/"),
                href: Some(format!("/ls/{}{folder}", doc.key.prefix)),
            });
        } else {
            id_parts.push(IdPart {
                text: segment.to_string(),
                href: None,
            });
        }
    }
    ListRow {
        href: doc_path(&doc.key),
        title: doc.title.clone(),
        id_parts,
        size: human_size(doc.size),
        updated: date(doc.mtime_ns),
    }
}

/// GET `/ls/{prefix}[/{folder…}]?after=ID`: a keyset page of the documents
/// under a prefix or folder that the caller may read.
pub(super) async fn list(
    State(viewer): State<Arc<Viewer>>,
    Extension(principal): Extension<Arc<Principal>>,
    Query(query): Query<ListQuery>,
    request: Request,
) -> Response {
    let path = request
        .uri()
        .path()
        .strip_prefix("/ls/")
        .unwrap_or_default();
    let Some(under) = under_of(path) else {
        return not_found("No such prefix or folder: the prefixes are docs, features and notes.")
            .await;
    };
    let after = query.after.filter(|a| !a.is_empty());
    let (lookup, resume, shared) = (under.clone(), after.clone(), viewer.clone());
    let areas = principal.grants.read_filter();
    let seen = areas.clone();
    let answered = read(&viewer.store, areas, move |r| {
        // One read transaction: the page, its sequence and its count agree.
        r.in_transaction(|| {
            let seq = r.seq()?;
            // One more than a page tells whether there is a next one.
            let mut docs = r.page_under(&lookup, resume.as_deref(), LIST_PAGE + 1)?;
            let more = docs.len() > LIST_PAGE;
            docs.truncate(LIST_PAGE);
            let total =
                shared.count_under(&lookup, seen.as_ref(), seq, || r.count_under(&lookup))?;
            Ok((seq, docs, more, total))
        })
    })
    .await;
    let (seq, docs, more, total) = match answered {
        Ok(answer) => answer,
        Err(e) => return internal(e),
    };
    let base = format!(
        "/ls/{}{}",
        under.prefix,
        under
            .folder
            .as_deref()
            .map(|f| format!(
                "/{}",
                f.trim_end_matches('/')
                    .split('/')
                    .map(encode_segment)
                    .collect::<Vec<_>>()
                    .join("/")
            ))
            .unwrap_or_default()
    );
    let next_href = match docs.last() {
        Some(last) if more => Some(format!("{base}?after={}", encode_query(&last.key.id))),
        _ => None,
    };
    let page = ListPage {
        chrome: Chrome::new(
            PageSeq::seen(seq, principal.grants.read_filter().is_some()),
            format!(
                "under:{}/{}",
                under.prefix,
                under.folder.as_deref().unwrap_or_default()
            ),
        ),
        under: under.to_string(),
        crumbs: crumbs(under.prefix, under.folder.as_deref().unwrap_or_default()),
        total,
        rows: docs.iter().map(list_row).collect(),
        after,
        new_href: (viewer.writer.is_some() && principal.grants.areas(Verb::Write).covers(&under))
            .then(|| base.replacen("/ls/", "/new/", 1)),
        first_href: base,
        next_href,
    };
    rendered(StatusCode::OK, page.render())
}

#[derive(Template)]
#[template(path = "doc.html")]
struct DocPage {
    chrome: Chrome,
    crumbs: Vec<Crumb>,
    uri: String,
    source_path: String,
    title: String,
    description: Option<String>,
    size: String,
    bytes: u64,
    updated: String,
    frontmatter: Vec<(String, String)>,
    toc: Vec<Heading>,
    /// The rendered Markdown; `None` for a binary or too large document.
    html: Option<String>,
    /// Text, but more than a page renders.
    too_large: bool,
    /// A past version: its number and the newest version's.
    version: Option<(u32, u32)>,
    current_href: String,
    history: Vec<HistoryRow>,
    history_more: bool,
    /// The "Linked from" panel; none on a past version's page.
    backlinks: Option<Backlinks>,
    /// `prefix/id`, as the terminal commands take it.
    key_text: String,
    source: Option<String>,
    raw_href: String,
    /// The "Edit" form, on a server that writes, for the current text, to
    /// a caller that may write it.
    edit_href: Option<String>,
}

/// Frontmatter JSON text → (key, value) rows, values as text (strings bare,
/// lists joined with commas, anything else as JSON); the title and the
/// description are shown above the table.
fn frontmatter_rows(json: Option<&str>) -> Vec<(String, String)> {
    let Some(Value::Object(map)) = json.and_then(|j| serde_json::from_str(j).ok()) else {
        return Vec::new();
    };
    map.into_iter()
        .filter(|(key, _)| key != "title" && key != "description")
        .map(|(key, value)| {
            let text = match value {
                Value::String(s) => s,
                Value::Array(items) if items.iter().all(|i| !i.is_object() && !i.is_array()) => {
                    items
                        .iter()
                        .map(|i| match i {
                            Value::String(s) => s.clone(),
                            other => other.to_string(),
                        })
                        .collect::<Vec<_>>()
                        .join(", ")
                }
                other => other.to_string(),
            };
            (key, text)
        })
        .collect()
}

/// What a document page shows: the current document or one of its versions.
struct Shown {
    title: String,
    description: Option<String>,
    frontmatter: Option<String>,
    size: u64,
    updated: String,
    is_text: bool,
    /// The bytes, unless binary or too large to render.
    body: Option<Vec<u8>>,
    /// For a past version: its number, and the number of the newest.
    version: Option<(u32, u32)>,
}

#[derive(serde::Deserialize)]
pub(super) struct DocQuery {
    version: Option<String>,
    /// Where the "Linked from" panel resumes: a links cursor
    /// (`cursor::encode_links`, `LinksResume::In`).
    backlinks: Option<String>,
}

/// Backlinks listed on a document page at once.
const BACKLINKS_SHOWN: usize = 50;

/// Out-links read at once while collecting a document's mentions.
const OUT_LINKS_PAGE: usize = 500;

/// The "Linked from" panel: a keyset page of the links to a document.
struct Backlinks {
    rows: Vec<BacklinkRow>,
    /// The panel was resumed from a cursor (not its first page).
    resumed: bool,
    first_href: String,
    more_href: Option<String>,
}

/// One link to the document, from another.
struct BacklinkRow {
    href: String,
    /// The source's title, or its URI when it has none.
    source: String,
    line: u32,
    /// The text of the line the link is on (shown escaped).
    context: String,
}

/// The names the document `key` mentions (`FEAT-004`), each with the
/// document the store resolved it to: its out-links that are mentions.
fn mention_targets(r: &Reader, key: &DocKey) -> anyhow::Result<HashMap<String, DocKey>> {
    let mut targets = HashMap::new();
    let mut after = None;
    loop {
        let page = r.links_out(key, after, OUT_LINKS_PAGE)?;
        for link in page.iter().filter(|l| l.mention) {
            targets
                .entry(link.text.clone())
                .or_insert_with(|| link.target.clone());
        }
        match page.last() {
            Some(last) if page.len() == OUT_LINKS_PAGE => after = Some(last.n),
            _ => return Ok(targets),
        }
    }
}

/// Up to [`BACKLINKS_SHOWN`] links to `key` after `after`, each with its
/// source's title (one point read per source), and whether there are more.
fn backlinks_page(
    r: &Reader,
    key: &DocKey,
    after: Option<&(DocKey, u32)>,
) -> anyhow::Result<(Vec<(InLink, String)>, bool)> {
    let mut links = r.links_in(key, after.map(|(k, n)| (k, *n)), BACKLINKS_SHOWN + 1)?;
    let more = links.len() > BACKLINKS_SHOWN;
    links.truncate(BACKLINKS_SHOWN);
    let mut titles: HashMap<DocKey, String> = HashMap::new();
    let mut page = Vec::with_capacity(links.len());
    for link in links {
        let title = match titles.get(&link.source) {
            Some(title) => title.clone(),
            None => {
                let title = r
                    .meta(&link.source)?
                    .map(|m| m.title)
                    .filter(|t| !t.trim().is_empty())
                    .unwrap_or_else(|| uri::format(&link.source));
                titles.insert(link.source.clone(), title.clone());
                title
            }
        };
        page.push((link, title));
    }
    Ok((page, more))
}

fn backlinks_panel(
    key: &DocKey,
    page: Vec<(InLink, String)>,
    more: bool,
    resumed: bool,
) -> Backlinks {
    let first_href = format!("{}#linked-from", doc_path(key));
    // A cursor is base64url: safe in a query as it is.
    let more_href = match page.last() {
        Some((last, _)) if more => Some(format!(
            "{}?backlinks={}#linked-from",
            doc_path(key),
            cursor::encode_links(key, &LinksResume::In(Some((last.source.clone(), last.n))))
        )),
        _ => None,
    };
    Backlinks {
        rows: page
            .into_iter()
            .map(|(link, source)| BacklinkRow {
                href: doc_path(&link.source),
                source,
                line: link.line,
                context: link.context,
            })
            .collect(),
        resumed,
        first_href,
        more_href,
    }
}

/// GET `/doc/{prefix}/{id…}[?version=N][?backlinks=CURSOR]`: a document,
/// or one of its versions, rendered, with its history; the current
/// document with a page of the links to it ("Linked from"). Its links,
/// mentions and backlinks are those among the documents the caller may
/// read.
pub(super) async fn document(
    State(viewer): State<Arc<Viewer>>,
    Extension(principal): Extension<Arc<Principal>>,
    Query(query): Query<DocQuery>,
    request: Request,
) -> Response {
    let Some(key) = key_of_path(request.uri().path(), "/doc/") else {
        return not_found("That is not a document path: /doc/{prefix}/{id}.").await;
    };
    let version = match query.version.as_deref().filter(|v| !v.is_empty()) {
        None => None,
        Some(text) => match text.parse::<u32>() {
            Ok(n) if n >= 1 => Some(n),
            _ => return not_found("A version is a number from 1.").await,
        },
    };
    let resumed = query.backlinks.as_deref().is_some_and(|c| !c.is_empty());
    let backlinks_after = match query.backlinks.as_deref().filter(|c| !c.is_empty()) {
        None => None,
        Some(text) => match cursor::decode_links(text, &key) {
            Ok(LinksResume::In(after)) => after,
            Ok(LinksResume::Out(_)) => {
                return error_page(
                    StatusCode::BAD_REQUEST,
                    "Bad request",
                    "That cursor pages a document's own links, not the links to it.".to_string(),
                );
            }
            Err(e) => return error_page(StatusCode::BAD_REQUEST, "Bad request", e.to_string()),
        },
    };
    let lookup = key.clone();
    let areas = principal.grants.read_filter();
    let answered = read(&viewer.store, areas.clone(), move |r| {
        // One read transaction: the document, its history and its links agree.
        r.in_transaction(|| {
            let seq = r.seq()?;
            let history = r.history(&lookup, None, HISTORY_SHOWN + 1)?;
            let shown = match version {
                None => {
                    let Some(meta) = r.meta(&lookup)? else {
                        return Ok(None);
                    };
                    let body = match r.get(&lookup, MAX_RENDERED_BYTES)? {
                        Some(Fetched::Document(doc)) if doc.is_text => Some(doc.body),
                        _ => None,
                    };
                    Shown {
                        title: meta.title,
                        description: meta.description,
                        frontmatter: meta.frontmatter,
                        size: meta.size,
                        updated: format!("updated {}", date(meta.mtime_ns)),
                        is_text: meta.is_text,
                        body,
                        version: None,
                    }
                }
                Some(number) => {
                    let Some(found) = r.version(&lookup, number)? else {
                        return Ok(None);
                    };
                    let v = found.version;
                    let extracted = v.is_text.then(|| {
                        crate::frontmatter::extract(&String::from_utf8_lossy(&found.body))
                    });
                    Shown {
                        title: v.title,
                        description: extracted.as_ref().and_then(|e| e.description.clone()),
                        frontmatter: extracted.and_then(|e| e.frontmatter).map(|f| f.to_string()),
                        size: v.size,
                        updated: v.committed_ms.map_or_else(
                            || "imported at a time not recorded".to_string(),
                            |ms| format!("imported {}", date_ms(ms)),
                        ),
                        is_text: v.is_text,
                        body: (v.is_text && v.size <= MAX_RENDERED_BYTES).then_some(found.body),
                        version: Some((number, history.first().map_or(number, |h| h.number))),
                    }
                }
            };
            // Mentions link where the store resolved them: the current
            // document's (a past version's mentions the current text no
            // longer makes stay text).
            let mentions = match shown.body {
                Some(_) => mention_targets(r, &lookup)?,
                None => HashMap::new(),
            };
            let rendered = shown.body.as_ref().map(|body| {
                let text = String::from_utf8_lossy(body);
                let markdown = crate::frontmatter::split(&text).map_or(&*text, |(_, body)| body);
                render::render(
                    &lookup,
                    markdown,
                    &shown.title,
                    |k| r.exists(k).unwrap_or(false),
                    &mentions,
                )
            });
            // A past version's page never changes: no backlinks, which do.
            let backlinks = match version {
                None => Some(backlinks_page(r, &lookup, backlinks_after.as_ref())?),
                Some(_) => None,
            };
            Ok(Some((seq, shown, history, rendered, backlinks)))
        })
    })
    .await;
    let (seq, shown, history, markdown, backlinks) = match answered {
        Ok(Some(found)) => found,
        Ok(None) => return missing(&viewer, areas, key, version).await,
        Err(e) => return internal(e),
    };
    let folders = key.id.rsplit_once('/').map_or("", |(folders, _)| folders);
    let (html, toc) = match markdown {
        Some(rendered) => (Some(rendered.html), rendered.headings),
        None => (None, Vec::new()),
    };
    let path = uri_path(&key);
    let (uri, raw_href, watch) = match shown.version {
        // A version never changes: its page does not follow imports.
        Some((number, _)) => (
            uri::format_versioned(&key, number),
            format!("/raw/{path}?version={number}"),
            String::new(),
        ),
        None => (
            uri::format(&key),
            format!("/raw/{path}"),
            format!("doc:{key}"),
        ),
    };
    let history_more = history.len() > HISTORY_SHOWN;
    let edit_href = (viewer.writer.is_some()
        && principal.grants.can(Verb::Write, &key)
        && shown.version.is_none()
        && html.is_some())
    .then(|| format!("/edit/{path}"));
    let page = DocPage {
        chrome: Chrome::new(PageSeq::seen(seq, areas.is_some()), watch),
        crumbs: crumbs(key.prefix, folders),
        uri,
        source_path: format!("{key}.md"),
        title: shown.title.clone(),
        description: shown.description.clone(),
        size: human_size(shown.size),
        bytes: shown.size,
        updated: shown.updated.clone(),
        frontmatter: frontmatter_rows(shown.frontmatter.as_deref()),
        toc,
        too_large: html.is_none() && shown.is_text,
        html,
        source: shown.body.map(|b| String::from_utf8_lossy(&b).into_owned()),
        raw_href,
        version: shown.version,
        current_href: doc_path(&key),
        history: history_rows(
            &key,
            &history[..history.len().min(HISTORY_SHOWN)],
            shown.version.map(|v| v.0),
        ),
        history_more,
        backlinks: backlinks.map(|(page, more)| backlinks_panel(&key, page, more, resumed)),
        key_text: key.to_string(),
        edit_href,
    };
    rendered(StatusCode::OK, page.render())
}

/// Versions listed on a document page.
const HISTORY_SHOWN: usize = 50;

/// One version in a document's history panel.
struct HistoryRow {
    number: u32,
    href: Option<String>,
    time: String,
    size: String,
    title: String,
    removed: bool,
    current: bool,
    /// This version is the page being shown.
    shown: bool,
    /// The diff with the version with bytes before it.
    diff_href: Option<String>,
}

fn history_rows(key: &DocKey, versions: &[Version], shown: Option<u32>) -> Vec<HistoryRow> {
    let path = uri_path(key);
    versions
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let previous = versions[i + 1..].iter().find(|p| !p.removed());
            HistoryRow {
                number: v.number,
                href: (!v.removed()).then(|| format!("/doc/{path}?version={}", v.number)),
                time: v.committed_ms.map_or_else(|| "—".to_string(), date_ms),
                size: human_size(v.size),
                title: v.title.clone(),
                removed: v.removed(),
                current: v.current,
                shown: shown == Some(v.number) || (shown.is_none() && v.current),
                diff_href: match previous {
                    Some(p) if !v.removed() => {
                        Some(format!("/diff/{path}?from={}&to={}", p.number, v.number))
                    }
                    _ => None,
                },
            }
        })
        .collect()
}

struct HitRow {
    href: String,
    uri: String,
    title: String,
    /// Escaped, with the matched terms in `<mark>`.
    snippet: String,
}

#[derive(Template)]
#[template(path = "search.html")]
struct SearchPage {
    chrome: Chrome,
    under: String,
    where_text: String,
    error: Option<String>,
    searched: bool,
    total: u64,
    hits: Vec<HitRow>,
    next_href: Option<String>,
}

/// A snippet's `**term**` marks as `<mark>`, everything else escaped.
fn marked(snippet: &str) -> String {
    let mut out = String::new();
    for (i, part) in snippet.split("**").enumerate() {
        if i % 2 == 1 {
            out.push_str("<mark>");
            out.push_str(&escape(part));
            out.push_str("</mark>");
        } else {
            out.push_str(&escape(part));
        }
    }
    out
}

/// GET `/search?q=&under=&where=&cursor=` for a browser: the search form and
/// a page of hits with snippets, among the documents `principal` may search
/// (its hits and total counted in the store's query). `where` takes one or
/// more `KEY=VALUE` separated by spaces or repeated.
pub async fn search_page(
    store: Store,
    principal: Arc<Principal>,
    pairs: Vec<(String, String)>,
) -> Response {
    let (mut query, mut under_text, mut where_texts, mut cursor) =
        (String::new(), String::new(), Vec::new(), None);
    for (name, value) in pairs {
        match name.as_str() {
            "q" => query = value,
            "under" => under_text = value.trim().to_string(),
            "where" => where_texts.extend(split_filters(&value)),
            "cursor" if !value.is_empty() => cursor = Some(value),
            _ => {}
        }
    }
    let parsed = (|| -> Result<Search, SearchError> {
        let under = match under_text.as_str() {
            "" => None,
            text => Some(Under::parse(text)?),
        };
        let filters = where_texts
            .iter()
            .map(|f| Filter::parse(f))
            .collect::<Result<Vec<_>, _>>()?;
        Search::new(query.clone(), under, filters)
    })();
    let searched = !query.trim().is_empty() || !under_text.is_empty() || !where_texts.is_empty();
    let mut page = SearchPage {
        // Live once there are results (and their sequence), below.
        chrome: Chrome::new(PageSeq::STILL, String::new()),
        under: under_text.clone(),
        where_text: where_texts.join(" "),
        error: None,
        searched: false,
        total: 0,
        hits: Vec::new(),
        next_href: None,
    };
    page.chrome.query = query.clone();
    let search = match parsed {
        Ok(search) if searched => search,
        Ok(_) => return rendered(StatusCode::OK, page.render()),
        Err(e) => {
            page.error = Some(e.to_string());
            return rendered(StatusCode::BAD_REQUEST, page.render());
        }
    };
    let resume = match cursor
        .as_deref()
        .map(|c| cursor::decode_search(c, &search.fingerprint()))
    {
        None => None,
        Some(Ok(resume)) => Some(resume),
        Some(Err(e)) => {
            page.error = Some(SearchError::from(e).to_string());
            return rendered(StatusCode::BAD_REQUEST, page.render());
        }
    };
    let lookup = search.clone();
    let answered = read(&store, principal.grants.search_filter(), move |r| {
        Ok((
            r.seq()?,
            r.search(&lookup, resume.as_ref(), search::DEFAULT_LIMIT)?,
        ))
    })
    .await;
    let (seq, found) = match answered {
        Ok(answer) => answer,
        Err(e) => return internal(e),
    };
    // The sequence as the page's live updates (`/events`, read areas) show it.
    page.chrome.seq = PageSeq::seen(seq, principal.grants.read_filter().is_some());
    page.chrome.watch = "*".to_string();
    page.searched = true;
    page.total = found.total;
    page.hits = found.hits.iter().map(hit_row).collect();
    page.next_href = found.next.as_ref().map(|next| {
        let mut href = format!("/search?q={}", encode_query(&query));
        if !under_text.is_empty() {
            href.push_str(&format!("&under={}", encode_query(&under_text)));
        }
        for filter in &where_texts {
            href.push_str(&format!("&where={}", encode_query(filter)));
        }
        href.push_str(&format!(
            "&cursor={}",
            encode_query(&cursor::encode_search(&search.fingerprint(), next))
        ));
        href
    });
    rendered(StatusCode::OK, page.render())
}

/// The `where` box: `status=open owner=Priya Raman` → `status=open`,
/// `owner=Priya Raman`. A word with `=` starts a filter; other words belong
/// to the value before them.
fn split_filters(text: &str) -> Vec<String> {
    let mut filters: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        match filters.last_mut() {
            Some(last) if !word.contains('=') => {
                last.push(' ');
                last.push_str(word);
            }
            _ => filters.push(word.to_string()),
        }
    }
    filters
}

fn hit_row(hit: &Hit) -> HitRow {
    HitRow {
        href: doc_path(&hit.key),
        uri: uri::format(&hit.key),
        title: hit.title.clone(),
        snippet: marked(&hit.snippet),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_snippets_and_frontmatter() {
        assert_eq!(human_size(999), "999 B");
        assert_eq!(human_size(1234), "1.2 KB");
        assert_eq!(human_size(5_600_000), "5.6 MB");
        assert_eq!(
            marked("a <b> **term** & **x"),
            "a &lt;b&gt; <mark>term</mark> &amp; <mark>x</mark>"
        );
        assert_eq!(
            frontmatter_rows(Some(r#"{"status":"open","tags":["a","b"],"n":3}"#)),
            [
                ("n".to_string(), "3".to_string()),
                ("status".to_string(), "open".to_string()),
                ("tags".to_string(), "a, b".to_string()),
            ]
        );
        assert_eq!(date(0), "1970-01-01 00:00 UTC");
        assert_eq!(
            split_filters(" status=open  owner=Priya Raman tags=x"),
            ["status=open", "owner=Priya Raman", "tags=x"]
        );
        assert_eq!(split_filters("loose words"), ["loose words"]);
    }
}
