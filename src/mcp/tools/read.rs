//! The tools that read, for clients whose models call tools but cannot read resources: `read` (a document or a version, whole or in parts: by lines, by section, under a cap of characters), `outline` (its headings and sections) and `list` (documents in key order, paged).
//!
//! A `read` result's first text block is the document's text and nothing
//! else, so that the parts of a document concatenate to its exact text;
//! when more remains, a second block says where to go on, and so does
//! `structuredContent` (`nextOffset`, `truncated`): a cut is never silent.

use std::sync::Arc;

use rmcp::model::{CallToolResult, Resource, Tool};
use serde_json::{Map, Value, json};

use super::{failed, object, read_only, unknown_arguments};
use crate::cursor;
use crate::doc::DocKey;
use crate::mcp::handlers::MAX_READ_BYTES;
use crate::mcp::handlers::last_modified;
use crate::mcp::{Context, MIME_TYPE};
use crate::parts::outline::{self, Heading};
use crate::parts::{self, Lines, Position, Range};
use crate::search::Under;
use crate::store::{Fetched, Reader};
use crate::uri;

pub const READ: &str = "read";
pub const OUTLINE: &str = "outline";
pub const LIST: &str = "list";

/// Documents per page of `list`.
const DEFAULT_LIMIT: usize = 50;
const MAX_LIMIT: usize = 200;

pub(super) fn declared(
    name: &str,
    title: &str,
    description: &str,
    input: Value,
    output: Value,
) -> Tool {
    let mut tool = Tool::new(
        name.to_string(),
        description.to_string(),
        Arc::new(object(input)),
    )
    .with_title(title)
    .with_annotations(read_only());
    tool.output_schema = Some(Arc::new(object(output)));
    tool
}

pub fn read_tool() -> Tool {
    let input = json!({
        "type": "object",
        "properties": {
            "uri": {"type": "string", "description": "The document, orchestra://{prefix}/{id}, or a past version, orchestra://{prefix}/{id}?version=N."},
            "section": {"type": "string", "description": "Only the section under this heading: its text, or `Parent > Child` (see outline)."},
            "offset": {"type": "integer", "minimum": 1, "description": "The first line to read (from 1; lines as outline numbers them, frontmatter included), or the nextOffset of the previous part."},
            "column": {"type": "integer", "minimum": 0, "description": "The character of line `offset` to start at: the nextColumn of the previous part, when a long line was cut."},
            "limit": {"type": "integer", "minimum": 1, "description": "How many lines to read."},
            "maxChars": {"type": "integer", "minimum": parts::MIN_CHARS, "maximum": parts::MAX_CHARS, "default": parts::MAX_CHARS,
                         "description": "The most characters of text to return; lower it for a client with a smaller limit on a result (Codex: 8000)."},
        },
        "required": ["uri"],
        "additionalProperties": false,
    });
    let output = json!({
        "type": "object",
        "properties": {
            "uri": {"type": "string"},
            "version": {"type": "integer"},
            "hash": {"type": "string"},
            "totalLines": {"type": "integer"},
            "from": {"type": "integer"},
            "to": {"type": "integer"},
            "nextOffset": {"type": "integer"},
            "nextColumn": {"type": "integer"},
            "truncated": {"type": "boolean"},
        },
        "required": ["uri", "totalLines", "from", "to", "truncated"],
    });
    declared(
        READ,
        "Read a document",
        "Read a document of the backlog by its orchestra:// URI (from search, list or links): its exact text, \
         whole or in parts. A result holds at most maxChars characters (40000 by default); when more remains, \
         a second text block and structuredContent say so (truncated, nextOffset): call read again with \
         offset set to nextOffset (and column to nextColumn) for the next part. For a long document, call \
         outline first and read one section at a time (`section`), or read by lines (`offset`, `limit`). \
         Before you rewrite a document, read all of it: never rewrite from a truncated part.",
        input,
        output,
    )
}

