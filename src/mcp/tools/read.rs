//! The tools that read, for clients whose models call tools but cannot read resources: `read` (a document or a version, whole or in parts: by lines, by section, under a cap of characters), `outline` (its headings and sections) and `list` (documents in key order, paged).
//!
//! A large document's outline is stored at import (`parts::outline::Stored`,
//! `Reader::outline`): `outline` answers from it, and `read` of a section
//! looks the heading up there and reads only the section's bytes
//! (`Reader::body_range`), its lines numbered from the heading's line, with
//! the same answers as from the whole text (a test compares them, section by
//! section and part by part). Every other read (a small document, lines by
//! offset, a past version) loads and parses the whole text.
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
use crate::mcp::{Caller, MIME_TYPE};
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
fn text_of(ctx: &Caller, uri_text: &str) -> anyhow::Result<Result<Text, String>> {
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
    ctx: &Caller,
    protocol: &str,
    arguments: &Map<String, Value>,
) -> anyhow::Result<CallToolResult> {
    let args = match ReadArguments::parse(arguments) {
        Ok(args) => args,
        Err(message) => return Ok(failed(message)),
    };
    if let Some(result) = read_stored(ctx, protocol, &args)? {
        return Ok(result);
    }
    read_whole(ctx, protocol, &args)
}

/// A `read` from the whole text: every read but a section of a document
/// with a stored outline.
fn read_whole(
    ctx: &Caller,
    protocol: &str,
    args: &ReadArguments,
) -> anyhow::Result<CallToolResult> {
    let doc = match text_of(ctx, args.uri)? {
        Ok(doc) => doc,
        Err(message) => return Ok(failed(message)),
    };
    Ok(match part(&doc, args) {
        Ok(answer) => answer.into_result(protocol),
        Err(message) => failed(message),
    })
}

/// A `read` of a section of a document whose outline import stored: the
/// section found in the stored headings, and only its bytes read. `None`
/// for every other read (today's whole text answers it): no section, a past
/// version, no stored outline (a small document, or a missing one), one
/// too large to read.
fn read_stored(
    ctx: &Caller,
    protocol: &str,
    args: &ReadArguments,
) -> anyhow::Result<Option<CallToolResult>> {
    let Some(wanted) = args.section else {
        return Ok(None);
    };
    let found = with_outline(ctx, args.uri, |reader, key, doc| {
        let headings = &doc.outline.headings;
        let heading = match outline::find(headings, wanted) {
            Ok(heading) => heading,
            Err(e) => return Ok(Some(Err(e.to_string()))),
        };
        let index = headings.iter().position(|h| h == heading).unwrap_or(0);
        let len = heading.end.saturating_sub(heading.start);
        let Some(bytes) = reader.body_range(key, heading.start as u64, len as u64)? else {
            return Ok(None);
        };
        // A section begins and ends at a line's start: its bytes are UTF-8.
        let Ok(text) = String::from_utf8(bytes) else {
            return Ok(None);
        };
        if text.len() != len {
            return Ok(None);
        }
        let section = Section {
            first: heading.line,
            last: heading.end_line,
            path: outline::path(headings, index),
        };
        let text = Text {
            uri: doc.uri,
            version: doc.version,
            hash: doc.hash,
            text,
        };
        Ok(Some(Ok((text, section, doc.outline.total_lines))))
    })?;
    Ok(match found.flatten() {
        None => None,
        Some(Err(message)) => Some(failed(message)),
        Some(Ok((text, section, total))) => {
            let lines = Lines::of(&text.text);
            let shift = section.first - 1;
            Some(
                match part_of(&text, &lines, shift, total, Some(section), args) {
                    Ok(answer) => answer.into_result(protocol),
                    Err(message) => failed(message),
                },
            )
        }
    })
}

/// A current document's stored outline, with what names its version.
struct Outlined {
    uri: String,
    version: Option<u32>,
    hash: Option<String>,
    outline: outline::Stored,
}

