//! The viewer's forms that write, on a server that writes: "Edit" (`/edit/{prefix}/{id…}`: a document's raw text in a textarea, saved with the version it was opened at) and "New" (`/new/{prefix}[/{folder…}]`: a title and a text, the id allocated as the `create` tool does).
//!
//! Both are plain HTML forms rendered on the server and work with
//! JavaScript off. A save is a `write::Writer` request, run off the async
//! threads: `Write` with `if_version` for an edit, `Create` under the
//! listing's folder for a new document. A save that succeeds answers 303 to
//! the document's page; one that is refused renders the form again with the
//! person's text kept in it, and a conflict (the document changed since the
//! version the form was opened at) shows what changed since that version,
//! with the current version in the form, so that saving again is a choice.
//!
//! Both need the caller's grant to write (`Grants::can` on the document,
//! the write areas covering the folder for "New"), on the form and on its
//! POST alike. A caller that may read the document but not write it gets
//! 403 naming the scope it needs (`orchestra:write:features`); one that may
//! not even read it gets the page of a missing document, so that the form
//! does not reveal what exists. A "New" form's folder need not exist: a
//! caller without write on it gets the 403, whatever it may read there.
//! Either answer depends on the grants alone, never on what is stored.
//!
//! Every POST must come from a page of this server (its `Origin` is this
//! server's own, or, without one, `Sec-Fetch-Site: same-origin`): the token
//! lives in a `SameSite=Strict` cookie, and this check is the forms' CSRF
//! protection besides (a page of another port on this machine is same-site
//! but not same-origin). The form pages send `Referrer-Policy: same-origin`,
//! under which a browser sends the real `Origin` of a same-origin POST
//! (under the viewer's `no-referrer` it sends `Origin: null`).
//!
//! Line endings: browsers submit a textarea's text with CRLF line endings,
//! whatever the text had. A document whose first line ends with `\r\n` (as
//! `write::edit` decides) is saved with CRLF throughout; any other is saved
//! with LF, CRLF turned into LF. So an edit in a browser keeps every byte it
//! did not change in a document with one kind of line ending. A new
//! document is saved with LF.

use std::sync::Arc;

use askama::Template;
use axum::Extension;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::diff::classified;
use super::pages::{
    Chrome, Crumb, PageSeq, crumbs, error_page, internal, missing, not_found, read,
};
use super::render::{doc_path, uri_path};
use super::{MAX_RENDERED_BYTES, Viewer, html, key_of_path, under_of};
use crate::access::{Principal, Scope, Verb};
use crate::doc::DocKey;
use crate::search::Under;
use crate::store::Fetched;
use crate::uri;
use crate::write::{Refused, Request as WriteRequest, Written};

/// The largest document the form edits: the largest a page renders.
const MAX_EDITED_BYTES: u64 = MAX_RENDERED_BYTES;
/// The largest diff a conflict shows.
const MAX_CONFLICT_DIFF: usize = 256 * 1024;

/// The limit of a form's body: the largest text, percent-encoded (three
/// bytes a byte at most), and the other fields.
pub(super) fn body_limit() -> DefaultBodyLimit {
    DefaultBodyLimit::max(3 * MAX_EDITED_BYTES as usize + 64 * 1024)
}

