//! MCP tools: the list the server declares, dispatch of `tools/call` by name, and what every tool's result shares.
//!
//! - `search` (`search.rs`): find documents by their words.
//! - `history` and `diff` (`history.rs`): a document's versions, and what
//!   changed between two of them.

mod history;
mod search;

use rmcp::model::{CallToolResult, ContentBlock, JsonObject, ListToolsResult, Resource};
use serde::Deserialize;
use serde_json::{Map, Value};

use super::Context;
use super::error::RpcError;
use super::handlers::{Freshness, Handled, to_json};

pub use search::{run, structured};

/// The first version whose clients know `structuredContent` and
/// `resource_link` content; older sessions get both as text.
const STRUCTURED_SINCE: &str = "2025-06-18";

/// The `tools/list` result: fixed for the life of the process.
pub fn list_json() -> String {
    let tools = vec![
        search::tool(),
        history::history_tool(),
        history::diff_tool(),
    ];
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
    let mut result = if protocol >= STRUCTURED_SINCE {
        let mut content = vec![ContentBlock::text(text)];
        content.extend(links.into_iter().map(ContentBlock::resource_link));
        let mut result = CallToolResult::success(content);
        result.structured_content = Some(structured);
        result
    } else {
        CallToolResult::success(vec![
            ContentBlock::text(text),
            ContentBlock::text(structured.to_string()),
        ])
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

pub fn call(ctx: &Context, version: &str, params: CallParams) -> Result<Handled, RpcError> {
    let arguments = params.arguments.unwrap_or_default();
    let result = match params.name.as_str() {
        search::SEARCH => search::call(ctx, version, &arguments)?,
        history::HISTORY => history::history(ctx, version, &arguments)?,
        history::DIFF => history::diff(ctx, &arguments)?,
        other => {
            return Err(RpcError::invalid_params(format!(
                "unknown tool {other:?}: orchestra's tools are \"search\", \"history\" and \"diff\""
            )));
        }
    };
    Ok(Handled {
        json: to_json(&result)?,
        freshness: Freshness::None,
    })
}
