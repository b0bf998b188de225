//! The web viewer that `serve --http` serves at `/`: server-rendered pages for people (the backlog, lists per prefix and folder, a document, search), the raw bytes of a document, its assets, and the live-update stream.
//!
//! Every page is HTML rendered on the server from the same store reads as
//! the MCP handlers, readable with JavaScript off; `viewer.js` only
//! enhances (the `/` shortcut, copy buttons, result keys, live updates).
//! Pages are keyset-paged and every read is an index seek, so a page costs
//! the same in a backlog of any size. The Host, Origin and token checks of
//! the HTTP server stand in front of every route here; a server that
//! writes adds the forms of `edit` ("Edit" and "New").
//!
//! A caller sees only what it may read. The HTTP guard puts its
//! `Arc<Principal>` in each request's extensions (and refuses a caller
//! lacking a route's verb outright); every handler here reads through
//! `store.reader()?.seeing(grants.read_filter())` (the search page:
//! `search_filter()`), so listings, counts, links, suggestions and history
//! are filtered in the store's queries, and a document outside the
//! caller's areas gets the very page of a missing one. Live updates drop
//! the changes of documents the caller may not read. With no credential
//! required, a caller has every grant, the filter is `None`, and every
//! page is what it would be without one.

mod diff;
mod edit;
mod pages;
pub mod render;

use std::convert::Infallible;
use std::sync::Arc;

use axum::extract::{Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Extension, Router};
use tokio::sync::broadcast;
use tokio_stream::StreamExt;

use crate::access::{Areas, Lease, Principal, area_name};
use crate::doc::{ChangeKind, DocKey};
use crate::search::Under;
use crate::store::{ChangeBatch, Store};
use crate::uri;
use crate::write::Writer;

pub use pages::search_page;

/// Documents per list page.
pub const LIST_PAGE: usize = 100;
/// The largest document `/raw/` sends, as `resources/read`.
const MAX_RAW_BYTES: u64 = 64 * 1024 * 1024;
/// The largest document a page renders; beyond, it offers the download.
pub const MAX_RENDERED_BYTES: u64 = 4 * 1024 * 1024;
/// Changes one live-update event names; a larger import says "reload".
const EVENT_KEYS: usize = 1000;

const CSS: &str = include_str!("../../assets/viewer/viewer.css");
const JS: &str = include_str!("../../assets/viewer/viewer.js");
const ICON: &str = include_str!("../../assets/icons/orchestra.svg");

/// What the viewer's routes share.
pub struct Viewer {
    store: Store,
    changes: broadcast::Sender<Arc<ChangeBatch>>,
    /// Documents under a prefix or folder, as seen from some read areas
    /// (their names; `None`: everything), by the feed sequence they were
    /// counted at: a count walks its index range, so a list page counts
    /// once per import instead of once per view.
    counts: std::sync::Mutex<std::collections::HashMap<CountKey, (i64, u64)>>,
    /// The writer of the project folder, when the server writes: the
    /// pages offer "Edit" and "New" then.
    writer: Option<Writer>,
}

/// What a count is cached by: the `Under`, and the read areas it was
/// counted for (their names, one each, in key order; `None`: everything),
/// so that no caller is given a count made for another's areas. A list,
/// not the names joined: a name may hold any character an id may (a
/// space, say), so two sets of areas could join to the same text.
type CountKey = (String, Option<Vec<String>>);

fn count_key(under: &Under, areas: Option<&Areas>) -> CountKey {
    (
        under.to_string(),
        areas.map(|areas| areas.as_slice().iter().map(area_name).collect()),
    )
}

/// Counts the viewer keeps; beyond, it forgets them all and starts again.
const COUNTS_KEPT: usize = 1024;

impl Viewer {
    /// The number of documents under `under` that a reader seeing `areas`
    /// sees at `seq`, counted by `count` unless this sequence's count for
    /// those areas is known.
    fn count_under(
        &self,
        under: &Under,
        areas: Option<&Areas>,
        seq: i64,
        count: impl FnOnce() -> anyhow::Result<u64>,
    ) -> anyhow::Result<u64> {
        let key = count_key(under, areas);
        let cached = self
            .counts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
            .copied();
        if let Some((at, n)) = cached
            && at == seq
        {
            return Ok(n);
        }
        let n = count()?;
        let mut counts = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        if counts.len() >= COUNTS_KEPT {
            counts.clear();
        }
        counts.insert(key, (seq, n));
        Ok(n)
    }
}

