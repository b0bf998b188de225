//! Request handlers: plain functions from a store reader and typed params to a serialized MCP result.

use base64::Engine;
use rmcp::model::{
    Annotations, CompleteResult, CompletionInfo, ListResourceTemplatesResult, ListResourcesResult,
    ReadResourceResult, Resource, ResourceContents, ResourceTemplate,
};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::error::RpcError;
use super::session::Era;
use super::{Caller, MIME_TYPE, icons, tools};
use crate::doc::{DocKey, Prefix};
use crate::store::{DocSummary, Fetched, Reader};
use crate::{cursor, uri};

/// How long a client may treat a result as fresh (2026-07-28 `ttlMs`), per method.
///
/// Lists and reads reflect the last import, which another process may commit
/// at any moment, and cost well under a millisecond to ask again: 0, so a
/// client never shows a document older than the store. Templates and
/// capabilities are fixed for the life of the process.
#[derive(Debug, Clone, Copy)]
pub enum Freshness {
    /// Not cacheable in the protocol sense (no `ttlMs` / `cacheScope`).
    None,
    Millis(u64),
}

pub const LIST_TTL: Freshness = Freshness::Millis(0);
pub const READ_TTL: Freshness = Freshness::Millis(0);
pub const TEMPLATES_TTL: Freshness = Freshness::Millis(3_600_000);
pub const DISCOVER_TTL: Freshness = Freshness::Millis(3_600_000);
pub const TOOLS_TTL: Freshness = Freshness::Millis(3_600_000);

/// A handled request: the result object serialized without era decorations,
/// and how fresh it stays.
pub struct Handled {
    pub json: String,
    pub freshness: Freshness,
}

/// Runs one request of `era`. Everything here is blocking (SQLite): call it
/// off the async threads.
pub fn handle(
    ctx: &Caller,
    era: Era,
    version: &str,
    method: &str,
    params: Option<Value>,
) -> Result<Handled, RpcError> {
    let stateless = era == Era::Stateless;
    match method {
        "ping" if era == Era::Handshake => Ok(Handled {
            json: "{}".to_string(),
            freshness: Freshness::None,
        }),
        "server/discover" if stateless => Ok(Handled {
            json: ctx.discover_json.clone(),
            freshness: DISCOVER_TTL,
        }),
        "resources/list" => list(ctx, parse(params)?),
        "resources/read" => read(ctx, parse(params)?, stateless),
        "resources/templates/list" => templates(parse(params)?),
        "completion/complete" => complete(ctx, parse(params)?),
        "tools/list" => Ok(Handled {
            json: ctx.tools_json().to_string(),
            freshness: TOOLS_TTL,
        }),
        "tools/call" => tools::call(ctx, version, parse(params)?),
        // A panic that skips the panic hook: with RUST_BACKTRACE set, the
        // hook's backtrace of a debug build took longer on a loaded machine
        // than the half second a session gives its requests after EOF.
        #[cfg(test)]
        "test/panic" => std::panic::resume_unwind(Box::new("a handler panicked on purpose")),
        _ => Err(RpcError::method_not_found(method)),
    }
}

/// Params of any request: absent params read as `{}`.
pub(super) fn parse<T: DeserializeOwned>(params: Option<Value>) -> Result<T, RpcError> {
    let params = params.unwrap_or_else(|| Value::Object(Default::default()));
    serde_json::from_value(params)
        .map_err(|e| RpcError::invalid_params(format!("invalid params: {e}")))
}

pub(super) fn to_json<T: serde::Serialize>(result: &T) -> Result<String, RpcError> {
    serde_json::to_string(result).map_err(|e| RpcError::internal(format!("cannot serialize: {e}")))
}

#[derive(Deserialize)]
struct ListParams {
    #[serde(default)]
    cursor: Option<String>,
}

fn list(ctx: &Caller, params: ListParams) -> Result<Handled, RpcError> {
    let after = params.cursor.as_deref().map(cursor::decode).transpose()?;
    let (page, next) = match ctx.store() {
        Some(store) => page(&store.reader()?, after.as_ref(), ctx.page_size)?,
        // No project known yet: nothing to list.
        None => (Vec::new(), None),
    };
    let mut result = ListResourcesResult::with_all_items(page.iter().map(resource).collect());
    result.result_type = None;
    result.next_cursor = next.as_ref().map(cursor::encode);
    Ok(Handled {
        json: to_json(&result)?,
        freshness: LIST_TTL,
    })
}

/// One page after `after`, and the key to continue from when there is more.
fn page(
    reader: &Reader,
    after: Option<&DocKey>,
    size: usize,
) -> anyhow::Result<(Vec<DocSummary>, Option<DocKey>)> {
    // One row more than the page tells whether another page follows, so the
    // last page never points to an empty one.
    let mut rows = reader.page(after, size + 1)?;
    let next = if rows.len() > size {
        rows.truncate(size);
        rows.last().map(|d| d.key.clone())
    } else {
        None
    };
    Ok((rows, next))
}