#[derive(Template)]
#[template(path = "edit.html")]
struct EditPage {
    chrome: Chrome,
    crumbs: Vec<Crumb>,
    heading: String,
    /// Where the form posts.
    action: String,
    /// Where "Cancel" goes.
    back_href: String,
    /// A new document: the form has a title field.
    new: bool,
    title: String,
    content: String,
    /// The version the text is based on (empty: none known).
    version: String,
    /// `crlf` or `lf`: the line endings the text is saved with.
    newline: &'static str,
    /// What happened to the last save, if it failed.
    notice: Option<String>,
    /// What changed since the version the person opened, on a conflict.
    diff: Vec<(&'static str, String)>,
}

/// A form page: its own referrer policy, so that the browser sends the
/// page's origin with the form (see the module's documentation).
fn form_page(status: StatusCode, page: &EditPage) -> Response {
    match page.render() {
        Ok(body) => {
            let mut response = html(status, body);
            response.headers_mut().insert(
                header::REFERRER_POLICY,
                HeaderValue::from_static("same-origin"),
            );
            response
        }
        Err(e) => internal(e.into()),
    }
}

/// The page of a route that writes on a server that does not.
fn read_only() -> Response {
    error_page(
        StatusCode::NOT_FOUND,
        "Read-only",
        "This server does not change documents: it was started with --read-only, without \
         the project's folder, or over HTTP without credentials (--token-file, --api-keys or --oauth-issuer)."
            .to_string(),
    )
}

/// Whether a POST comes from a page of this server: its `Origin` is this
/// server's own (`http(s)://` and the `Host` the request was sent to),
/// or, when a browser sent no `Origin`, `Sec-Fetch-Site` says
/// `same-origin`. A request that shows neither is refused too: every
/// browser sends one of them with a form.
fn same_origin(headers: &HeaderMap) -> bool {
    let text = |name: header::HeaderName| headers.get(name).and_then(|v| v.to_str().ok());
    let site = text(header::HeaderName::from_static("sec-fetch-site"));
    if site.is_some_and(|site| site != "same-origin") {
        return false;
    }
    match text(header::ORIGIN) {
        Some(origin) => text(header::HOST).is_some_and(|host| {
            ["http://", "https://"].iter().any(|scheme| {
                origin
                    .strip_prefix(scheme)
                    .is_some_and(|rest| !host.is_empty() && rest.eq_ignore_ascii_case(host))
            })
        }),
        None => site == Some("same-origin"),
    }
}

/// The page of a form the caller may not use: 403, naming the scope it
/// needs to `what` (`change orchestra://features/FEAT-001`).
fn needs_scope(scope: Scope, what: &str) -> Response {
    error_page(
        StatusCode::FORBIDDEN,
        "Not allowed",
        format!("To {what}, a credential needs the scope {scope}, which this one does not have."),
    )
}

/// The answer to a caller that may not write `key`, or `None` when it may:
/// 403 naming the scope when it may read the document, else the page of a
/// missing document. The grants alone decide which, not the store.
async fn refused_write(viewer: &Viewer, principal: &Principal, key: &DocKey) -> Option<Response> {
    let grants = &principal.grants;
    if grants.can(Verb::Write, key) {
        return None;
    }
    if !grants.can(Verb::Read, key) {
        return Some(missing(viewer, grants.read_filter(), key.clone(), None).await);
    }
    let scope = Scope {
        verb: Verb::Write,
        area: Some(Under {
            prefix: key.prefix,
            folder: None,
        }),
    };
    Some(needs_scope(scope, &format!("change {}", uri::format(key))))
}

/// The answer to a caller that may not create documents under `under`
/// (its write areas do not cover it), or `None` when it may.
fn refused_new(principal: &Principal, under: &Under) -> Option<Response> {
    if principal.grants.areas(Verb::Write).covers(under) {
        return None;
    }
    let scope = Scope {
        verb: Verb::Write,
        area: Some(under.clone()),
    };
    Some(needs_scope(scope, &format!("add a document to {under}")))
}

fn cross_origin() -> Response {
    tracing::warn!("refused a form: not posted from the viewer's own pages");
    error_page(
        StatusCode::FORBIDDEN,
        "Refused",
        "This form was not sent from this server's own pages: nothing was written.".to_string(),
    )
}

/// The fields of an `application/x-www-form-urlencoded` body; `None` when
/// one is not UTF-8 once decoded.
fn form_fields(body: &[u8]) -> Option<Vec<(String, String)>> {
    let decode = |bytes: &[u8]| {
        let spaced: Vec<u8> = bytes
            .iter()
            .map(|&b| if b == b'+' { b' ' } else { b })
            .collect();
        String::from_utf8(percent_encoding::percent_decode(&spaced).collect()).ok()
    };
    body.split(|&b| b == b'&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (name, value) = match pair.iter().position(|&b| b == b'=') {
                Some(i) => (&pair[..i], &pair[i + 1..]),
                None => (pair, &[][..]),
            };
            Some((decode(name)?, decode(value)?))
        })
        .collect()
}

/// The form of a POST, or the status and message of why there is none.
fn posted_form(
    headers: &HeaderMap,
    body: &[u8],
) -> Result<Vec<(String, String)>, (StatusCode, &'static str)> {
    let urlencoded = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| {
            t.trim_start()
                .to_ascii_lowercase()
                .starts_with("application/x-www-form-urlencoded")
        });
    if !urlencoded {
        return Err((
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "A form is sent as application/x-www-form-urlencoded.",
        ));
    }
    form_fields(body).ok_or((StatusCode::BAD_REQUEST, "The form's text is not UTF-8."))
}