/// `then` over the stored outline of the document `uri_text` names, in one
/// read transaction; `None` when there is none to use (a past version, a
/// small, binary or missing document, one larger than a read loads).
fn with_outline<T>(
    ctx: &Caller,
    uri_text: &str,
    then: impl FnOnce(&Reader, &DocKey, Outlined) -> anyhow::Result<T>,
) -> anyhow::Result<Option<T>> {
    let Ok(named) = uri::parse_versioned(uri_text) else {
        return Ok(None);
    };
    if named.version.is_some() {
        return Ok(None);
    }
    let Some(store) = ctx.store() else {
        return Ok(None);
    };
    let reader = store.reader()?;
    reader.in_transaction(|| {
        let Some(stored) = reader.outline(&named.key)? else {
            return Ok(None);
        };
        if stored.size as u64 > MAX_READ_BYTES {
            return Ok(None);
        }
        let meta = reader.meta(&named.key)?;
        let newest = reader.history(&named.key, None, 1)?;
        let doc = Outlined {
            uri: uri::format(&named.key),
            version: newest.first().filter(|v| v.current).map(|v| v.number),
            hash: meta.map(|m| hex(&m.hash)),
            outline: stored,
        };
        then(&reader, &named.key, doc).map(Some)
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

/// The lines of a section: its first and last, and its heading's path.
struct Section {
    first: usize,
    last: usize,
    path: String,
}

fn part<'a>(doc: &'a Text, args: &ReadArguments) -> Result<Part<'a>, String> {
    let lines = Lines::of(&doc.text);
    let total = lines.count();
    let section = match args.section {
        Some(wanted) => {
            let headings = outline::headings(&doc.text, &lines);
            let heading = outline::find(&headings, wanted).map_err(|e| e.to_string())?;
            let index = headings.iter().position(|h| h == heading).unwrap_or(0);
            Some(Section {
                first: heading.line,
                last: heading.end_line,
                path: outline::path(&headings, index),
            })
        }
        None => None,
    };
    part_of(doc, &lines, 0, total, section, args)
}

/// The part `args` ask for of `doc`, whose text holds the document's lines
/// from line `shift + 1` (all of them, or a section's: `lines` numbers them
/// from 1), of `total` lines in all.
fn part_of<'a>(
    doc: &'a Text,
    lines: &Lines,
    shift: usize,
    total: usize,
    section: Option<Section>,
    args: &ReadArguments,
) -> Result<Part<'a>, String> {
    let (first, last, section) = match section {
        Some(Section { first, last, path }) => (first, last, Some(path)),
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
            line: from - shift,
            column: args.column,
        },
        to: to - shift,
        max_chars: args.max_chars,
    };
    let mut window = parts::window(&doc.text, lines, range);
    window.from.line += shift;
    window.to += shift;
    if let Some(next) = &mut window.next {
        next.line += shift;
    }
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
    ctx: &Caller,
    protocol: &str,
    arguments: &Map<String, Value>,
) -> anyhow::Result<CallToolResult> {
    let uri_text =
        match unknown_arguments(arguments, &["uri"]).and_then(|()| uri_argument(arguments)) {
            Ok(uri) => uri,
            Err(message) => return Ok(failed(message)),
        };
    if let Some(doc) = with_outline(ctx, uri_text, |_, _, doc| Ok(doc))? {
        return Ok(outline_result(protocol, doc));
    }
    outline_whole(ctx, protocol, uri_text)
}

/// An `outline` from the whole text: of every document without a stored
/// outline, and of a past version.
fn outline_whole(ctx: &Caller, protocol: &str, uri_text: &str) -> anyhow::Result<CallToolResult> {
    let doc = match text_of(ctx, uri_text)? {
        Ok(doc) => doc,
        Err(message) => return Ok(failed(message)),
    };
    let outline = outline::of(&doc.text);
    Ok(outline_result(
        protocol,
        Outlined {
            uri: doc.uri,
            version: doc.version,
            hash: doc.hash,
            outline,
        },
    ))
}