pub fn outline_tool() -> Tool {
    let input = json!({
        "type": "object",
        "properties": {
            "uri": {"type": "string", "description": "The document, orchestra://{prefix}/{id} (or ?version=N)."},
        },
        "required": ["uri"],
        "additionalProperties": false,
    });
    let output = json!({
        "type": "object",
        "properties": {
            "uri": {"type": "string"},
            "version": {"type": "integer"},
            "hash": {"type": "string"},
            "size": {"type": "integer"},
            "totalLines": {"type": "integer"},
            "frontmatterKeys": {"type": ["array", "null"], "items": {"type": "string"}},
            "headings": {"type": "array", "items": {"type": "object", "properties": {
                "level": {"type": "integer"},
                "text": {"type": "string"},
                "path": {"type": "string"},
                "line": {"type": "integer"},
                "endLine": {"type": "integer"},
                "lines": {"type": "integer"},
                "bytes": {"type": "integer"},
            }, "required": ["level", "text", "path", "line", "endLine", "lines", "bytes"]}},
            "truncated": {"type": "boolean"},
        },
        "required": ["uri", "size", "totalLines", "headings", "truncated"],
    });
    declared(
        OUTLINE,
        "Outline a document",
        "The headings of a document (level, text, path, the line it starts on, its section's lines and bytes), \
         its frontmatter keys and its size: read a long document by its sections with read's `section`.",
        input,
        output,
    )
}

pub fn list_tool() -> Tool {
    let input = json!({
        "type": "object",
        "properties": {
            "under": {"type": "string", "description": "Only documents under this prefix or folder: `features`, `notes`, `docs`, `docs/adr`."},
            "cursor": {"type": "string", "description": "The nextCursor of the previous page."},
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT, "description": "Documents per page."},
        },
        "additionalProperties": false,
    });
    let output = json!({
        "type": "object",
        "properties": {
            "documents": {"type": "array", "items": {"type": "object", "properties": {
                "uri": {"type": "string"},
                "title": {"type": "string"},
                "description": {"type": "string"},
                "size": {"type": "integer"},
                "updated": {"type": "string"},
                "version": {"type": "integer"},
            }, "required": ["uri", "title", "size", "updated"]}},
            "nextCursor": {"type": "string"},
        },
        "required": ["documents"],
    });
    declared(
        LIST,
        "List documents",
        "The documents of the backlog in key order (prefix, then id), a page at a time: URI, title, description, \
         size, when it last changed, version. To find documents by their words, use search; to read one, read.",
        input,
        output,
    )
}

/// A document's text as a read gives it, with what names its version.
struct Text {
    uri: String,
    version: Option<u32>,
    hash: Option<String>,
    text: String,
}

/// The text `uri_text` names, or the tool error to give instead.
fn text_of(ctx: &Context, uri_text: &str) -> anyhow::Result<Result<Text, String>> {
    let named = match uri::parse_versioned(uri_text) {
        Ok(named) => named,
        Err(e) => return Ok(Err(format!("invalid uri: {e}"))),
    };
    let Some(store) = ctx.store() else {
        return Ok(Err(missing(None, &named.key)));
    };
    let reader = store.reader()?;
    let (uri, body, is_text, version, hash) = match named.version {
        Some(number) => match reader.version(&named.key, number)? {
            Some(found) if !found.version.removed() => {
                let size = found.version.size;
                if size > MAX_READ_BYTES {
                    return Ok(Err(too_large(uri_text, size)));
                }
                let hash = found.version.hash.map(|h| hex(&h));
                let uri = uri::format_versioned(&named.key, number);
                (uri, found.body, found.version.is_text, Some(number), hash)
            }
            _ => {
                return Ok(Err(format!(
                    "{} has no version {number}: call history for the versions there are",
                    uri::format(&named.key)
                )));
            }
        },
        None => {
            let found = reader.in_transaction(|| {
                let doc = reader.get(&named.key, MAX_READ_BYTES)?;
                let meta = reader.meta(&named.key)?;
                let newest = reader.history(&named.key, None, 1)?;
                Ok((doc, meta, newest))
            })?;
            match found {
                (None, ..) => return Ok(Err(missing(Some(&reader), &named.key))),
                (Some(Fetched::TooLarge { size }), ..) => {
                    return Ok(Err(too_large(uri_text, size)));
                }
                (Some(Fetched::Document(doc)), meta, newest) => {
                    let version = newest.first().filter(|v| v.current).map(|v| v.number);
                    let hash = meta.map(|m| hex(&m.hash));
                    (uri::format(&doc.key), doc.body, doc.is_text, version, hash)
                }
            }
        }
    };
    let size = body.len();
    let text = match (is_text, String::from_utf8(body)) {
        (true, Ok(text)) => text,
        _ => {
            return Ok(Err(format!(
                "{uri} is not UTF-8 text but {size} bytes of binary data: get its bytes with resources/read, \
                 which answers with them as a base64 blob"
            )));
        }
    };
    Ok(Ok(Text {
        uri,
        version,
        hash,
        text,
    }))
}