fn bad_form((status, message): (StatusCode, &'static str)) -> Response {
    error_page(status, "Bad request", message.to_string())
}

fn field<'f>(fields: &'f [(String, String)], name: &str) -> Option<&'f str> {
    fields
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

/// Whether a text's line endings are CRLF: its first line ends with
/// `\r\n` (as `write::edit` decides).
fn is_crlf(text: &str) -> bool {
    text.find('\n').is_some_and(|i| text[..i].ends_with('\r'))
}

/// `text` with every line ending CRLF (`crlf`) or LF.
fn with_line_endings(text: &str, crlf: bool) -> String {
    let lf = text.replace("\r\n", "\n");
    match crlf {
        true => lf.replace('\n', "\r\n"),
        false => lf,
    }
}

fn newline_of(crlf: bool) -> &'static str {
    match crlf {
        true => "crlf",
        false => "lf",
    }
}

/// Runs a write off the async threads (it takes a file lock and fsyncs).
async fn apply(viewer: &Viewer, request: WriteRequest) -> anyhow::Result<Result<Written, Refused>> {
    let Some(writer) = viewer.writer.clone() else {
        anyhow::bail!("the server does not write");
    };
    tokio::task::spawn_blocking(move || writer.apply(request)).await?
}

/// A save that failed for the machine (the disk, the database): logged,
/// and said on the form, whose text is kept.
fn failed(e: &anyhow::Error) -> (StatusCode, String) {
    if crate::store::is_unavailable(e) {
        tracing::warn!("viewer: a save failed: {e:#}");
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            "Not saved: the database cannot be reached just now. Your text is below; try again shortly."
                .to_string(),
        );
    }
    tracing::error!("viewer: a save failed: {e:#}");
    (
        StatusCode::INTERNAL_SERVER_ERROR,
        "Not saved: the server could not write the document (its log says why). Your text is below."
            .to_string(),
    )
}

/// The crumbs above a document's form.
fn doc_crumbs(key: &DocKey) -> Vec<Crumb> {
    let folders = key.id.rsplit_once('/').map_or("", |(folders, _)| folders);
    crumbs(key.prefix, folders)
}

/// GET `/edit/{prefix}/{id…}`: the document's text in a form, with the
/// version it is at, for a caller that may write it.
pub(super) async fn edit_form(
    State(viewer): State<Arc<Viewer>>,
    Extension(principal): Extension<Arc<Principal>>,
    request: Request,
) -> Response {
    if viewer.writer.is_none() {
        return read_only();
    }
    let Some(key) = key_of_path(request.uri().path(), "/edit/") else {
        return not_found("That is not a document path: /edit/{prefix}/{id}.").await;
    };
    if let Some(refusal) = refused_write(&viewer, &principal, &key).await {
        return refusal;
    }
    let lookup = key.clone();
    let areas = principal.grants.read_filter();
    let fetched = read(&viewer.store, areas.clone(), move |r| {
        r.get(&lookup, MAX_EDITED_BYTES)
    })
    .await;
    let doc = match fetched {
        Ok(Some(Fetched::Document(doc))) => doc,
        Ok(Some(Fetched::TooLarge { size })) => {
            return error_page(
                StatusCode::PAYLOAD_TOO_LARGE,
                "Too large to edit here",
                format!(
                    "The document is {size} bytes; the form edits up to {MAX_EDITED_BYTES}. Edit its file."
                ),
            );
        }
        Ok(None) => return missing(&viewer, areas, key, None).await,
        Err(e) => return internal(e),
    };
    let text = match (doc.is_text, String::from_utf8(doc.body)) {
        (true, Ok(text)) => text,
        _ => {
            return error_page(
                StatusCode::UNPROCESSABLE_ENTITY,
                "Not text",
                format!(
                    "{} is not UTF-8 text: it cannot be edited here.",
                    uri::format(&key)
                ),
            );
        }
    };
    let page = EditPage {
        chrome: Chrome::new(PageSeq::STILL, String::new()),
        crumbs: doc_crumbs(&key),
        heading: format!("Edit {}", doc.title),
        action: format!("/edit/{}", uri_path(&key)),
        back_href: doc_path(&key),
        new: false,
        title: String::new(),
        newline: newline_of(is_crlf(&text)),
        content: text,
        version: doc.version.map(|v| v.to_string()).unwrap_or_default(),
        notice: None,
        diff: Vec::new(),
    };
    form_page(StatusCode::OK, &page)
}