fn resource(doc: &DocSummary) -> Resource {
    let mut annotations = Annotations::default();
    annotations.last_modified = Some(last_modified(doc.mtime_ns));
    let mut resource = Resource::new(uri::format(&doc.key), doc.key.id.clone())
        .with_title(doc.title.clone())
        .with_mime_type(MIME_TYPE)
        .with_size(doc.size)
        .with_annotations(annotations)
        .with_icons(icons::of(doc.key.prefix));
    resource.description = doc.description.clone();
    resource
}

/// ISO 8601 (RFC 3339) in UTC, to the second.
pub(super) fn last_modified(mtime_ns: i64) -> String {
    let nanos = u64::try_from(mtime_ns).unwrap_or(0);
    let time = std::time::UNIX_EPOCH + std::time::Duration::from_nanos(nanos);
    humantime::format_rfc3339_seconds(time).to_string()
}

/// The largest document `resources/read` sends. Its response is a single
/// line: base64 or JSON escaping make it larger still, and a client must
/// hold it whole. Import accepts 32 MiB by default.
pub const MAX_READ_BYTES: u64 = 64 * 1024 * 1024;

#[derive(Deserialize)]
struct ReadParams {
    uri: String,
}

fn read(ctx: &Caller, params: ReadParams, stateless: bool) -> Result<Handled, RpcError> {
    let named = uri::parse_versioned(&params.uri)
        .map_err(|e| RpcError::invalid_params(format!("invalid uri: {e}")))?;
    let key = match named.version {
        None => named.key,
        Some(number) => return read_version(ctx, &params.uri, &named.key, number, stateless),
    };
    let fetched = match ctx.store() {
        Some(store) => store.reader()?.get(&key, MAX_READ_BYTES)?,
        None => None,
    };
    let doc = match fetched {
        None => return Err(RpcError::not_found(&params.uri, stateless)),
        Some(Fetched::TooLarge { size }) => {
            return Err(RpcError::too_large(&params.uri, size, MAX_READ_BYTES));
        }
        Some(Fetched::Document(doc)) => doc,
    };
    let meta = doc.version.map(|version| (version, doc.hash));
    read_result(uri::format(&doc.key), doc.is_text, doc.body, meta)
}

/// The `resources/read` result of one document's bytes: text for UTF-8
/// documents, a base64 blob for the others; with `_meta` naming the version
/// read and its hash (`orchestra/version`, `orchestra/hash`), which a
/// write's `ifVersion` names.
fn read_result(
    uri: String,
    is_text: bool,
    body: Vec<u8>,
    version: Option<(u32, [u8; 32])>,
) -> Result<Handled, RpcError> {
    let meta = version.map(|(number, hash)| {
        let mut meta = serde_json::Map::new();
        meta.insert("orchestra/version".into(), number.into());
        meta.insert(
            "orchestra/hash".into(),
            hash.iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
                .into(),
        );
        rmcp::model::MetaObject(meta)
    });
    let mut contents = if is_text {
        match String::from_utf8(body) {
            Ok(text) => ResourceContents::TextResourceContents {
                uri,
                mime_type: Some(MIME_TYPE.to_string()),
                text,
                meta: None,
            },
            Err(e) => blob(uri, e.as_bytes()),
        }
    } else {
        blob(uri, &body)
    };
    match &mut contents {
        ResourceContents::TextResourceContents { meta: m, .. }
        | ResourceContents::BlobResourceContents { meta: m, .. } => *m = meta,
        _ => {}
    }
    let mut result = ReadResourceResult::new(vec![contents]);
    result.result_type = None;
    Ok(Handled {
        json: to_json(&result)?,
        // A version never changes; the current document is as fresh as a read.
        freshness: READ_TTL,
    })
}

/// `resources/read` of `orchestra://…?version=N`: that version's bytes, as
/// they were imported. A version that does not exist, or a removal, is
/// not found.
fn read_version(
    ctx: &Caller,
    asked: &str,
    key: &crate::doc::DocKey,
    number: u32,
    stateless: bool,
) -> Result<Handled, RpcError> {
    let found = match ctx.store() {
        Some(store) => store.reader()?.version_bytes(key, number)?,
        None => None,
    };
    let Some(found) = found else {
        return Err(RpcError::not_found(asked, stateless));
    };
    if found.size > MAX_READ_BYTES {
        return Err(RpcError::too_large(asked, found.size, MAX_READ_BYTES));
    }
    let hash = *blake3::hash(&found.body).as_bytes();
    read_result(
        uri::format_versioned(key, number),
        found.is_text,
        found.body,
        Some((number, hash)),
    )
}