pub(super) fn missing(reader: Option<&Reader>, key: &DocKey) -> String {
    let near = reader
        .and_then(|r| r.nearest(key, 3).ok())
        .unwrap_or_default();
    let mut message = format!("no such document: {}", uri::format(key));
    if !near.is_empty() {
        let near: Vec<String> = near.iter().map(uri::format).collect();
        message.push_str(&format!("; the nearest are {}", near.join(", ")));
    }
    message
}

fn too_large(uri: &str, size: u64) -> String {
    format!("{uri} is {size} bytes, more than the {MAX_READ_BYTES} a read loads")
}

fn hex(hash: &[u8; 32]) -> String {
    hash.iter().map(|b| format!("{b:02x}")).collect()
}

/// An optional integer argument of at least `min`.
pub(super) fn integer(
    arguments: &Map<String, Value>,
    name: &str,
    min: u64,
) -> Result<Option<u64>, String> {
    match arguments.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => value
            .as_u64()
            .filter(|&n| n >= min)
            .map(Some)
            .ok_or_else(|| format!("{name} must be an integer from {min}")),
    }
}

pub(super) fn string<'a>(
    arguments: &'a Map<String, Value>,
    name: &str,
) -> Result<Option<&'a str>, String> {
    match arguments.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(format!("{name} must be a string")),
    }
}

pub(super) fn uri_argument(arguments: &Map<String, Value>) -> Result<&str, String> {
    string(arguments, "uri")?.ok_or_else(|| "uri is required: orchestra://{prefix}/{id}".into())
}

/// The arguments of a `read` call, checked.
struct ReadArguments<'a> {
    uri: &'a str,
    section: Option<&'a str>,
    offset: Option<usize>,
    column: usize,
    limit: Option<usize>,
    max_chars: usize,
}

impl<'a> ReadArguments<'a> {
    fn parse(arguments: &'a Map<String, Value>) -> Result<ReadArguments<'a>, String> {
        unknown_arguments(
            arguments,
            &["uri", "section", "offset", "column", "limit", "maxChars"],
        )?;
        let max_chars = match arguments.get("maxChars") {
            None | Some(Value::Null) => parts::MAX_CHARS,
            Some(value) => value
                .as_u64()
                .map(|n| n as usize)
                .filter(|n| (parts::MIN_CHARS..=parts::MAX_CHARS).contains(n))
                .ok_or_else(|| {
                    format!(
                        "maxChars must be an integer from {} to {}",
                        parts::MIN_CHARS,
                        parts::MAX_CHARS
                    )
                })?,
        };
        Ok(ReadArguments {
            uri: uri_argument(arguments)?,
            section: string(arguments, "section")?,
            offset: integer(arguments, "offset", 1)?.map(|n| n as usize),
            column: integer(arguments, "column", 0)?.unwrap_or(0) as usize,
            limit: integer(arguments, "limit", 1)?.map(|n| n as usize),
            max_chars,
        })
    }
}

/// A `read` call.
pub fn read(
    ctx: &Context,
    protocol: &str,
    arguments: &Map<String, Value>,
) -> anyhow::Result<CallToolResult> {
    let args = match ReadArguments::parse(arguments) {
        Ok(args) => args,
        Err(message) => return Ok(failed(message)),
    };
    let doc = match text_of(ctx, args.uri)? {
        Ok(doc) => doc,
        Err(message) => return Ok(failed(message)),
    };
    Ok(match part(&doc, &args) {
        Ok(answer) => answer.into_result(protocol),
        Err(message) => failed(message),
    })
}

/// One part of a document, and what the result says of it.
struct Part<'a> {
    doc: &'a Text,
    window: parts::Window<'a>,
    total_lines: usize,
    /// Where the caller goes on: where the cap cut, or the line after a
    /// `limit` that ended before the document did.
    next: Option<Position>,
    section: Option<String>,
    /// The last line of the range asked for, when a `limit` set it.
    limited_to: Option<usize>,
    max_chars: usize,
}