/// POST `/edit/{prefix}/{id…}` with `content`, `version` and `newline`:
/// the whole text written if the document is still at `version`.
pub(super) async fn save(
    State(viewer): State<Arc<Viewer>>,
    Extension(principal): Extension<Arc<Principal>>,
    headers: HeaderMap,
    request_uri: axum::http::Uri,
    body: Bytes,
) -> Response {
    if !same_origin(&headers) {
        return cross_origin();
    }
    if viewer.writer.is_none() {
        return read_only();
    }
    let Some(key) = key_of_path(request_uri.path(), "/edit/") else {
        return not_found("That is not a document path: /edit/{prefix}/{id}.").await;
    };
    if let Some(refusal) = refused_write(&viewer, &principal, &key).await {
        return refusal;
    }
    let fields = match posted_form(&headers, &body) {
        Ok(fields) => fields,
        Err(refusal) => return bad_form(refusal),
    };
    let Some(posted) = field(&fields, "content") else {
        return error_page(
            StatusCode::BAD_REQUEST,
            "Bad request",
            "The form has no text (content).".to_string(),
        );
    };
    let opened_at = match field(&fields, "version").map(str::trim) {
        None | Some("") => None,
        Some(text) => match text.parse::<u32>() {
            Ok(n) if n >= 1 => Some(n),
            _ => {
                return error_page(
                    StatusCode::BAD_REQUEST,
                    "Bad request",
                    "A version is a number from 1.".to_string(),
                );
            }
        },
    };
    let crlf = field(&fields, "newline") == Some("crlf");
    let content = with_line_endings(posted, crlf);
    let mut page = EditPage {
        chrome: Chrome::new(PageSeq::STILL, String::new()),
        crumbs: doc_crumbs(&key),
        heading: format!("Edit {key}"),
        action: format!("/edit/{}", uri_path(&key)),
        back_href: doc_path(&key),
        new: false,
        title: String::new(),
        content: content.clone(),
        version: opened_at.map(|v| v.to_string()).unwrap_or_default(),
        newline: newline_of(crlf),
        notice: None,
        diff: Vec::new(),
    };
    let written = apply(
        &viewer,
        WriteRequest::Write {
            key: key.clone(),
            content,
            if_version: opened_at,
        },
    )
    .await;
    let status = match written {
        Ok(Ok(written)) => return see_other(&doc_path(&written.key)),
        Ok(Err(refused)) => match opened_at {
            Some(opened) if refused.0.contains("changed since version") => {
                let areas = principal.grants.read_filter();
                match conflict(&viewer, areas, &key, opened, &mut page).await {
                    Ok(status) => status,
                    Err(e) => return internal(e),
                }
            }
            _ => {
                page.notice = Some(format!("Not saved: {refused}. Your text is below."));
                StatusCode::UNPROCESSABLE_ENTITY
            }
        },
        Err(e) => {
            let (status, notice) = failed(&e);
            page.notice = Some(notice);
            status
        }
    };
    form_page(status, &page)
}

/// Fills the form of a save refused because the document changed since
/// version `opened`: the current version in the form, and the diff from
/// `opened` to it.
async fn conflict(
    viewer: &Viewer,
    areas: Option<crate::access::Areas>,
    key: &DocKey,
    opened: u32,
    page: &mut EditPage,
) -> anyhow::Result<StatusCode> {
    let lookup = key.clone();
    let (then, now) = read(&viewer.store, areas, move |r| {
        r.in_transaction(|| {
            let then = r.version(&lookup, opened)?.map(|v| v.body);
            let now = match r.get(&lookup, MAX_EDITED_BYTES)? {
                Some(Fetched::Document(doc)) => Some((doc.version, doc.title, doc.body)),
                _ => None,
            };
            Ok((then, now))
        })
    })
    .await?;
    let Some((Some(version), title, current)) = now else {
        page.notice = Some(format!(
            "Not saved: {} was removed or replaced since you opened it at version {opened}. \
             Your text is below.",
            uri::format(key)
        ));
        return Ok(StatusCode::CONFLICT);
    };
    let diff = crate::write::edit::diff(
        &String::from_utf8_lossy(then.as_deref().unwrap_or_default()),
        &String::from_utf8_lossy(&current),
        &format!("version {opened} (yours was based on it)"),
        &format!("version {version} (now)"),
        MAX_CONFLICT_DIFF,
    );
    page.version = version.to_string();
    page.diff = classified(&diff);
    page.heading = format!("Edit {title}");
    page.notice = Some(format!(
        "Not saved: {} changed since you opened it at version {opened}; it is now version \
         {version}, and what changed is shown below. Your text is kept in the form: bring \
         those changes into it, or save to replace version {version} with your text.",
        uri::format(key)
    ));
    Ok(StatusCode::CONFLICT)
}