/// The viewer's routes; the caller puts its request checks in front.
/// With a `writer`, the forms that edit and create documents write.
pub fn router(
    store: Store,
    changes: broadcast::Sender<Arc<ChangeBatch>>,
    writer: Option<Writer>,
) -> Router {
    let viewer = Arc::new(Viewer {
        store,
        changes,
        counts: Default::default(),
        writer,
    });
    Router::new()
        .route("/", get(pages::home))
        .route("/ls", get(|| async { Redirect::to("/") }))
        .route("/ls/{*under}", get(pages::list))
        .route("/doc/{*key}", get(pages::document))
        .route(
            "/edit/{*key}",
            get(edit::edit_form).merge(post(edit::save).layer(edit::body_limit())),
        )
        .route(
            "/new/{*under}",
            get(edit::new_form).merge(post(edit::create).layer(edit::body_limit())),
        )
        .route("/raw/{*key}", get(raw))
        .route("/diff/{*key}", get(diff::diff))
        .route("/events", get(events))
        .route("/assets/{name}", get(asset))
        .with_state(viewer)
}

/// Whether a request for a path both the viewer and the JSON API answer
/// (`/search`) comes from a browser page: it asks for HTML first.
pub fn wants_html(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|accept| accept.trim_start().starts_with("text/html"))
}

/// The headers of every viewer page: no script, style or frame from
/// anywhere but this server, and no content sniffing.
fn page_headers(response: &mut Response) {
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("default-src 'self'; frame-ancestors 'none'"),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
}

/// A rendered page, or the error page.
fn html(status: StatusCode, body: String) -> Response {
    let mut response = (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/html; charset=utf-8"),
        )],
        body,
    )
        .into_response();
    page_headers(&mut response);
    response
}

/// The key named by the rest of a `/doc/…` or `/raw/…` path, read from the
/// request's own path (still percent-encoded) with the URI parser, so that
/// every spelling a URI accepts works here too.
fn key_of_path(request_path: &str, route: &str) -> Option<DocKey> {
    let rest = request_path.strip_prefix(route)?;
    uri::parse(&format!("{}{rest}", uri::SCHEME_PREFIX)).ok()
}

/// GET `/raw/{prefix}/{id…}`: the stored bytes, as a download.
async fn raw(
    State(viewer): State<Arc<Viewer>>,
    Extension(principal): Extension<Arc<Principal>>,
    Query(query): Query<RawQuery>,
    request: Request,
) -> Response {
    let Some(key) = key_of_path(request.uri().path(), "/raw/") else {
        return pages::not_found("not a document path").await;
    };
    let version = match query.version.as_deref().filter(|v| !v.is_empty()) {
        None => None,
        Some(text) => match text.parse::<u32>() {
            Ok(n) if n >= 1 => Some(n),
            _ => return pages::not_found("A version is a number from 1.").await,
        },
    };
    let store = viewer.store.clone();
    let lookup = key.clone();
    let areas = principal.grants.read_filter();
    let seen = areas.clone();
    let fetched = crate::reads::run(move || {
        let reader = store.reader()?.seeing(seen);
        match version {
            None => reader.get(&lookup, MAX_RAW_BYTES),
            Some(number) => Ok(reader.version(&lookup, number)?.map(|found| {
                if found.version.size > MAX_RAW_BYTES {
                    crate::store::Fetched::TooLarge {
                        size: found.version.size,
                    }
                } else {
                    crate::store::Fetched::Document(crate::store::Document {
                        key: lookup.clone(),
                        title: found.version.title,
                        description: None,
                        frontmatter: None,
                        mtime_ns: 0,
                        is_text: found.version.is_text,
                        body: found.body,
                        version: Some(found.version.number),
                        hash: found.version.hash.unwrap_or([0; 32]),
                    })
                }
            })),
        }
    })
    .await;
    let doc = match fetched {
        Ok(Ok(Some(crate::store::Fetched::Document(doc)))) => doc,
        Ok(Ok(Some(crate::store::Fetched::TooLarge { size }))) => {
            return pages::error_page(
                StatusCode::PAYLOAD_TOO_LARGE,
                "Too large",
                format!("The document is {size} bytes, more than the server sends."),
            );
        }
        Ok(Ok(None)) => return pages::missing(&viewer, areas, key, version).await,
        Ok(Err(e)) => return pages::internal(e),
        Err(e) => return pages::internal(e.into()),
    };
    let name = format!("{}.md", key.id.rsplit('/').next().unwrap_or("document"));
    let ascii: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-._".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    let encoded = percent_encoding::utf8_percent_encode(&name, percent_encoding::NON_ALPHANUMERIC);
    let disposition = format!("attachment; filename=\"{ascii}\"; filename*=UTF-8''{encoded}");
    let mut response = (
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/octet-stream"),
            ),
            (
                header::CONTENT_DISPOSITION,
                HeaderValue::from_str(&disposition)
                    .unwrap_or(HeaderValue::from_static("attachment")),
            ),
        ],
        doc.body,
    )
        .into_response();
    page_headers(&mut response);
    response
}

