//! The viewer's diff page: `/diff/{prefix}/{id…}?from=A&to=B`, two versions of a document compared line by line, from the same `history::diff` as the `diff` tool.
//!
//! It reads as the caller sees the store: a document outside its read
//! areas has no versions, and gets the answer of one never imported.

use std::sync::Arc;

use askama::Template;
use axum::Extension;
use axum::extract::{Query, Request, State};
use axum::http::StatusCode;
use axum::response::Response;

use super::pages::{Chrome, Crumb, PageSeq, crumbs, error_page, internal, read, rendered};
use super::render::{doc_path, uri_path};
use super::{Viewer, key_of_path};
use crate::access::Principal;
use crate::history::{self, DiffError};

#[derive(serde::Deserialize)]
pub(super) struct DiffQuery {
    from: Option<String>,
    to: Option<String>,
}

#[derive(Template)]
#[template(path = "diff.html")]
struct DiffPage {
    chrome: Chrome,
    crumbs: Vec<Crumb>,
    name: String,
    from: u32,
    to: u32,
    action: String,
    doc_href: String,
    /// (class, text) of each line of the unified diff.
    lines: Vec<(&'static str, String)>,
}

fn number(text: Option<&str>) -> Result<Option<u32>, String> {
    match text.map(str::trim).filter(|t| !t.is_empty()) {
        None => Ok(None),
        Some(t) => match t.parse::<u32>() {
            Ok(n) if n >= 1 => Ok(Some(n)),
            _ => Err(format!(
                "{t:?} is not a version number: versions count from 1."
            )),
        },
    }
}

/// GET `/diff/{prefix}/{id…}?from=A&to=B`: defaults as the `diff` tool (the
/// previous version and the newest).
pub(super) async fn diff(
    State(viewer): State<Arc<Viewer>>,
    Extension(principal): Extension<Arc<Principal>>,
    Query(query): Query<DiffQuery>,
    request: Request,
) -> Response {
    let Some(key) = key_of_path(request.uri().path(), "/diff/") else {
        return error_page(
            StatusCode::NOT_FOUND,
            "Not found",
            "That is not a document path: /diff/{prefix}/{id}.".to_string(),
        );
    };
    let (from, to) = match (number(query.from.as_deref()), number(query.to.as_deref())) {
        (Ok(from), Ok(to)) => (from, to),
        (Err(message), _) | (_, Err(message)) => {
            return error_page(StatusCode::BAD_REQUEST, "Bad version", message);
        }
    };
    let lookup = key.clone();
    let areas = principal.grants.read_filter();
    let partial = areas.is_some();
    let answered = read(&viewer.store, areas, move |r| {
        r.in_transaction(|| Ok((r.seq()?, history::diff(r, &lookup, from, to)?)))
    })
    .await;
    let (seq, diff) = match answered {
        Ok((seq, Ok(diff))) => (seq, diff),
        Ok((_, Err(DiffError(message)))) => {
            return error_page(StatusCode::NOT_FOUND, "No diff", message);
        }
        Err(e) => return internal(e),
    };
    let lines = classified(&diff.text);
    let folders = key.id.rsplit_once('/').map_or("", |(folders, _)| folders);
    let page = DiffPage {
        chrome: Chrome::new(PageSeq::seen(seq, partial), format!("doc:{key}")),
        crumbs: crumbs(key.prefix, folders),
        name: key.to_string(),
        from: diff.from,
        to: diff.to,
        action: format!("/diff/{}", uri_path(&key)),
        doc_href: doc_path(&key),
        lines,
    };
    rendered(StatusCode::OK, page.render())
}

/// Each line of a unified diff with its class in the page: the two header
/// lines (`file`), hunk headers, additions, deletions, context.
pub(super) fn classified(diff: &str) -> Vec<(&'static str, String)> {
    diff.lines()
        .enumerate()
        .map(|(i, line)| {
            // The two header lines; a later `---` or `+++` is content.
            let class = if i < 2 {
                "file"
            } else if line.starts_with("@@") {
                "hunk"
            } else if line.starts_with('+') {
                "add"
            } else if line.starts_with('-') {
                "del"
            } else {
                "same"
            };
            (class, line.to_string())
        })
        .collect()
}