fn part<'a>(doc: &'a Text, args: &ReadArguments) -> Result<Part<'a>, String> {
    let lines = Lines::of(&doc.text);
    let total = lines.count();
    let (first, last, section) = match args.section {
        Some(wanted) => {
            let headings = outline::headings(&doc.text, &lines);
            let heading = outline::find(&headings, wanted).map_err(|e| e.to_string())?;
            let index = headings.iter().position(|h| h == heading).unwrap_or(0);
            (
                heading.line,
                heading.end_line,
                Some(outline::path(&headings, index)),
            )
        }
        None => (1, total, None),
    };
    let from = args.offset.unwrap_or(first);
    if total == 0 {
        if from > 1 {
            return Err(format!(
                "offset {from} is past the end: {} is empty",
                doc.uri
            ));
        }
        return Ok(Part {
            doc,
            window: parts::Window {
                text: "",
                from: Position { line: 1, column: 0 },
                to: 0,
                next: None,
            },
            total_lines: 0,
            next: None,
            section,
            limited_to: None,
            max_chars: args.max_chars,
        });
    }
    if from < first || from > last {
        return Err(match &section {
            Some(path) => {
                format!("offset {from} is outside the section {path:?}, lines {first}–{last}")
            }
            None => format!(
                "offset {from} is past the end: {} has {total} lines",
                doc.uri
            ),
        });
    }
    let to = match args.limit {
        Some(limit) => last.min(from.saturating_add(limit - 1)),
        None => last,
    };
    let range = Range {
        from: Position {
            line: from,
            column: args.column,
        },
        to,
        max_chars: args.max_chars,
    };
    let window = parts::window(&doc.text, &lines, range);
    let next = window.next.or_else(|| {
        (section.is_none() && window.to < total).then_some(Position {
            line: window.to + 1,
            column: 0,
        })
    });
    Ok(Part {
        doc,
        window,
        total_lines: total,
        next,
        section,
        limited_to: args.limit.map(|_| to),
        max_chars: args.max_chars,
    })
}

impl Part<'_> {
    fn structured(&self) -> Value {
        let mut value = json!({
            "uri": self.doc.uri,
            "totalLines": self.total_lines,
            "from": self.window.from.line,
            "to": self.window.to,
            "truncated": self.window.truncated(),
        });
        if let Some(version) = self.doc.version {
            value["version"] = Value::from(version);
        }
        if let Some(hash) = &self.doc.hash {
            value["hash"] = Value::from(hash.clone());
        }
        if self.window.from.column > 0 {
            value["fromColumn"] = Value::from(self.window.from.column);
        }
        if let Some(next) = self.next {
            value["nextOffset"] = Value::from(next.line);
            if next.column > 0 {
                value["nextColumn"] = Value::from(next.column);
            }
        }
        if let Some(section) = &self.section {
            value["section"] = Value::from(section.clone());
        }
        value
    }

    /// The sentence that says what this part is and how to go on.
    fn notice(&self) -> Option<String> {
        let next = self.next?;
        let shown = format!(
            "lines {}–{} of {} of {}",
            self.window.from.line, self.window.to, self.total_lines, self.doc.uri
        );
        let mut call = json!({"uri": self.doc.uri, "offset": next.line});
        if next.column > 0 {
            call["column"] = Value::from(next.column);
        }
        if let Some(section) = &self.section {
            call["section"] = Value::from(section.clone());
        }
        // The rest of a range that a limit ended: the lines left of it.
        if let (true, Some(to)) = (self.window.truncated(), self.limited_to) {
            call["limit"] = Value::from(to + 1 - next.line);
        }
        Some(if self.window.truncated() {
            format!(
                "[Truncated at {} characters: this part holds {shown}{}. More remains: call read with {call}.]",
                self.max_chars,
                if next.column > 0 {
                    " (the last one in part)"
                } else {
                    ""
                },
            )
        } else {
            format!("[This part holds {shown}. More follows: call read with {call}.]")
        })
    }

    fn into_result(self, protocol: &str) -> CallToolResult {
        let mut blocks = vec![self.window.text.to_string()];
        blocks.extend(self.notice());
        let link =
            Resource::new(self.doc.uri.clone(), self.doc.uri.clone()).with_mime_type(MIME_TYPE);
        super::result_blocks(protocol, blocks, vec![link], self.structured())
    }
}