/// GET `/assets/{name}`: the stylesheet, the script and the icon, compiled
/// into the binary, with an ETag so that a browser revalidates cheaply and
/// never keeps a stale copy.
async fn asset(
    axum::extract::Path(name): axum::extract::Path<String>,
    headers: HeaderMap,
) -> Response {
    let (body, content_type) = match name.as_str() {
        "viewer.css" => (CSS, "text/css; charset=utf-8"),
        "viewer.js" => (JS, "text/javascript; charset=utf-8"),
        "icon.svg" => (ICON, "image/svg+xml"),
        _ => return StatusCode::NOT_FOUND.into_response(),
    };
    let etag = format!("\"{}\"", asset_version(body));
    if headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|tag| tag.trim() == etag))
    {
        return (StatusCode::NOT_MODIFIED, [(header::ETAG, etag)]).into_response();
    }
    let mut response = (
        [
            (header::CONTENT_TYPE, content_type.to_string()),
            (header::ETAG, etag),
        ],
        body,
    )
        .into_response();
    page_headers(&mut response);
    response
}

/// A short hash of an asset: its ETag, and the `?v=` of the page links.
fn asset_version(body: &str) -> String {
    blake3::hash(body.as_bytes()).to_hex()[..16].to_string()
}

/// The version of both assets together, for the links in pages.
fn assets_version() -> &'static str {
    static VERSION: std::sync::LazyLock<String> =
        std::sync::LazyLock::new(|| asset_version(&format!("{CSS}{JS}")));
    &VERSION
}

#[derive(serde::Deserialize)]
struct RawQuery {
    version: Option<String>,
}

#[derive(serde::Deserialize)]
struct EventsQuery {
    /// The feed sequence the page was rendered at.
    after: Option<i64>,
}

/// GET `/events`: live updates, one SSE event per import that changed
/// something the caller may read, its id the import's feed sequence. A
/// reconnecting browser sends `Last-Event-ID` and gets what it missed, read
/// from the feed in the database; a page also says which sequence it was
/// rendered at (`after`), so an import between the render and the
/// connection is not lost. Changes to documents outside the caller's read
/// areas are left out, and an import of only those sends nothing; an event
/// that names no key (`all`: a truncated feed, a lagging stream) still goes
/// out. Idle, the stream carries only keep-alive comments. It ends when
/// the caller's credential no longer holds (`access::Lease`).
///
/// The feed's sequence is the store's: it counts the imports of every
/// document. A caller with partial grants is never told it (its events
/// have no id and `seq: null`, its pages an empty `data-seq`), since it would
/// learn when and how often documents it may not read change; so it
/// cannot resume either: `after` and `Last-Event-ID` are ignored, and its
/// stream carries the imports from its connection on, the page refreshing
/// what it shows on each (re)connection instead.
async fn events(
    State(viewer): State<Arc<Viewer>>,
    Extension(principal): Extension<Arc<Principal>>,
    Extension(lease): Extension<Lease>,
    Query(query): Query<EventsQuery>,
    headers: HeaderMap,
) -> Response {
    let areas = principal.grants.read_filter();
    let last_seen = match areas {
        Some(_) => None,
        None => headers
            .get("last-event-id")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<i64>().ok())
            .or(query.after),
    };
    // Subscribe before reading the backlog: nothing falls between the two.
    let receiver = viewer.changes.subscribe();
    let missed = match last_seen {
        Some(after) => {
            let store = viewer.store.clone();
            // The feed and its sequence are the store's, unfiltered: the
            // changes are filtered below, by key.
            let read = crate::reads::run(move || {
                let reader = store.reader()?;
                reader.in_transaction(|| Ok((reader.seq()?, reader.changes_after(after)?)))
            });
            match read.await {
                Ok(Ok((_, batch))) if batch.seq > after => Some(batch),
                // The database is behind what the page saw (it was made
                // again): everything may differ, and the sequence restarts.
                Ok(Ok((current, _))) if current < after => Some(ChangeBatch {
                    seq: current,
                    changes: Vec::new(),
                    truncated: true,
                }),
                Ok(Ok(_)) => None,
                Ok(Err(e)) => return pages::internal(e),
                Err(e) => return pages::internal(e.into()),
            }
        }
        None => None,
    };
    let start_seq = missed.as_ref().map(|b| b.seq).or(last_seen).unwrap_or(0);
    let first = tokio_stream::iter(
        missed
            .and_then(|batch| change_event(&batch, areas.as_ref()))
            .map(Ok),
    );
    let live = tokio_stream::wrappers::BroadcastStream::new(receiver).filter_map(move |item| {
        match item {
            Ok(batch) if batch.seq <= start_seq => None,
            Ok(batch) => change_event(&batch, areas.as_ref()).map(Ok::<_, Infallible>),
            // Fell behind the channel: the page reloads what it shows.
            Err(_) => Some(Ok(Event::default().event("change").data(
                serde_json::json!({ "seq": null, "all": true, "keys": [] }).to_string(),
            ))),
        }
    });
    // As long as the credential holds: revoked or expired, the stream ends.
    let mut response = Sse::new(lease.bound(first.chain(live)))
        .keep_alive(KeepAlive::default())
        .into_response();
    page_headers(&mut response);
    response
}