fn blob(uri: String, bytes: &[u8]) -> ResourceContents {
    ResourceContents::BlobResourceContents {
        uri,
        mime_type: Some(MIME_TYPE.to_string()),
        blob: base64::engine::general_purpose::STANDARD.encode(bytes),
        meta: None,
    }
}

#[derive(Deserialize)]
struct TemplatesParams {
    // Accepted and ignored: the templates fit on one page.
    #[serde(default)]
    #[allow(dead_code)]
    cursor: Option<String>,
}

/// The URI template of a prefix. `{+id}` (reserved expansion) keeps the `/`
/// of nested ids as it is: `docs/{+id}` with `adr/0006` is `docs/adr/0006`;
/// `{?version}` names a past version (left out: the current one).
pub fn template_uri(prefix: Prefix) -> String {
    format!("{}://{}/{{+id}}{{?version}}", uri::SCHEME, prefix.as_str())
}

fn templates(_params: TemplatesParams) -> Result<Handled, RpcError> {
    let templates = Prefix::ALL
        .into_iter()
        .map(|prefix| {
            let (title, description) = match prefix {
                Prefix::Docs => (
                    "Documentation page",
                    "A page of the project's documentation, by its path below docs/ without .md (e.g. adr/0006)",
                ),
                Prefix::Features => (
                    "Feature",
                    "A feature of the backlog, by its id (the file name below features/ without .md, e.g. FEAT-001)",
                ),
                Prefix::Notes => (
                    "Note",
                    "A note, by its path below notes/ without .md",
                ),
            };
            ResourceTemplate::new(template_uri(prefix), prefix.as_str())
                .with_title(title)
                .with_description(description)
                .with_mime_type(MIME_TYPE)
                .with_icons(icons::of(prefix))
        })
        .collect();
    let mut result = ListResourceTemplatesResult::with_all_items(templates);
    result.result_type = None;
    Ok(Handled {
        json: to_json(&result)?,
        freshness: TEMPLATES_TTL,
    })
}

#[derive(Deserialize)]
struct CompleteParams {
    #[serde(rename = "ref")]
    reference: CompleteRef,
    argument: CompleteArgument,
    #[serde(default)]
    context: Option<CompleteContext>,
}

#[derive(Deserialize)]
struct CompleteRef {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    uri: Option<String>,
}

#[derive(Deserialize)]
struct CompleteArgument {
    name: String,
    value: String,
}

/// The values of the template's other arguments (2025-06-18 on).
#[derive(Deserialize, Default)]
struct CompleteContext {
    #[serde(default)]
    arguments: std::collections::HashMap<String, String>,
}

/// At most this many values per completion (the protocol's limit).
const MAX_COMPLETIONS: usize = CompletionInfo::MAX_VALUES;

fn complete(ctx: &Caller, params: CompleteParams) -> Result<Handled, RpcError> {
    if params.reference.kind != "ref/resource" {
        return Err(RpcError::invalid_params(format!(
            "cannot complete a {}: orchestra has no prompts, only resource templates",
            params.reference.kind
        )));
    }
    let template = params.reference.uri.unwrap_or_default();
    let prefix = Prefix::ALL
        .into_iter()
        // Also the template as it was before `{?version}`.
        .find(|p| {
            template_uri(*p) == template
                || template_uri(*p).strip_suffix("{?version}") == Some(&template)
        })
        .ok_or_else(|| {
            RpcError::invalid_params(format!("unknown resource template {template:?}"))
        })?;
    let (values, total) = match params.argument.name.as_str() {
        "id" => match ctx.store() {
            Some(store) => {
                store
                    .reader()?
                    .complete_ids(prefix, &params.argument.value, MAX_COMPLETIONS)?
            }
            None => (Vec::new(), 0),
        },
        // The versions of the document named by the `id` given so far,
        // newest first.
        "version" => {
            let id = params
                .context
                .unwrap_or_default()
                .arguments
                .remove("id")
                .filter(|id| crate::doc::is_valid_id(id));
            match (id, ctx.store()) {
                (Some(id), Some(store)) => {
                    let key = crate::doc::DocKey::new(prefix, id);
                    let (numbers, total) = store.reader()?.complete_versions(
                        &key,
                        &params.argument.value,
                        MAX_COMPLETIONS,
                    )?;
                    (numbers.iter().map(u32::to_string).collect(), total)
                }
                _ => (Vec::new(), 0),
            }
        }
        other => {
            return Err(RpcError::invalid_params(format!(
                "the template {template} has no argument {other:?}, only \"id\" and \"version\""
            )));
        }
    };
    let has_more = total > values.len() as u64;
    let completion = CompletionInfo::with_pagination(
        values,
        Some(u32::try_from(total).unwrap_or(u32::MAX)),
        has_more,
    )
    .map_err(RpcError::internal)?;
    let mut result = CompleteResult::new(completion);
    result.result_type = None;
    Ok(Handled {
        json: to_json(&result)?,
        freshness: Freshness::None,
    })
}
