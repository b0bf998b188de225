//! The `history` and `diff` tools: a document's versions newest first, with a link to each versioned URI, and a unified diff between two versions.

use std::sync::Arc;

use rmcp::model::{CallToolResult, ContentBlock, Resource, Tool};
use serde_json::{Map, Value, json};

use super::{document, failed, object, read_only, result, unknown_arguments};
use crate::cursor;
use crate::doc::DocKey;
use crate::history::{self, DiffError};
use crate::mcp::{Caller, MIME_TYPE, icons};
use crate::uri;

pub const HISTORY: &str = "history";
pub const DIFF: &str = "diff";

/// Versions per page of `history`.
const DEFAULT_LIMIT: usize = 20;
const MAX_LIMIT: usize = 100;

pub fn history_tool() -> Tool {
    let input = json!({
        "type": "object",
        "properties": {
            "uri": {"type": "string", "description": "The document: orchestra://{prefix}/{id}."},
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT,
                      "description": "Versions per page."},
            "cursor": {"type": "string", "description": "The nextCursor of the previous page."},
        },
        "required": ["uri"],
        "additionalProperties": false,
    });
    let output = json!({
        "type": "object",
        "properties": {
            "uri": {"type": "string"},
            "versions": {"type": "array", "items": {"type": "object", "properties": {
                "version": {"type": "integer"},
                "uri": {"type": "string"},
                "time": {"type": ["string", "null"]},
                "size": {"type": "integer"},
                "hash": {"type": ["string", "null"]},
                "title": {"type": "string"},
                "removed": {"type": "boolean"},
                "current": {"type": "boolean"},
            }, "required": ["version", "uri", "size", "title", "removed", "current"]}},
            "nextCursor": {"type": "string"},
        },
        "required": ["uri", "versions"],
    });
    let mut tool = Tool::new(
        HISTORY,
        "The versions of a document, newest first: each import that changed it made one, and a removal is one too. \
         Each version is readable at its own URI (orchestra://…?version=N, with resources/read); use `diff` to see what changed.",
        Arc::new(object(input)),
    )
    .with_title("Document history")
    .with_annotations(read_only());
    tool.output_schema = Some(Arc::new(object(output)));
    tool
}

pub fn diff_tool() -> Tool {
    let input = json!({
        "type": "object",
        "properties": {
            "uri": {"type": "string", "description": "The document: orchestra://{prefix}/{id}."},
            "from": {"type": "integer", "minimum": 1, "description": "The older version [default: the one before `to`]."},
            "to": {"type": "integer", "minimum": 1, "description": "The newer version [default: the newest]."},
        },
        "required": ["uri"],
        "additionalProperties": false,
    });
    Tool::new(
        DIFF,
        "What changed in a document between two versions, as a unified diff (default: the previous version and the newest).",
        Arc::new(object(input)),
    )
    .with_title("Compare two versions")
    .with_annotations(read_only())
}

fn version_argument(arguments: &Map<String, Value>, name: &str) -> Result<Option<u32>, String> {
    match arguments.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => value
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .filter(|&n| n >= 1)
            .map(Some)
            .ok_or_else(|| format!("{name} must be a version number, an integer from 1")),
    }
}

/// A `history` call.
pub fn history(
    ctx: &Caller,
    protocol: &str,
    arguments: &Map<String, Value>,
) -> anyhow::Result<CallToolResult> {
    let parsed = (|| -> Result<(DocKey, usize, Option<u32>), String> {
        unknown_arguments(arguments, &["uri", "limit", "cursor"])?;
        let key = document(arguments)?;
        let limit = match arguments.get("limit") {
            None | Some(Value::Null) => DEFAULT_LIMIT,
            Some(value) => value
                .as_u64()
                .map(|n| n as usize)
                .filter(|n| (1..=MAX_LIMIT).contains(n))
                .ok_or_else(|| format!("limit must be an integer from 1 to {MAX_LIMIT}"))?,
        };
        let before = match arguments.get("cursor") {
            None | Some(Value::Null) => None,
            Some(Value::String(c)) => {
                Some(cursor::decode_history(c, &key).map_err(|e| e.to_string())?)
            }
            Some(_) => return Err("cursor must be a string".into()),
        };
        Ok((key, limit, before))
    })();
    let (key, limit, before) = match parsed {
        Ok(parsed) => parsed,
        Err(message) => return Ok(failed(message)),
    };
    let Some(store) = ctx.store() else {
        return Ok(failed(format!("no history for {}", uri::format(&key))));
    };
    // One more than a page tells whether there is a next one.
    let mut versions = store.reader()?.history(&key, before, limit + 1)?;
    if versions.is_empty() && before.is_none() {
        return Ok(failed(format!(
            "no document {} has ever been imported",
            uri::format(&key)
        )));
    }
    let next = if versions.len() > limit {
        versions.truncate(limit);
        versions
            .last()
            .map(|v| cursor::encode_history(&key, v.number))
    } else {
        None
    };
    let mut structured = json!({
        "uri": uri::format(&key),
        "versions": versions.iter().map(history::version_json).collect::<Vec<_>>(),
    });
    if let Some(next) = &next {
        structured["nextCursor"] = Value::from(next.clone());
    }
    let mut text = format!(
        "{} versions of {}, newest first:\n",
        versions.len(),
        uri::format(&key)
    );
    for v in &versions {
        let when = v
            .committed_ms
            .map(history::time_text)
            .unwrap_or_else(|| "(time not recorded)".into());
        let what = if v.removed() {
            "removed".to_string()
        } else {
            format!("{} bytes, {:?}", v.size, v.title)
        };
        let current = if v.current { " (current)" } else { "" };
        text.push_str(&format!(
            "- version {}{current}: {when}, {what}: {}\n",
            v.number,
            uri::format_versioned(&key, v.number)
        ));
    }
    if let Some(next) = &next {
        text.push_str(&format!("More: call again with cursor {next}\n"));
    }
    let links = versions
        .iter()
        .filter(|v| !v.removed())
        .map(|v| {
            Resource::new(
                uri::format_versioned(&key, v.number),
                format!("{} (version {})", key.id, v.number),
            )
            .with_title(v.title.clone())
            .with_mime_type(MIME_TYPE)
            .with_size(v.size)
            .with_icons(icons::of(key.prefix))
        })
        .collect();
    Ok(result(protocol, text, links, structured))
}

/// A `diff` call.
pub fn diff(ctx: &Caller, arguments: &Map<String, Value>) -> anyhow::Result<CallToolResult> {
    let parsed = (|| -> Result<(DocKey, Option<u32>, Option<u32>), String> {
        unknown_arguments(arguments, &["uri", "from", "to"])?;
        Ok((
            document(arguments)?,
            version_argument(arguments, "from")?,
            version_argument(arguments, "to")?,
        ))
    })();
    let (key, from, to) = match parsed {
        Ok(parsed) => parsed,
        Err(message) => return Ok(failed(message)),
    };
    let Some(store) = ctx.store() else {
        return Ok(failed(format!("no history for {}", uri::format(&key))));
    };
    let reader = store.reader()?;
    let result = match history::diff(&reader, &key, from, to)? {
        Ok(diff) => {
            let text = if diff.text.is_empty() {
                format!(
                    "versions {} and {} of {} are identical",
                    diff.from,
                    diff.to,
                    uri::format(&key)
                )
            } else {
                diff.text
            };
            let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
            result.result_type = None;
            result
        }
        Err(DiffError(message)) => failed(message),
    };
    Ok(result)
}