/// One import's changes that a reader seeing `areas` sees (`None`: all of
/// them) as an SSE event: `{seq, all, keys}`, `all` when the page cannot
/// tell from the keys (a large import, a truncated feed). `None` when the
/// batch names keys but none of them is seen. The feed sequence (the id,
/// and `seq`) only for a reader of everything: for another, no id and
/// `seq: null` (see [`events`]).
fn change_event(batch: &ChangeBatch, areas: Option<&Areas>) -> Option<Event> {
    let seen: Vec<&(ChangeKind, DocKey)> = batch
        .changes
        .iter()
        .filter(|(_, key)| areas.is_none_or(|areas| areas.contains(key)))
        .collect();
    if seen.is_empty() && !batch.truncated && !batch.changes.is_empty() {
        return None;
    }
    let all = batch.truncated || seen.len() > EVENT_KEYS;
    let keys: Vec<String> = if all {
        Vec::new()
    } else {
        seen.iter()
            .map(|(kind, key)| {
                let mark = match kind {
                    ChangeKind::New => '+',
                    ChangeKind::Updated => '~',
                    ChangeKind::Removed => '-',
                };
                format!("{mark}{key}")
            })
            .collect()
    };
    let event = Event::default().event("change");
    Some(match areas {
        None => event
            .id(batch.seq.to_string())
            .data(serde_json::json!({ "seq": batch.seq, "all": all, "keys": keys }).to_string()),
        Some(_) => {
            event.data(serde_json::json!({ "seq": null, "all": all, "keys": keys }).to_string())
        }
    })
}

/// `docs/adr` → the listing's `Under`, from a `/ls/…` path (percent-decoded).
fn under_of(path: &str) -> Option<Under> {
    let decoded = percent_encoding::percent_decode_str(path)
        .decode_utf8()
        .ok()?;
    Under::parse(&decoded).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn areas(names: &[&str]) -> Areas {
        Areas::from_areas(names.iter().map(|name| Under::parse(name).unwrap()))
    }

    #[test]
    fn no_two_sets_of_areas_share_a_count() {
        let under = Under::parse("features").unwrap();
        // Joined with a space, both would read `docs/x features`.
        let one = areas(&["docs/x features"]);
        let two = areas(&["docs/x", "features"]);
        assert_ne!(one, two);
        assert_ne!(count_key(&under, Some(&one)), count_key(&under, Some(&two)));
        assert_ne!(count_key(&under, Some(&one)), count_key(&under, None));
        assert_eq!(
            count_key(&under, Some(&two)),
            count_key(&under, Some(&areas(&["features", "docs/x"])))
        );
    }
}
