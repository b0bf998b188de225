//! The `links` tool: a document's links (where each points, whether that document exists) and its backlinks (which documents link to it, on which line, with the line's text), paged: its own links first, then its backlinks.

use rmcp::model::{CallToolResult, Tool};
use serde_json::{Map, Value, json};

use super::read::{declared, integer, missing, string, uri_argument};
use super::{failed, unknown_arguments};
use crate::cursor::{self, LinksResume};
use crate::links;
use crate::mcp::Caller;
use crate::store::{InLink, OutLink};
use crate::uri;

pub const LINKS: &str = "links";

/// Links per page.
const DEFAULT_LIMIT: usize = 50;
const MAX_LIMIT: usize = 200;

pub fn tool() -> Tool {
    let input = json!({
        "type": "object",
        "properties": {
            "uri": {"type": "string", "description": "The document: orchestra://{prefix}/{id}."},
            "direction": {"type": "string", "enum": ["out", "in", "both"], "default": "both",
                "description": "out: the links it holds; in: the documents that link to it; both: its links, then its backlinks."},
            "cursor": {"type": "string", "description": "The nextCursor of the previous page."},
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT, "description": "Links per page."},
        },
        "required": ["uri"],
        "additionalProperties": false,
    });
    let output = json!({
        "type": "object",
        "properties": {
            "uri": {"type": "string"},
            "links": {"type": "array", "items": {"type": "object", "properties": {
                "line": {"type": "integer"},
                "target": {"type": "string"},
                "exists": {"type": "boolean"},
                "mention": {"type": "boolean"},
                "text": {"type": "string"},
            }, "required": ["line", "target", "exists", "mention", "text"]}},
            "backlinks": {"type": "array", "items": {"type": "object", "properties": {
                "source": {"type": "string"},
                "line": {"type": "integer"},
                "mention": {"type": "boolean"},
                "text": {"type": "string"},
                "context": {"type": "string"},
            }, "required": ["source", "line", "mention", "text", "context"]}},
            "nextCursor": {"type": "string"},
        },
        "required": ["uri", "links", "backlinks"],
    });
    declared(
        LINKS,
        "Links and backlinks",
        "What a document links to (Markdown links, orchestra:// URIs, relative links to other documents, bare \
         ids such as FEAT-004), with whether each target exists, and which documents link to it, each with \
         its line: to find what depends on a document before changing it, or what it depends on.",
        input,
        output,
    )
}

/// Which links a call asks for.
#[derive(Clone, Copy, PartialEq)]
enum Direction {
    Out,
    In,
    Both,
}

/// A `links` call.
pub fn call(
    ctx: &Caller,
    protocol: &str,
    arguments: &Map<String, Value>,
) -> anyhow::Result<CallToolResult> {
    let parsed = (|| -> Result<_, String> {
        unknown_arguments(arguments, &["uri", "direction", "cursor", "limit"])?;
        let key = uri::parse(uri_argument(arguments)?).map_err(|e| format!("invalid uri: {e}"))?;
        let direction = match string(arguments, "direction")? {
            None | Some("both") => Direction::Both,
            Some("out") => Direction::Out,
            Some("in") => Direction::In,
            Some(other) => {
                return Err(format!(
                    "direction must be \"out\", \"in\" or \"both\", not {other:?}"
                ));
            }
        };
        let resume = string(arguments, "cursor")?
            .map(|c| cursor::decode_links(c, &key).map_err(|e| e.to_string()))
            .transpose()?;
        let limit = match integer(arguments, "limit", 1)? {
            None => DEFAULT_LIMIT,
            Some(n) if n as usize <= MAX_LIMIT => n as usize,
            Some(_) => return Err(format!("limit must be an integer from 1 to {MAX_LIMIT}")),
        };
        Ok((key, direction, resume, limit))
    })();
    let (key, direction, resume, limit) = match parsed {
        Ok(parsed) => parsed,
        Err(message) => return Ok(failed(message)),
    };
    let Some(store) = ctx.store() else {
        return Ok(failed(missing(None, &key)));
    };
    let reader = store.reader()?;
    let page = reader.in_transaction(|| {
        if !reader.exists(&key)? {
            return Ok(None);
        }
        let mut outgoing: Vec<OutLink> = Vec::new();
        let mut incoming: Vec<InLink> = Vec::new();
        let mut next: Option<LinksResume> = None;
        let out_after = match &resume {
            None => Some(None),
            Some(LinksResume::Out(n)) => Some(Some(*n)),
            Some(LinksResume::In(_)) => None,
        };
        if direction != Direction::In
            && let Some(after) = out_after
        {
            // One more than a page tells whether another follows.
            outgoing = reader.links_out(&key, after, limit + 1)?;
            if outgoing.len() > limit {
                outgoing.truncate(limit);
                next = Some(LinksResume::Out(outgoing[limit - 1].n));
            }
        }
        if next.is_none() && direction != Direction::Out {
            let after = match &resume {
                Some(LinksResume::In(Some((source, n)))) => Some((source, *n)),
                _ => None,
            };
            let room = limit - outgoing.len();
            incoming = reader.links_in(&key, after, room + 1)?;
            if incoming.len() > room {
                incoming.truncate(room);
                next = Some(LinksResume::In(
                    incoming.last().map(|l| (l.source.clone(), l.n)),
                ));
            }
        }
        Ok(Some((outgoing, incoming, next)))
    })?;
    let Some((outgoing, incoming, next)) = page else {
        return Ok(failed(missing(Some(&reader), &key)));
    };
    let name = uri::format(&key);
    let mut text = String::new();
    if !outgoing.is_empty() {
        text.push_str(&format!("Links in {name}:\n"));
        for link in &outgoing {
            let state = match (link.exists, link.mention) {
                (false, _) => " (broken: no such document)",
                (true, true) => " (a mention of its id)",
                (true, false) => "",
            };
            text.push_str(&format!(
                "- line {}: {} “{}”{state}\n",
                link.line,
                uri::format(&link.target),
                link.text
            ));
        }
    }
    if !incoming.is_empty() {
        text.push_str(&format!("Linked from (documents that link to {name}):\n"));
        for link in &incoming {
            text.push_str(&format!(
                "- {} line {}: {}\n",
                uri::format(&link.source),
                link.line,
                link.context
            ));
        }
    }
    if outgoing.is_empty() && incoming.is_empty() {
        text.push_str(match (direction, &resume) {
            (_, Some(_)) => "No more links.",
            (Direction::Out, None) => "It links to no document.",
            (Direction::In, None) => "No document links to it.",
            (Direction::Both, None) => "It links to no document, and no document links to it.",
        });
    }
    let mut structured = json!({
        "uri": name,
        "links": outgoing.iter().map(links::out_json).collect::<Vec<_>>(),
        "backlinks": incoming.iter().map(links::in_json).collect::<Vec<_>>(),
    });
    if let Some(next) = &next {
        let next = cursor::encode_links(&key, next);
        text.push_str(&format!(
            "More: call links again with the same arguments and cursor {next:?}."
        ));
        structured["nextCursor"] = Value::from(next);
    }
    Ok(super::result(protocol, text, Vec::new(), structured))
}
