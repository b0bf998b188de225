//! MCP tools: the list the server declares, dispatch of `tools/call` by name, and what every tool's result shares.
//!
//! - `search` (`search.rs`): find documents by their words.
//! - `history` and `diff` (`history.rs`): a document's versions, and what
//!   changed between two of them.
//! - `read`, `outline` and `list` (`read.rs`): documents read in parts, their
//!   headings, and a listing, for clients that call tools but cannot read
//!   resources.
//! - `links` (`links.rs`): a document's links and backlinks.
//! - `create`, `write`, `edit`, `move`, `delete` (`write.rs`): changes to
//!   the documents, declared only by a server that writes.

mod history;
mod links;
mod read;
mod search;
mod write;

use rmcp::model::{
    CallToolResult, ContentBlock, JsonObject, ListToolsResult, Resource, ToolAnnotations,
};
use serde::Deserialize;
use serde_json::{Map, Value};

use super::Caller;
use super::error::RpcError;
use super::handlers::{Freshness, Handled, to_json};
use crate::access::{Grants, Verb};
use crate::doc::DocKey;
use crate::uri;

pub use search::{run, structured};

/// The first version whose clients know `structuredContent` and
/// `resource_link` content; older sessions get both as text.
const STRUCTURED_SINCE: &str = "2025-06-18";

/// The `tools/list` result, with the write tools or without.
pub fn list_json(writes: bool) -> String {
    let mut tools = vec![
        search::tool(),
        read::read_tool(),
        read::outline_tool(),
        read::list_tool(),
        links::tool(),
        history::history_tool(),
        history::diff_tool(),
    ];
    if writes {
        tools.extend(write::tools());
    }
    let mut result = ListToolsResult::with_all_items(tools);
    result.result_type = None;
    serde_json::to_string(&result).unwrap_or_default()
}

fn object(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// A tool's answer in the shape `protocol` knows: from 2025-06-18 the text,
/// one `resource_link` per link and `structuredContent`; before, the text
/// and the JSON as a second text block (neither existed yet).
fn result(protocol: &str, text: String, links: Vec<Resource>, structured: Value) -> CallToolResult {
    result_blocks(protocol, vec![text], links, structured)
}

/// The document named by the `uri` argument, or what to change.
pub(super) fn document(arguments: &Map<String, Value>) -> Result<DocKey, String> {
    let text = match arguments.get("uri") {
        Some(Value::String(text)) => text,
        Some(_) => return Err("uri must be a string: orchestra://{prefix}/{id}".into()),
        None => return Err("uri is required: orchestra://{prefix}/{id}".into()),
    };
    uri::parse(text).map_err(|e| format!("invalid uri: {e}"))
}

/// A message naming the first argument a tool does not take.
pub(super) fn unknown_arguments(
    arguments: &Map<String, Value>,
    known: &[&str],
) -> Result<(), String> {
    match arguments.keys().find(|k| !known.contains(&k.as_str())) {
        Some(other) => Err(format!(
            "unknown argument {other:?}: this tool takes {}",
            known.join(", ")
        )),
        None => Ok(()),
    }
}

/// The annotations of a tool that only reads the backlog, said outright
/// (`destructiveHint` means nothing for a read-only tool; `openWorldHint`
/// defaults to true).
fn read_only() -> ToolAnnotations {
    let mut annotations = ToolAnnotations::default();
    annotations.read_only_hint = Some(true);
    annotations.idempotent_hint = Some(true);
    annotations.open_world_hint = Some(false);
    annotations
}

/// A tool's answer made of several text blocks (the first is the answer
/// itself, whole), then the links, in the shape `protocol` knows, as
/// [`result`] does.
fn result_blocks(
    protocol: &str,
    blocks: Vec<String>,
    links: Vec<Resource>,
    structured: Value,
) -> CallToolResult {
    let mut content: Vec<ContentBlock> = blocks.into_iter().map(ContentBlock::text).collect();
    let mut result = if protocol >= STRUCTURED_SINCE {
        content.extend(links.into_iter().map(ContentBlock::resource_link));
        let mut result = CallToolResult::success(content);
        result.structured_content = Some(structured);
        result
    } else {
        content.push(ContentBlock::text(structured.to_string()));
        CallToolResult::success(content)
    };
    result.result_type = None;
    result
}

/// A tool error: the message, for the agent to correct its call.
fn failed(message: String) -> CallToolResult {
    let mut result = CallToolResult::error(vec![ContentBlock::text(message)]);
    result.result_type = None;
    result
}

#[derive(Deserialize)]
pub struct CallParams {
    name: String,
    #[serde(default)]
    arguments: Option<Map<String, Value>>,
}

/// The verb calling the tool `name` needs; `None` for a name that is no
/// tool (the call answers so).
pub fn verb(name: &str) -> Option<Verb> {
    match name {
        search::SEARCH => Some(Verb::Search),
        history::HISTORY
        | history::DIFF
        | read::READ
        | read::OUTLINE
        | read::LIST
        | links::LINKS => Some(Verb::Read),
        name if write::NAMES.contains(&name) => Some(Verb::Write),
        _ => None,
    }
}

/// The scopes a write tool's call lacks for the documents it names (each
/// a verb on a prefix): empty when the caller may write them all, or when
/// the call is no write or names no valid document (it answers so itself).
pub fn unwritable(name: &str, arguments: &Map<String, Value>, grants: &Grants) -> Vec<String> {
    write::unwritable(name, arguments, grants)
}

pub fn call(ctx: &Caller, version: &str, params: CallParams) -> Result<Handled, RpcError> {
    let arguments = params.arguments.unwrap_or_default();
    let result = match params.name.as_str() {
        search::SEARCH => search::call(ctx, version, &arguments)?,
        history::HISTORY => history::history(ctx, version, &arguments)?,
        history::DIFF => history::diff(ctx, &arguments)?,
        read::READ => read::read(ctx, version, &arguments)?,
        read::OUTLINE => read::outline(ctx, version, &arguments)?,
        read::LIST => read::list(ctx, version, &arguments)?,
        links::LINKS => links::call(ctx, version, &arguments)?,
        name if write::NAMES.contains(&name) => write::call(ctx, version, name, &arguments)?,
        other => {
            return Err(RpcError::invalid_params(format!(
                "unknown tool {other:?}: orchestra's tools are \"search\", \"read\", \"outline\", \"list\", \"links\", \"history\" and \"diff\", \
                 and where the server writes \"create\", \"write\", \"edit\", \"move\" and \"delete\""
            )));
        }
    };
    Ok(Handled {
        json: to_json(&result)?,
        freshness: Freshness::None,
    })
}