/// An `outline` call.
pub fn outline(
    ctx: &Context,
    protocol: &str,
    arguments: &Map<String, Value>,
) -> anyhow::Result<CallToolResult> {
    let uri_text =
        match unknown_arguments(arguments, &["uri"]).and_then(|()| uri_argument(arguments)) {
            Ok(uri) => uri,
            Err(message) => return Ok(failed(message)),
        };
    let doc = match text_of(ctx, uri_text)? {
        Ok(doc) => doc,
        Err(message) => return Ok(failed(message)),
    };
    let lines = Lines::of(&doc.text);
    let headings = outline::headings(&doc.text, &lines);
    let keys = crate::frontmatter::keys(&doc.text);
    let mut text = format!(
        "{}: {} lines, {} bytes, {} headings",
        doc.uri,
        lines.count(),
        doc.text.len(),
        headings.len()
    );
    match &keys {
        Some(keys) if !keys.is_empty() => {
            text.push_str(&format!("; frontmatter keys: {}", keys.join(", ")))
        }
        _ => {}
    }
    text.push('\n');
    // The listing stays under a read's cap: past it, the rest is counted.
    let mut shown = Vec::new();
    let mut truncated = false;
    for (i, heading) in headings.iter().enumerate() {
        let line = heading_line(heading);
        if text.len() + line.len() > parts::MAX_CHARS {
            truncated = true;
            text.push_str(&format!(
                "[{} more headings from line {}: read the document by offset to see them.]\n",
                headings.len() - i,
                heading.line
            ));
            break;
        }
        text.push_str(&line);
        shown.push(json!({
            "level": heading.level,
            "text": heading.text,
            "path": outline::path(&headings, i),
            "line": heading.line,
            "endLine": heading.end_line,
            "lines": heading.end_line + 1 - heading.line,
            "bytes": heading.end - heading.start,
        }));
    }
    let mut structured = json!({
        "uri": doc.uri,
        "size": doc.text.len(),
        "totalLines": lines.count(),
        "frontmatterKeys": keys,
        "headings": shown,
        "truncated": truncated,
    });
    if let Some(version) = doc.version {
        structured["version"] = Value::from(version);
    }
    if let Some(hash) = &doc.hash {
        structured["hash"] = Value::from(hash.clone());
    }
    Ok(super::result(protocol, text, Vec::new(), structured))
}

fn heading_line(heading: &Heading) -> String {
    format!(
        "{:>6}: {} {} ({} lines, {} bytes)\n",
        heading.line,
        "#".repeat(heading.level as usize),
        heading.text,
        heading.end_line + 1 - heading.line,
        heading.end - heading.start
    )
}