/// 303 to `location`: after a save, the browser GETs the document.
fn see_other(location: &str) -> Response {
    let mut response = StatusCode::SEE_OTHER.into_response();
    if let Ok(value) = HeaderValue::from_str(location) {
        response.headers_mut().insert(header::LOCATION, value);
    }
    response
}

/// The listing a `/new/…` path names: its `Under`, and the `/new/` and
/// `/ls/` paths of it.
fn new_target(path: &str) -> Option<(Under, String, String)> {
    let rest = path.strip_prefix("/new/")?;
    let under = under_of(rest)?;
    let rest = rest.trim_end_matches('/');
    Some((under, format!("/new/{rest}"), format!("/ls/{rest}")))
}

fn new_page(under: &Under, action: String, back_href: String) -> EditPage {
    EditPage {
        chrome: Chrome::new(PageSeq::STILL, String::new()),
        crumbs: crumbs(under.prefix, under.folder.as_deref().unwrap_or_default()),
        heading: format!("New document in {under}"),
        action,
        back_href,
        new: true,
        title: String::new(),
        content: String::new(),
        version: String::new(),
        newline: "lf",
        notice: None,
        diff: Vec::new(),
    }
}

/// GET `/new/{prefix}[/{folder…}]`: the form of a new document there,
/// for a caller that may write there.
pub(super) async fn new_form(
    State(viewer): State<Arc<Viewer>>,
    Extension(principal): Extension<Arc<Principal>>,
    request: Request,
) -> Response {
    if viewer.writer.is_none() {
        return read_only();
    }
    let Some((under, action, back)) = new_target(request.uri().path()) else {
        return not_found("No such prefix or folder: the prefixes are docs, features and notes.")
            .await;
    };
    if let Some(refusal) = refused_new(&principal, &under) {
        return refusal;
    }
    form_page(StatusCode::OK, &new_page(&under, action, back))
}

/// The text a new document is created with: the posted text with LF line
/// endings; with a title but no title of its own (no frontmatter `title`,
/// no heading), the title as its first heading.
fn new_content(title: Option<&str>, text: &str) -> String {
    let text = with_line_endings(text, false);
    match title {
        Some(title) if text.trim().is_empty() => format!("# {title}\n"),
        Some(title) if crate::frontmatter::extract(&text).title.is_none() => {
            format!("# {title}\n\n{text}")
        }
        _ => text,
    }
}