/// The result of `outline`, from a document's outline however found.
fn outline_result(protocol: &str, doc: Outlined) -> CallToolResult {
    let outline::Stored {
        size,
        total_lines,
        frontmatter_keys: keys,
        headings,
    } = &doc.outline;
    let mut text = format!(
        "{}: {} lines, {} bytes, {} headings",
        doc.uri,
        total_lines,
        size,
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
            "path": outline::path(headings, i),
            "line": heading.line,
            "endLine": heading.end_line,
            "lines": heading.end_line + 1 - heading.line,
            "bytes": heading.end - heading.start,
        }));
    }
    let mut structured = json!({
        "uri": doc.uri,
        "size": size,
        "totalLines": total_lines,
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
    super::result(protocol, text, Vec::new(), structured)
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
    ctx: &Caller,
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

    /// A large document of every kind of heading: levels 1 to 6, setext,
    /// `#` lines in code, CRLF lines, a BOM and frontmatter, multibyte
    /// text, sections longer than a cap and a line longer than one, and
    /// two headings of the same text.
    fn large_document() -> String {
        let mut text = "\u{feff}---\r\ntitle: Large\r\ntags: [a, b]\r\n---\r\n".to_string();
        let para = |n: usize| "Wörter und Zeichen: é, ß, 漢字, 🎼. ".repeat(n) + "\n\n";
        for chapter in 0..6 {
            text.push_str(&format!("# Chapter {chapter}\n\n{}", para(40)));
            for level in 2..=6 {
                text.push_str(&format!(
                    "{} Part {chapter}.{level} `code`\r\n\r\n{}",
                    "#".repeat(level),
                    para(10 + level * 20)
                ));
                text.push_str("```\n# not a heading\n## nor this\n```\n\n");
            }
            text.push_str(&format!("Setext {chapter}\n=========\n\n{}", para(300)));
            text.push_str(&format!(
                "Setext two {chapter}\n---\n{}\n\n",
                "ü".repeat(45_000)
            ));
            text.push_str(&format!("## Same\n{}", para(5)));
        }
        text.push_str("# Last\r\nno final newline");
        text
    }

    #[test]
    fn a_stored_outline_answers_as_the_whole_text_does() {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::store::Store::open_or_create(&dir.path().join("o.db")).unwrap();
        let text = large_document();
        assert!(text.len() >= outline::OUTLINE_MIN_BYTES, "{}", text.len());
        let key = DocKey::new(crate::doc::Prefix::Docs, "large");
        let small = DocKey::new(crate::doc::Prefix::Docs, "small");
        let tx = store.begin_import("/project", false).unwrap();
        for (key, body) in [
            (&key, text.as_bytes()),
            (&small, b"# Small\nx\n".as_slice()),
        ] {
            tx.put(&crate::store::NewDocument::new(
                key.clone(),
                crate::store::FileStat {
                    size: body.len() as u64,
                    mtime_ns: 1,
                    hash: *blake3::hash(body).as_bytes(),
                },
                true,
                "Large".into(),
                None,
                None,
                body.to_vec(),
            ))
            .unwrap();
        }
        tx.commit(true).unwrap();
        let config = crate::mcp::Config {
            page_size: 10,
            writer: None,
            writes_later: false,
        };
        let ctx = crate::mcp::Context::new(crate::mcp::StoreSlot::new(Some(store)), &config);
        let everything = crate::access::Grants::everything();
        let ctx = Caller::new(&ctx, &everything);
        let uri = uri::format(&key);
        let protocol = "2025-06-18";
        let value = |result: CallToolResult| serde_json::to_value(result).unwrap();

        // The outline.
        let stored = with_outline(&ctx, &uri, |_, _, doc| Ok(doc))
            .unwrap()
            .unwrap();
        assert_eq!(stored.outline, outline::of(&text));
        assert!(stored.version.is_some() && stored.hash.is_some());
        assert_eq!(
            value(outline_result(protocol, stored)),
            value(outline_whole(&ctx, protocol, &uri).unwrap())
        );
        // No stored outline: a small document, a past version, a missing one.
        for other in [
            uri::format(&small),
            uri::format_versioned(&key, 1),
            "orchestra://docs/missing".to_string(),
        ] {
            assert!(
                with_outline(&ctx, &other, |_, _, _| Ok(()))
                    .unwrap()
                    .is_none()
            );
        }

        // Every section, part after part, and sections that are not one.
        let headings = outline::of(&text).headings;
        let mut wanted: Vec<String> = (0..headings.len())
            .map(|i| outline::path(&headings, i))
            .collect();
        wanted.extend(["Same", "chapter 2", "Nope", "Chapter 1 > Nope"].map(String::from));
        let mut parts = 0;
        for section in &wanted {
            for (max_chars, limit) in [(40_000, None), (1_000, None), (1_000, Some(3))] {
                let mut call = json!({"uri": uri, "section": section, "maxChars": max_chars});
                if let Some(limit) = limit {
                    call["limit"] = json!(limit);
                }
                loop {
                    let arguments = object(call.clone());
                    let args = ReadArguments::parse(&arguments).unwrap();
                    let fast = read_stored(&ctx, protocol, &args).unwrap().unwrap();
                    let fast = value(fast);
                    assert_eq!(
                        fast,
                        value(read_whole(&ctx, protocol, &args).unwrap()),
                        "{call}"
                    );
                    parts += 1;
                    let structured = &fast["structuredContent"];
                    if !structured["truncated"].as_bool().unwrap_or(false) {
                        break;
                    }
                    call["offset"] = structured["nextOffset"].clone();
                    call["column"] = structured.get("nextColumn").cloned().unwrap_or(json!(0));
                }
            }
        }
        assert!(parts > 3 * wanted.len(), "{parts}");
        // An offset outside the section, by the stored path too.
        let arguments = object(json!({"uri": uri, "section": "Last", "offset": 1}));
        let args = ReadArguments::parse(&arguments).unwrap();
        let fast = value(read_stored(&ctx, protocol, &args).unwrap().unwrap());
        assert_eq!(fast, value(read_whole(&ctx, protocol, &args).unwrap()));
        assert!(fast.to_string().contains("outside the section"), "{fast}");
    }
}