/// A `list` call.
pub fn list(
    ctx: &Context,
    protocol: &str,
    arguments: &Map<String, Value>,
) -> anyhow::Result<CallToolResult> {
    let parsed = (|| -> Result<(Option<Under>, Option<DocKey>, usize), String> {
        unknown_arguments(arguments, &["under", "cursor", "limit"])?;
        let under = string(arguments, "under")?
            .map(|u| Under::parse(u).map_err(|e| e.to_string()))
            .transpose()?;
        let after = string(arguments, "cursor")?
            .map(|c| cursor::decode(c).map_err(|e| e.to_string()))
            .transpose()?;
        if let (Some(under), Some(after)) = (&under, &after)
            && under.prefix != after.prefix
        {
            return Err("the cursor is of another listing: call list again without it".into());
        }
        let limit = match integer(arguments, "limit", 1)? {
            None => DEFAULT_LIMIT,
            Some(n) if n as usize <= MAX_LIMIT => n as usize,
            Some(_) => return Err(format!("limit must be an integer from 1 to {MAX_LIMIT}")),
        };
        Ok((under, after, limit))
    })();
    let (under, after, limit) = match parsed {
        Ok(parsed) => parsed,
        Err(message) => return Ok(failed(message)),
    };
    let (docs, versions) = match ctx.store() {
        None => (Vec::new(), Vec::new()),
        Some(store) => {
            let reader = store.reader()?;
            reader.in_transaction(|| {
                // One more than a page tells whether another follows.
                let docs = match &under {
                    Some(under) => reader.page_under(
                        under,
                        after.as_ref().map(|k| k.id.as_str()),
                        limit + 1,
                    )?,
                    None => reader.page(after.as_ref(), limit + 1)?,
                };
                let versions = docs
                    .iter()
                    .take(limit)
                    .map(|d| {
                        Ok(reader
                            .history(&d.key, None, 1)?
                            .first()
                            .filter(|v| v.current)
                            .map(|v| v.number))
                    })
                    .collect::<anyhow::Result<Vec<_>>>()?;
                Ok((docs, versions))
            })?
        }
    };
    let next = (docs.len() > limit).then(|| cursor::encode(&docs[limit - 1].key));
    let mut text = String::new();
    let mut listed = Vec::new();
    for (doc, version) in docs.iter().take(limit).zip(&versions) {
        let uri = uri::format(&doc.key);
        let updated = last_modified(doc.mtime_ns);
        text.push_str(&format!("{uri} — {} ({} bytes)\n", doc.title, doc.size));
        let mut entry =
            json!({"uri": uri, "title": doc.title, "size": doc.size, "updated": updated});
        if let Some(description) = &doc.description {
            entry["description"] = Value::from(description.clone());
        }
        if let Some(version) = version {
            entry["version"] = Value::from(*version);
        }
        listed.push(entry);
    }
    if listed.is_empty() {
        text.push_str("No documents.");
    }
    let mut structured = json!({"documents": listed});
    if let Some(next) = &next {
        text.push_str(&format!(
            "More: call list again with the same arguments and cursor {next:?}."
        ));
        structured["nextCursor"] = Value::from(next.clone());
    } else if !docs.is_empty() {
        text.push_str("Read a document with read and its URI.");
    }
    Ok(super::result(protocol, text, Vec::new(), structured))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(text: &str) -> Text {
        Text {
            uri: "orchestra://docs/x".into(),
            version: Some(3),
            hash: Some("ab".into()),
            text: text.into(),
        }
    }

    fn args(value: Value) -> Map<String, Value> {
        let mut arguments = object(value);
        arguments.insert("uri".into(), Value::from("orchestra://docs/x"));
        arguments
    }

    #[test]
    fn arguments_that_are_refused_say_what_to_change() {
        let refused = |value: Value, says: &str| {
            let arguments = args(value.clone());
            let message = ReadArguments::parse(&arguments).err().unwrap_or_default();
            assert!(message.contains(says), "{value}: {message}");
        };
        refused(json!({"maxChars": 999}), "from 1000 to 40000");
        refused(json!({"maxChars": 40001}), "from 1000 to 40000");
        refused(json!({"offset": 0}), "offset must be an integer from 1");
        refused(json!({"limit": "3"}), "limit must be an integer from 1");
        refused(json!({"section": 3}), "section must be a string");
        refused(json!({"lines": 3}), "unknown argument \"lines\"");
    }

    #[test]
    fn a_part_says_where_the_rest_is() {
        let text = "# A\none\n# B\ntwo\nthree\n";
        let d = doc(text);
        let read = |value: Value| {
            let arguments = args(value);
            let args = ReadArguments::parse(&arguments).unwrap();
            part(&d, &args).map(|p| {
                (
                    p.window.text.to_string(),
                    p.window.to,
                    p.next.map(|n| n.line),
                    p.notice().is_some(),
                )
            })
        };
        assert_eq!(read(json!({})), Ok((text.to_string(), 5, None, false)));
        assert_eq!(
            read(json!({"section": "B"})),
            Ok(("# B\ntwo\nthree\n".into(), 5, None, false))
        );
        assert_eq!(
            read(json!({"section": "A"})),
            Ok(("# A\none\n".into(), 2, None, false))
        );
        // A limit that ends before the document says where it goes on.
        assert_eq!(
            read(json!({"offset": 2, "limit": 2})),
            Ok(("one\n# B\n".into(), 3, Some(4), true))
        );
        assert!(
            read(json!({"offset": 6}))
                .unwrap_err()
                .contains("has 5 lines")
        );
        assert!(
            read(json!({"section": "B", "offset": 1}))
                .unwrap_err()
                .contains("outside the section \"B\", lines 3–5")
        );
        assert!(
            read(json!({"section": "C"}))
                .unwrap_err()
                .contains("no such heading")
        );
    }
}