/// POST `/new/{prefix}[/{folder…}]` with `title` and `content`: a document
/// created under the folder, with the id `create` allocates there (the
/// next number of the folder's pattern, else the title's slug).
pub(super) async fn create(
    State(viewer): State<Arc<Viewer>>,
    Extension(principal): Extension<Arc<Principal>>,
    headers: HeaderMap,
    request_uri: axum::http::Uri,
    body: Bytes,
) -> Response {
    if !same_origin(&headers) {
        return cross_origin();
    }
    if viewer.writer.is_none() {
        return read_only();
    }
    let Some((under, action, back)) = new_target(request_uri.path()) else {
        return not_found("No such prefix or folder: the prefixes are docs, features and notes.")
            .await;
    };
    if let Some(refusal) = refused_new(&principal, &under) {
        return refusal;
    }
    let fields = match posted_form(&headers, &body) {
        Ok(fields) => fields,
        Err(refusal) => return bad_form(refusal),
    };
    let title = field(&fields, "title")
        .map(|t| t.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|t| !t.is_empty());
    let text = field(&fields, "content").unwrap_or_default();
    let mut page = new_page(&under, action, back);
    page.title = title.clone().unwrap_or_default();
    page.content = with_line_endings(text, false);
    let folder = under
        .folder
        .as_deref()
        .unwrap_or_default()
        .trim_end_matches('/')
        .to_string();
    let written = apply(
        &viewer,
        WriteRequest::Create {
            key: None,
            under: Some((under.prefix, folder)),
            content: new_content(title.as_deref(), text),
            title,
        },
    )
    .await;
    let status = match written {
        Ok(Ok(written)) => return see_other(&doc_path(&written.key)),
        Ok(Err(refused)) => {
            page.notice = Some(format!("Not created: {refused}. Your text is below."));
            StatusCode::UNPROCESSABLE_ENTITY
        }
        Err(e) => {
            let (status, notice) = failed(&e);
            page.notice = Some(notice);
            status
        }
    };
    form_page(status, &page)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check_form(body: &str, expected: Option<&[(&str, &str)]>) {
        let expected = expected.map(|pairs| {
            pairs
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect::<Vec<_>>()
        });
        assert_eq!(form_fields(body.as_bytes()), expected, "{body:?}");
    }

    #[test]
    fn forms_are_decoded_as_browsers_encode_them() {
        check_form("", Some(&[]));
        check_form(
            "content=a+b%0D%0Ac&version=3",
            Some(&[("content", "a b\r\nc"), ("version", "3")]),
        );
        check_form("title=Caf%C3%A9&x", Some(&[("title", "Café"), ("x", "")]));
        check_form(
            "plus=%2B&eq=a%3Db=c",
            Some(&[("plus", "+"), ("eq", "a=b=c")]),
        );
        check_form("bad=%FF", None);
    }

    #[test]
    fn line_endings_follow_the_document() {
        let cases = [
            // (opened text, posted text, saved text)
            ("a\nb\n", "a\r\nb\r\nc\r\n", "a\nb\nc\n"),
            ("a\r\nb\r\n", "a\r\nb\r\nc\r\n", "a\r\nb\r\nc\r\n"),
            ("a\r\nb\r\n", "a\nb\n", "a\r\nb\r\n"),
            ("one line", "one line\r\ntwo", "one line\ntwo"),
            ("", "x", "x"),
        ];
        for (opened, posted, saved) in cases {
            assert_eq!(
                with_line_endings(posted, is_crlf(opened)),
                saved,
                "{opened:?}"
            );
        }
    }

    #[test]
    fn only_the_servers_own_pages_may_post() {
        let cases: [(&[(&str, &str)], bool); 9] = [
            (&[("origin", "http://127.0.0.1:8080")], true),
            (&[("origin", "http://LOCALHOST:8080")], true),
            (&[("origin", "https://127.0.0.1:8080")], true),
            (&[("sec-fetch-site", "same-origin")], true),
            (
                &[
                    ("origin", "http://127.0.0.1:8080"),
                    ("sec-fetch-site", "same-origin"),
                ],
                true,
            ),
            // Another port of this machine: same site, not same origin.
            (&[("origin", "http://127.0.0.1:3000")], false),
            (
                &[
                    ("origin", "http://127.0.0.1:8080"),
                    ("sec-fetch-site", "same-site"),
                ],
                false,
            ),
            (&[("origin", "null")], false),
            (&[], false),
        ];
        for (extra, expected) in cases {
            for host in ["127.0.0.1:8080", "localhost:8080"] {
                let mut headers = HeaderMap::new();
                headers.insert(header::HOST, HeaderValue::from_static(host));
                for (name, value) in extra {
                    headers.insert(
                        header::HeaderName::from_static(name),
                        HeaderValue::from_static(value),
                    );
                }
                let origin_host = extra
                    .iter()
                    .find(|(n, _)| *n == "origin")
                    .map(|(_, v)| v.to_ascii_lowercase());
                // An origin names one host: it matches only that one.
                let expected =
                    expected && origin_host.is_none_or(|o| o.ends_with(&format!("//{host}")));
                assert_eq!(same_origin(&headers), expected, "{host} {extra:?}");
            }
        }
    }

    #[test]
    fn a_new_documents_text_gets_the_title_it_lacks() {
        assert_eq!(new_content(Some("Dark mode"), ""), "# Dark mode\n");
        assert_eq!(
            new_content(Some("Dark mode"), "Some text.\r\n"),
            "# Dark mode\n\nSome text.\n"
        );
        assert_eq!(
            new_content(Some("Dark mode"), "# Own title\r\n"),
            "# Own title\n"
        );
        assert_eq!(new_content(None, "Body\n"), "Body\n");
    }
}
