//! The edits of the `edit` tool applied to a document's text, byte-exact: every byte outside what an edit names stays as it was.
//!
//! Rules (tested below, one table each):
//! - Edits apply in order, each to the result of the one before; the first
//!   that fails stops them all, and the error names it (`replace #2: …`).
//! - Line endings: a document whose first line ends with `\r\n` is CRLF; one
//!   without any line ending counts as LF. In a CRLF document the text an
//!   edit inserts has every bare `\n` written as `\r\n`; in an LF document it
//!   is written as given. `replace`'s OLD is normalised the same way, so an
//!   OLD typed with `\n` matches the file's `\r\n`; when the normalised OLD
//!   occurs nowhere (a file with mixed endings), OLD is looked for as given.
//! - `replace`: OLD must occur exactly once (occurrences may overlap: `aa`
//!   occurs twice in `aaa`) unless `all`, which replaces every
//!   non-overlapping occurrence from the left; zero occurrences is an error
//!   even with `all`.
//! - `append`: TEXT goes at the end, on a line of its own (a line ending is
//!   added first when the document does not end with one); the result ends
//!   with a newline exactly when TEXT does.
//! - `prepend`: TEXT goes right after the frontmatter block's closing line
//!   (or after the BOM, or at the start), followed by a line ending unless it
//!   ends with one.
//! - `section`: the heading is found as the `read` tool finds it
//!   (`parts::outline`: ATX and setext, none in code or frontmatter, a path
//!   `Parent > Child` for a nested one). Its body (the lines after the
//!   heading, after a setext heading's underline, up to the next heading of
//!   the same or a higher level) is replaced by WITH; WITH gets a line
//!   ending when something follows it, or when the old body ended with one
//!   (so the file's final newline, or its absence, stays). A BOM is no part
//!   of the first line's Markdown.
//! - `frontmatter`: only the lines of the keys named change. A top-level key
//!   is its line and the lines that continue it (indented lines, block
//!   scalars, a block sequence at column 0), not the blank lines or column-0
//!   comments after it. Setting rewrites them as one line `KEY: VALUE`,
//!   keeping the key as the file spells it and a comment at the end of its
//!   line; a new key goes last in the block, before its closing line;
//!   removing deletes them (a missing key is no change); a document without
//!   a block gains one after its BOM, unless every key is removed. Values are
//!   written as YAML on one line: strings plain when every YAML reader takes
//!   them for that string, else double-quoted with escapes; arrays and
//!   objects in flow style. After the change the block is read again with
//!   the project's parser and must hold exactly the keys and values asked
//!   for, the others unchanged: an edit that could not promise that (a
//!   malformed block, anchors, odd keys) is refused, never half done.

use std::borrow::Cow;
use std::fmt;

use pulldown_cmark::{Event, Options, Parser, Tag};
use serde_json::{Map, Value, json};

use crate::frontmatter::{self, Extracted};
use crate::parts::Lines;
use crate::parts::outline::{self, SectionError};

/// One edit of the `edit` tool.
#[derive(Debug, Clone, PartialEq)]
pub enum Edit {
    /// Replace OLD by NEW: OLD must occur exactly once unless `all`.
    Replace {
        old: String,
        with: String,
        all: bool,
    },
    Append(String),
    /// After the frontmatter block (and after a BOM), before everything else.
    Prepend(String),
    /// The body of the section under HEADING (text, or `Parent > Child`), up
    /// to the next heading of the same or a higher level; the heading line
    /// itself stays.
    Section {
        heading: String,
        with: String,
    },
    /// Set (Some) or remove (None) frontmatter keys, in the order given (a
    /// tool call's JSON object arrives with its keys in name order: JSON
    /// objects are unordered, so new keys are added in that order).
    Frontmatter(Vec<(String, Option<Value>)>),
}

impl Edit {
    /// The edit's name on the wire, which its errors start with.
    pub fn kind(&self) -> &'static str {
        match self {
            Edit::Replace { .. } => "replace",
            Edit::Append(_) => "append",
            Edit::Prepend(_) => "prepend",
            Edit::Section { .. } => "section",
            Edit::Frontmatter(_) => "frontmatter",
        }
    }
}

/// Why edits could not be applied: a message for the agent that says what
/// to change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EditError(pub String);

impl fmt::Display for EditError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for EditError {}

const BOM: &str = "\u{FEFF}";
/// The wire shapes, for messages.
const SHAPES: &str = "{replace, with, all?}, {append}, {prepend}, {section, with} or {frontmatter}";

/// The edits of a `tools/call`: a non-empty array of the wire shapes.
pub fn parse(edits: &Value) -> Result<Vec<Edit>, EditError> {
    let Value::Array(list) = edits else {
        return Err(EditError(format!(
            "edits must be an array of edits, each one of {SHAPES}; found {}",
            json_kind(edits)
        )));
    };
    if list.is_empty() {
        return Err(EditError(format!(
            "edits is empty: give at least one edit, each one of {SHAPES}"
        )));
    }
    list.iter()
        .enumerate()
        .map(|(i, value)| {
            parse_one(value)
                .and_then(|edit| check(&edit).map(|()| edit))
                .map_err(|message| EditError(format!("edit #{}: {message}", i + 1)))
        })
        .collect()
}

fn parse_one(value: &Value) -> Result<Edit, String> {
    let Value::Object(object) = value else {
        return Err(format!(
            "expected an object, one of {SHAPES}; found {}",
            json_kind(value)
        ));
    };
    let verbs: Vec<&str> = ["replace", "append", "prepend", "section", "frontmatter"]
        .into_iter()
        .filter(|verb| object.contains_key(*verb))
        .collect();
    let verb = match verbs.as_slice() {
        [verb] => *verb,
        [] => {
            let keys: Vec<&str> = object.keys().map(String::as_str).collect();
            return Err(format!(
                "expected one of {SHAPES}; found keys: {}",
                if keys.is_empty() {
                    "none".to_string()
                } else {
                    keys.join(", ")
                }
            ));
        }
        many => {
            return Err(format!(
                "one edit per object: found {}; give them as separate edits",
                many.join(" and ")
            ));
        }
    };
    let a = if verb.starts_with('a') { "an" } else { "a" };
    let allowed: &[&str] = match verb {
        "replace" => &["replace", "with", "all"],
        "section" => &["section", "with"],
        _ => &[verb],
    };
    if let Some(extra) = object.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(format!(
            "unknown key {extra:?} in {a} {verb} edit, which takes only {}",
            allowed.join(", ")
        ));
    }
    let text = |key: &str| -> Result<String, String> {
        match object.get(key) {
            Some(Value::String(s)) => Ok(s.clone()),
            Some(other) => Err(format!(
                "{key:?} of {a} {verb} edit must be a string; found {}",
                json_kind(other)
            )),
            None => Err(format!(
                "{a} {verb} edit needs {key:?} (the new text; \"\" for none)"
            )),
        }
    };
    Ok(match verb {
        "replace" => Edit::Replace {
            old: text("replace")?,
            with: text("with")?,
            all: match object.get("all") {
                None | Some(Value::Null) => false,
                Some(Value::Bool(all)) => *all,
                Some(other) => {
                    return Err(format!(
                        "\"all\" must be true or false; found {}",
                        json_kind(other)
                    ));
                }
            },
        },
        "append" => Edit::Append(text("append")?),
        "prepend" => Edit::Prepend(text("prepend")?),
        "section" => Edit::Section {
            heading: text("section")?,
            with: text("with")?,
        },
        _ => match &object["frontmatter"] {
            Value::Object(keys) => Edit::Frontmatter(
                keys.iter()
                    .map(|(key, value)| (key.clone(), Some(value.clone()).filter(|v| !v.is_null())))
                    .collect(),
            ),
            other => {
                return Err(format!(
                    "\"frontmatter\" must be an object of keys to set (null removes one); found {}",
                    json_kind(other)
                ));
            }
        },
    })
}

/// What an edit must hold whatever the text: the errors `parse` and
/// `apply` both report.
fn check(edit: &Edit) -> Result<(), String> {
    match edit {
        Edit::Replace { old, .. } if old.is_empty() => {
            Err("the text to replace is empty: give the text to find".to_string())
        }
        Edit::Append(text) | Edit::Prepend(text) if text.is_empty() => {
            Err(format!("nothing to {}: the text is empty", edit.kind()))
        }
        Edit::Section { heading, .. } if heading.trim().is_empty() => {
            Err("no heading given: name the section by its heading's text".to_string())
        }
        Edit::Frontmatter(keys) if keys.is_empty() => {
            Err("no keys given: {\"frontmatter\": {\"KEY\": VALUE or null}}".to_string())
        }
        Edit::Frontmatter(keys) => match keys.iter().find(|(key, _)| !plain_key(key)) {
            Some((key, _)) => Err(format!(
                "key {key:?} is not a plain key: use letters, digits, '_', '-' and '.'"
            )),
            None => Ok(()),
        },
        _ => Ok(()),
    }
}

/// The JSON Schema of the `edits` array, for the tool's `inputSchema`.
pub fn edits_schema() -> Value {
    let text = |description: &str| json!({"type": "string", "description": description});
    json!({
        "type": "array",
        "minItems": 1,
        "description": "Applied in order, each to the result of the one before; all or none.",
        "items": {
            "oneOf": [
                {
                    "type": "object",
                    "description": "Replace text that occurs exactly once (or every occurrence with all: true).",
                    "properties": {
                        "replace": {"type": "string", "minLength": 1, "description": "The exact text to find, whitespace included."},
                        "with": text("The new text (\"\" deletes)."),
                        "all": {"type": "boolean", "description": "Replace every occurrence (default false: OLD must occur once)."}
                    },
                    "required": ["replace", "with"],
                    "additionalProperties": false
                },
                {
                    "type": "object",
                    "description": "Add text at the end, on a line of its own.",
                    "properties": {"append": {"type": "string", "minLength": 1}},
                    "required": ["append"],
                    "additionalProperties": false
                },
                {
                    "type": "object",
                    "description": "Add text at the start, after the frontmatter block.",
                    "properties": {"prepend": {"type": "string", "minLength": 1}},
                    "required": ["prepend"],
                    "additionalProperties": false
                },
                {
                    "type": "object",
                    "description": "Replace the body of a section (the heading line stays), up to the next heading of the same or a higher level.",
                    "properties": {
                        "section": {"type": "string", "minLength": 1, "description": "The heading's text, or a path `Parent > Child`."},
                        "with": text("The section's new body.")
                    },
                    "required": ["section", "with"],
                    "additionalProperties": false
                },
                {
                    "type": "object",
                    "description": "Set frontmatter keys, or remove them with null; only their lines change.",
                    "properties": {
                        "frontmatter": {
                            "type": "object",
                            "minProperties": 1,
                            "propertyNames": {"pattern": "^[A-Za-z0-9_.-]+$"}
                        }
                    },
                    "required": ["frontmatter"],
                    "additionalProperties": false
                }
            ]
        }
    })
}

/// Applies every edit in order, or none: the new text of the document whose
/// whole text (BOM, frontmatter and all) is `text`.
pub fn apply(text: &str, edits: &[Edit]) -> Result<String, EditError> {
    let mut text = text.to_string();
    for (i, edit) in edits.iter().enumerate() {
        text = check(edit)
            .and_then(|()| apply_one(&text, edit))
            .map_err(|message| EditError(format!("{} #{}: {message}", edit.kind(), i + 1)))?;
    }
    Ok(text)
}

fn apply_one(text: &str, edit: &Edit) -> Result<String, String> {
    let eol = eol_of(text);
    match edit {
        Edit::Replace { old, with, all } => replace(text, old, with, *all, eol),
        Edit::Append(add) => Ok(append(text, add, eol)),
        Edit::Prepend(add) => Ok(prepend(text, add, eol)),
        Edit::Section { heading, with } => section(text, heading, with, eol),
        Edit::Frontmatter(keys) => set_frontmatter(text, keys, eol),
    }
}

/// `"\r\n"` when the first line of `text` ends so, else `"\n"`.
fn eol_of(text: &str) -> &'static str {
    match text.find('\n') {
        Some(i) if text[..i].ends_with('\r') => "\r\n",
        _ => "\n",
    }
}

/// `s` with every bare `\n` written as `eol`.
fn to_eol<'a>(s: &'a str, eol: &str) -> Cow<'a, str> {
    if eol == "\n" || !s.contains('\n') {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + s.len() / 16);
    let mut after_cr = false;
    for c in s.chars() {
        if c == '\n' && !after_cr {
            out.push('\r');
        }
        out.push(c);
        after_cr = c == '\r';
    }
    Cow::Owned(out)
}

/// Where `needle` starts in `text`, overlapping occurrences included.
fn occurrences(text: &str, needle: &str) -> Vec<usize> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(i) = text[from..].find(needle) {
        let at = from + i;
        found.push(at);
        from = at + text[at..].chars().next().map_or(1, char::len_utf8);
    }
    found
}

fn replace(text: &str, given: &str, with: &str, all: bool, eol: &str) -> Result<String, String> {
    let normalised = to_eol(given, eol);
    let mut old: &str = &normalised;
    let mut found = occurrences(text, old);
    if found.is_empty() && old != given {
        old = given;
        found = occurrences(text, old);
    }
    let with = to_eol(with, eol);
    match found.len() {
        0 => Err(not_found(text, old)),
        1 => {
            let at = found[0];
            Ok([&text[..at], &with, &text[at + old.len()..]].concat())
        }
        _ if all => Ok(text.replace(old, &with)),
        n => {
            let lines = Lines::of(text);
            let mut numbers: Vec<usize> = found.iter().map(|&at| lines.line_of(at)).collect();
            numbers.dedup();
            let mut shown: Vec<String> = numbers.iter().take(10).map(usize::to_string).collect();
            if numbers.len() > 10 {
                shown.push("…".to_string());
            }
            Err(format!(
                "{} occurs {n} times (lines {}); give more context or set all: true",
                quote(old),
                shown.join(", ")
            ))
        }
    }
}

/// The error for an OLD found nowhere, with a hint when its first line is
/// there.
fn not_found(text: &str, old: &str) -> String {
    let mut message = format!(
        "{} not found (it must match exactly, whitespace and line endings included)",
        quote(old)
    );
    let first = old.split('\n').next().unwrap_or(old).trim_end_matches('\r');
    if !first.trim().is_empty()
        && first.len() < old.len()
        && let Some(at) = text.find(first)
    {
        message.push_str(&format!(
            "; its first line is at line {}, but what follows it differs",
            Lines::of(text).line_of(at)
        ));
    }
    message
}

/// `s` quoted for a message, clipped to 60 characters.
fn quote(s: &str) -> String {
    const SHOWN: usize = 60;
    match s.char_indices().nth(SHOWN) {
        Some((cut, _)) => format!("{:?}…", &s[..cut]),
        None => format!("{s:?}"),
    }
}

fn append(text: &str, add: &str, eol: &str) -> String {
    let mut out = String::with_capacity(text.len() + add.len() + 2);
    out.push_str(text);
    if !text.strip_prefix(BOM).unwrap_or(text).is_empty() && !text.ends_with('\n') {
        out.push_str(eol);
    }
    out.push_str(&to_eol(add, eol));
    out
}

fn prepend(text: &str, add: &str, eol: &str) -> String {
    let (at, after_block) = match frontmatter::split(text) {
        Some((_, body)) => (text.len() - body.len(), true),
        None => (if text.starts_with(BOM) { BOM.len() } else { 0 }, false),
    };
    let mut out = String::with_capacity(text.len() + add.len() + 4);
    out.push_str(&text[..at]);
    if after_block && !out.ends_with('\n') {
        out.push_str(eol);
    }
    out.push_str(&to_eol(add, eol));
    if !add.ends_with('\n') {
        out.push_str(eol);
    }
    out.push_str(&text[at..]);
    out
}

fn section(text: &str, wanted: &str, with: &str, eol: &str) -> Result<String, String> {
    // The BOM is no part of the first line's Markdown.
    if let Some(rest) = text.strip_prefix(BOM) {
        return section(rest, wanted, with, eol).map(|new| [BOM, &new].concat());
    }
    let lines = Lines::of(text);
    let headings = outline::headings(text, &lines);
    let heading = outline::find(&headings, wanted).map_err(|err| section_error(wanted, err))?;
    let body_start = lines.end(heading_last_line(text, &lines, heading));
    let end = heading.end;
    let mut out = String::with_capacity(text.len() + with.len());
    out.push_str(&text[..body_start]);
    if !with.is_empty() {
        if !out.ends_with('\n') {
            out.push_str(eol);
        }
        out.push_str(&to_eol(with, eol));
        if !with.ends_with('\n') && text[..end].ends_with('\n') {
            out.push_str(eol);
        }
    }
    out.push_str(&text[end..]);
    Ok(out)
}

/// The last line of a heading: its own for an ATX heading, the underline's
/// for a setext one. The section is parsed from the heading's line on, as
/// CommonMark reads it there.
fn heading_last_line(text: &str, lines: &Lines, heading: &outline::Heading) -> usize {
    let slice = &text[heading.start..heading.end];
    let options =
        Options::ENABLE_TABLES | Options::ENABLE_TASKLISTS | Options::ENABLE_STRIKETHROUGH;
    Parser::new_ext(slice, options)
        .into_offset_iter()
        .find_map(|(event, range)| match event {
            Event::Start(Tag::Heading { .. }) if range.end > range.start => {
                Some(lines.line_of(heading.start + range.end - 1))
            }
            _ => None,
        })
        .unwrap_or(heading.line)
        .clamp(heading.line, heading.end_line.max(heading.line))
}

fn section_error(wanted: &str, err: SectionError) -> String {
    const SHOWN: usize = 50;
    let more = |n: usize| {
        if n > SHOWN {
            format!("; and {} more", n - SHOWN)
        } else {
            String::new()
        }
    };
    match err {
        SectionError::Missing(paths) if paths.is_empty() => {
            format!(
                "section {} not found: the document has no headings",
                quote(wanted)
            )
        }
        SectionError::Missing(paths) => format!(
            "section {} not found; headings: {}{}",
            quote(wanted),
            paths
                .iter()
                .take(SHOWN)
                .cloned()
                .collect::<Vec<_>>()
                .join("; "),
            more(paths.len())
        ),
        SectionError::Ambiguous(found) => format!(
            "section {} is ambiguous: {}{}; name one by its path (`Parent > Child`)",
            quote(wanted),
            found
                .iter()
                .take(SHOWN)
                .map(|(path, line)| format!("{path} (line {line})"))
                .collect::<Vec<_>>()
                .join("; "),
            more(found.len())
        ),
    }
}

/// A key the `frontmatter` edit may name.
fn plain_key(key: &str) -> bool {
    !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

/// The frontmatter block of `text`: where its YAML starts, and where its
/// closing line starts.
fn block(text: &str) -> Option<(usize, usize)> {
    let (yaml, _) = frontmatter::split(text)?;
    let bom = if text.starts_with(BOM) { BOM.len() } else { 0 };
    let start = bom + text[bom..].find('\n')? + 1;
    Some((start, start + yaml.len()))
}

/// One top-level entry of a frontmatter block: its key (`None` for one this
/// module does not read), the bytes of its lines, and where its key's
/// colon ends and its first line's text ends.
#[derive(Debug)]
struct Entry {
    key: Option<String>,
    start: usize,
    end: usize,
    colon: usize,
    line_end: usize,
}

/// The top-level entries of the YAML between `from` and `to`.
fn entries(text: &str, from: usize, to: usize) -> Vec<Entry> {
    let mut found: Vec<Entry> = Vec::new();
    let mut open = false;
    let mut pos = from;
    while pos < to {
        let end = text[pos..to].find('\n').map_or(to, |i| pos + i + 1);
        let line = text[pos..end].trim_end_matches(['\n', '\r']);
        if line.trim().is_empty() {
            // A blank line belongs to an entry only when the entry goes on.
        } else if line.starts_with([' ', '\t'])
            || line == "-"
            || line.starts_with("- ")
            || line.starts_with("-\t")
        {
            if open && let Some(entry) = found.last_mut() {
                entry.end = end;
            }
        } else if line.starts_with('#') {
            open = false;
        } else {
            let key = key_of(line);
            let mapping = key.is_some()
                || line.contains(": ")
                || line.contains(":\t")
                || line.ends_with(':')
                || line.starts_with('?');
            if !mapping && open {
                // The rest of a flow collection or scalar begun above.
                if let Some(entry) = found.last_mut() {
                    entry.end = end;
                }
                pos = end;
                continue;
            }
            let (key, colon) = match key {
                Some((key, colon)) => (Some(key), pos + colon),
                None => (None, pos),
            };
            found.push(Entry {
                key,
                start: pos,
                end,
                colon,
                line_end: pos + line.len(),
            });
            open = true;
        }
        pos = end;
    }
    found
}

/// The key of a mapping line at column 0 (plain, `"double"` or `'single'`
/// quoted without escapes) and where its colon ends.
fn key_of(line: &str) -> Option<(String, usize)> {
    let (key, rest_at) = match line.as_bytes().first()? {
        quote @ (b'"' | b'\'') => {
            let close = line[1..].find(*quote as char)? + 1;
            let key = &line[1..close];
            if key.contains(['\\', '"', '\'']) {
                return None;
            }
            (key, close + 1)
        }
        b'?' | b'[' | b'{' | b'&' | b'*' | b'!' | b'|' | b'>' | b'%' | b'@' | b'`' | b'-' => {
            return None;
        }
        _ => {
            let colon = line
                .match_indices(':')
                .map(|(i, _)| i)
                .find(|&i| matches!(line.as_bytes().get(i + 1), None | Some(b' ' | b'\t')))?;
            (line[..colon].trim_end_matches([' ', '\t']), colon)
        }
    };
    let after = &line[rest_at..];
    let spaces = after.len() - after.trim_start_matches([' ', '\t']).len();
    let colon = rest_at + spaces;
    if line.as_bytes().get(colon) != Some(&b':')
        || !matches!(line.as_bytes().get(colon + 1), None | Some(b' ' | b'\t'))
        || key.is_empty()
    {
        return None;
    }
    Some((key.to_string(), colon + 1))
}

/// The comment at the end of an entry's first line (from the blanks before
/// its `#`), if any: outside quotes, which open only where a value or a
/// flow item starts.
fn line_comment(value: &str) -> Option<usize> {
    let bytes = value.as_bytes();
    let mut quote: Option<u8> = None;
    let mut item_start = true;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        match quote {
            Some(b'"') if b == b'\\' => i += 1,
            Some(q) if b == q => {
                if q == b'\'' && bytes.get(i + 1) == Some(&b'\'') {
                    i += 1;
                } else {
                    quote = None;
                }
            }
            Some(_) => {}
            None => {
                if (b == b' ' || b == b'\t') && bytes.get(i + 1) == Some(&b'#') {
                    let value = value[..i].trim_end_matches([' ', '\t']);
                    return Some(value.len());
                }
                if item_start && (b == b'"' || b == b'\'') {
                    quote = Some(b);
                }
                if !(b == b' ' || b == b'\t') {
                    item_start = matches!(b, b'[' | b'{' | b',' | b':');
                }
            }
        }
        i += 1;
    }
    None
}

fn set_frontmatter(
    text: &str,
    keys: &[(String, Option<Value>)],
    eol: &str,
) -> Result<String, String> {
    let before = match block(text) {
        Some(_) => match frontmatter::extract(text) {
            Extracted {
                frontmatter: Some(Value::Object(map)),
                ..
            } => map,
            Extracted { warning, .. } => {
                return Err(format!(
                    "the frontmatter block cannot be edited by keys: {}; fix the block with a replace edit, or write the whole document",
                    warning.unwrap_or_else(|| "it is not a mapping".to_string())
                ));
            }
        },
        None => Map::new(),
    };
    let mut expected = before.clone();
    for (key, value) in keys {
        match value {
            Some(value) => expected.insert(key.clone(), value.clone()),
            None => expected.remove(key),
        };
    }
    if expected == before {
        // Only keys already absent removed, or values already there: no
        // byte changes.
        return Ok(text.to_string());
    }
    let mut text = text.to_string();
    if block(&text).is_none() {
        let bom = if text.starts_with(BOM) { BOM.len() } else { 0 };
        text.insert_str(bom, &format!("---{eol}---{eol}"));
    }
    for (key, value) in keys {
        let (from, to) = block(&text).expect("the block is there");
        let all = entries(&text, from, to);
        let mine: Vec<&Entry> = all
            .iter()
            .filter(|e| e.key.as_deref() == Some(key.as_str()))
            .collect();
        let mut pieces: Vec<(usize, usize, String)> = Vec::new();
        match value {
            Some(value) => {
                let value = yaml_value(value, false);
                match mine.split_first() {
                    Some((first, rest)) => {
                        let comment = line_comment(&text[first.colon..first.line_end])
                            .map_or("", |at| &text[first.colon + at..first.line_end]);
                        let line =
                            format!("{} {value}{comment}{eol}", &text[first.start..first.colon]);
                        pieces.push((first.start, first.end, line));
                        pieces.extend(rest.iter().map(|e| (e.start, e.end, String::new())));
                    }
                    None => {
                        pieces.push((to, to, format!("{}: {value}{eol}", yaml_string(key, false))))
                    }
                }
            }
            None => pieces.extend(mine.iter().map(|e| (e.start, e.end, String::new()))),
        }
        for (start, end, with) in pieces.into_iter().rev() {
            text.replace_range(start..end, &with);
        }
    }
    let after = frontmatter::extract(&text).frontmatter;
    if after != Some(Value::Object(expected.clone())) {
        let differ: Vec<&str> = keys
            .iter()
            .map(|(key, _)| key.as_str())
            .filter(|key| after.as_ref().and_then(|a| a.get(key)) != expected.get(*key))
            .collect();
        return Err(format!(
            "the frontmatter block would not read back as asked{}; edit the block with a replace edit instead",
            if differ.is_empty() {
                " (other keys would change)".to_string()
            } else {
                format!(" (keys {})", differ.join(", "))
            }
        ));
    }
    Ok(text)
}

/// `value` as YAML on one line; `flow` inside a flow collection.
fn yaml_value(value: &Value, flow: bool) -> String {
    match value {
        Value::Null => "null".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => yaml_string(s, flow),
        Value::Array(items) => format!(
            "[{}]",
            items
                .iter()
                .map(|v| yaml_value(v, true))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Value::Object(map) => format!(
            "{{{}}}",
            map.iter()
                .map(|(k, v)| format!("{}: {}", yaml_string(k, true), yaml_value(v, true)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// A string as YAML: plain when every reader takes it for that string, else
/// double-quoted.
fn yaml_string(s: &str, flow: bool) -> String {
    if plain_string(s, flow) {
        s.to_string()
    } else {
        double_quoted(s)
    }
}

/// Words that YAML 1.1 or 1.2 readers take for something else than a
/// string, compared in lower case.
const RESERVED: &[&str] = &[
    "null", "~", "true", "false", "yes", "no", "on", "off", "y", "n", "=", "<<", "nan", "inf",
    "infinity",
];

fn plain_string(s: &str, flow: bool) -> bool {
    let Some(first) = s.chars().next() else {
        return false;
    };
    s.trim() == s
        && s.chars().all(|c| printable(c) && c != '\t')
        && !"-?:,[]{}#&*!|>'\"%@`+.".contains(first)
        && !first.is_ascii_digit()
        && !RESERVED.contains(&s.to_lowercase().as_str())
        && !s.contains(": ")
        && !s.contains(" #")
        && !s.ends_with(':')
        && !(flow && s.contains([',', '[', ']', '{', '}', ':', '#']))
}

/// A character YAML writes as itself: printable, and no line break or BOM.
fn printable(c: char) -> bool {
    matches!(c as u32, 0x20..=0x7E | 0xA0..=0xD7FF | 0xE000..=0xFFFD | 0x10000..)
        && !matches!(c, '\u{2028}' | '\u{2029}' | '\u{FEFF}')
}

fn double_quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\0' => out.push_str("\\0"),
            c if printable(c) => out.push(c),
            c if (c as u32) <= 0xFF => out.push_str(&format!("\\x{:02X}", c as u32)),
            c if (c as u32) <= 0xFFFF => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push_str(&format!("\\U{:08X}", c as u32)),
        }
    }
    out.push('"');
    out
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Lines of context around each change.
const CONTEXT: usize = 3;
/// How long a diff may look for the smallest edit before it settles for a
/// larger one.
const DIFF_DEADLINE: std::time::Duration = std::time::Duration::from_secs(1);

/// The unified diff (3 lines of context) from `old` to `new`, with
/// `---`/`+++` labels given, for dryRun and results; clipped to at most
/// `max_bytes` at a line boundary with a final line saying how much was
/// left out. Empty when the texts are equal.
pub fn diff(old: &str, new: &str, from_label: &str, to_label: &str, max_bytes: usize) -> String {
    if old == new {
        return String::new();
    }
    let text = similar::TextDiff::configure()
        .timeout(DIFF_DEADLINE)
        .diff_lines(old, new)
        .unified_diff()
        .context_radius(CONTEXT)
        .header(from_label, to_label)
        .to_string();
    clip(text, max_bytes)
}

/// `text` cut at the last line boundary that leaves room, within
/// `max_bytes`, for a line saying what was left out (the line alone when
/// even it does not fit).
fn clip(text: String, max_bytes: usize) -> String {
    if text.len() <= max_bytes {
        return text;
    }
    let note = |lines: usize, bytes: usize| {
        format!("… {lines} more lines ({bytes} bytes) of the diff left out\n")
    };
    let budget = max_bytes.saturating_sub(note(text.len(), text.len()).len());
    let cut = text.as_bytes()[..budget]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    let rest = &text[cut..];
    let mut out = text[..cut].to_string();
    out.push_str(&note(rest.lines().count(), rest.len()));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn replace(old: &str, with: &str) -> Edit {
        Edit::Replace {
            old: old.to_string(),
            with: with.to_string(),
            all: false,
        }
    }

    fn replace_all(old: &str, with: &str) -> Edit {
        Edit::Replace {
            old: old.to_string(),
            with: with.to_string(),
            all: true,
        }
    }

    fn append(text: &str) -> Edit {
        Edit::Append(text.to_string())
    }

    fn prepend(text: &str) -> Edit {
        Edit::Prepend(text.to_string())
    }

    fn section(heading: &str, with: &str) -> Edit {
        Edit::Section {
            heading: heading.to_string(),
            with: with.to_string(),
        }
    }

    fn set(pairs: &[(&str, Option<Value>)]) -> Edit {
        Edit::Frontmatter(
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
        )
    }

    /// Each case: the text, one edit, the bytes expected.
    #[track_caller]
    fn check(cases: &[(&str, Edit, &str)]) {
        for (text, edit, expected) in cases {
            match apply(text, std::slice::from_ref(edit)) {
                Ok(got) => assert_eq!(got, *expected, "{edit:?} on {text:?}"),
                Err(err) => panic!("{edit:?} on {text:?}: {err}"),
            }
        }
    }

    /// Each case: the text, one edit, words the error must hold.
    #[track_caller]
    fn check_errors(cases: &[(&str, Edit, &[&str])]) {
        for (text, edit, words) in cases {
            match apply(text, std::slice::from_ref(edit)) {
                Ok(got) => panic!("{edit:?} on {text:?}: no error but {got:?}"),
                Err(EditError(message)) => {
                    for word in *words {
                        assert!(
                            message.contains(word),
                            "{edit:?} on {text:?}: {message:?} lacks {word:?}"
                        );
                    }
                }
            }
        }
    }

    const BOM_: &str = "\u{FEFF}";

    #[test]
    fn replace_keeps_every_other_byte() {
        check(&[
            ("a foo b\n", replace("foo", "bar"), "a bar b\n"),
            ("a foo b", replace("foo", "bar"), "a bar b"),
            ("x\r\nfoo\r\ny", replace("foo", "bar"), "x\r\nbar\r\ny"),
            // OLD and NEW written with \n match and become the file's \r\n.
            (
                "one\r\ntwo\r\nthree\r\n",
                replace("one\ntwo\n", "1\n2\n"),
                "1\r\n2\r\nthree\r\n",
            ),
            (
                "one\r\ntwo\r\n",
                replace("two", "2\n2b"),
                "one\r\n2\r\n2b\r\n",
            ),
            // An OLD that already says \r\n matches too.
            ("one\r\ntwo\r\n", replace("one\r\ntwo", "x"), "x\r\n"),
            // A mixed file: the LF part is found as given.
            ("a\r\nb\nc\n", replace("b\nc", "d\ne"), "a\r\nd\r\ne\n"),
            // An LF file takes the text as given.
            ("a\nb\n", replace("a", "x\r\ny"), "x\r\ny\nb\n"),
            (
                &format!("{BOM_}foo\n"),
                replace("foo", "bar"),
                &format!("{BOM_}bar\n"),
            ),
            ("a $1 b\n", replace("$1", "$0 \\1"), "a $0 \\1 b\n"),
            ("x\ny\n", replace("x\ny\n", ""), ""),
            ("foo foo foo", replace_all("foo", "ba"), "ba ba ba"),
            ("aaa", replace_all("aa", "b"), "ba"),
            ("één twee één\n", replace_all("één", "1"), "1 twee 1\n"),
            (
                "---\r\na: 1\r\n---\r\nfoo\r\n",
                replace_all("1\n---", "2\n..."),
                "---\r\na: 2\r\n...\r\nfoo\r\n",
            ),
        ]);
    }

    #[test]
    fn replace_errors_say_how_many() {
        check_errors(&[
            (
                "abc\n",
                replace("x", "y"),
                &["replace #1", "\"x\" not found"],
            ),
            ("abc\n", replace_all("x", "y"), &["\"x\" not found"]),
            (
                "foo\nbar foo\n\nfoo\n",
                replace("foo", "y"),
                &[
                    "replace #1: \"foo\" occurs 3 times (lines 1, 2, 4); give more context or set all: true",
                ],
            ),
            ("aaa", replace("aa", "b"), &["occurs 2 times"]),
            (
                "one\ntwo\n",
                replace("one\nthree", "x"),
                &["not found", "its first line is at line 1"],
            ),
            ("abc", replace("", "y"), &["replace #1", "empty"]),
        ]);
        let long = "x".repeat(200);
        let err = apply("abc", &[replace(&long, "")]).unwrap_err();
        assert!(err.0.len() < 200, "{err}");
    }

    #[test]
    fn append_starts_a_line_and_ends_as_text_says() {
        check(&[
            ("a\n", append("b\n"), "a\nb\n"),
            ("a\n", append("b"), "a\nb"),
            ("a", append("b\n"), "a\nb\n"),
            ("a", append("b"), "a\nb"),
            ("", append("b\n"), "b\n"),
            (BOM_, append("b\n"), &format!("{BOM_}b\n")),
            ("a\r\n", append("b\nc\n"), "a\r\nb\r\nc\r\n"),
            ("a\r\nb", append("c"), "a\r\nb\r\nc"),
            ("a\n\n", append("\nb\n"), "a\n\n\nb\n"),
        ]);
    }

    #[test]
    fn prepend_goes_after_the_frontmatter() {
        check(&[
            ("body\n", prepend("top"), "top\nbody\n"),
            ("body\n", prepend("top\n\n"), "top\n\nbody\n"),
            ("", prepend("top"), "top\n"),
            (
                &format!("{BOM_}body"),
                prepend("top"),
                &format!("{BOM_}top\nbody"),
            ),
            (
                "---\na: 1\n---\nbody\n",
                prepend("top"),
                "---\na: 1\n---\ntop\nbody\n",
            ),
            (
                "---\na: 1\n...\nbody\n",
                prepend("top"),
                "---\na: 1\n...\ntop\nbody\n",
            ),
            (
                &format!("{BOM_}---\na: 1\n---  \nbody\n"),
                prepend("top"),
                &format!("{BOM_}---\na: 1\n---  \ntop\nbody\n"),
            ),
            ("---\na: 1\n---", prepend("top"), "---\na: 1\n---\ntop\n"),
            (
                "---\r\na: 1\r\n---\r\nbody\r\n",
                prepend("t1\nt2"),
                "---\r\na: 1\r\n---\r\nt1\r\nt2\r\nbody\r\n",
            ),
            // An unclosed block is no block.
            (
                "---\na: 1\nbody\n",
                prepend("top"),
                "top\n---\na: 1\nbody\n",
            ),
            // A malformed block is still a block.
            (
                "---\na: [\n---\nbody\n",
                prepend("top"),
                "---\na: [\n---\ntop\nbody\n",
            ),
        ]);
    }

    const DOC: &str = "---\n# not: a heading\n---\n# Title\nintro\n## Plan\nold plan\n\n### Detail\nd\n## Notes\nn\n";

    #[test]
    fn section_replaces_the_body_up_to_the_next_heading_of_its_level() {
        check(&[
            (
                DOC,
                section("Plan", "new plan\n"),
                "---\n# not: a heading\n---\n# Title\nintro\n## Plan\nnew plan\n## Notes\nn\n",
            ),
            // WITH gets a line ending when something follows it.
            (
                DOC,
                section("Detail", "e"),
                "---\n# not: a heading\n---\n# Title\nintro\n## Plan\nold plan\n\n### Detail\ne\n## Notes\nn\n",
            ),
            (
                DOC,
                section("Title > Plan > Detail", ""),
                "---\n# not: a heading\n---\n# Title\nintro\n## Plan\nold plan\n\n### Detail\n## Notes\nn\n",
            ),
            (
                DOC,
                section("Title", "x\n"),
                "---\n# not: a heading\n---\n# Title\nx\n",
            ),
            // The last section: the file's final newline, or its absence, stays.
            (
                DOC,
                section("notes", "m"),
                &DOC.replace("## Notes\nn\n", "## Notes\nm\n"),
            ),
            ("# A\nold", section("A", "new"), "# A\nnew"),
            ("# A\nold", section("A", "new\n"), "# A\nnew\n"),
            ("# A", section("A", "new"), "# A\nnew"),
            ("# A\n", section("A", "new"), "# A\nnew\n"),
            ("# A\n# B\n", section("A", "x"), "# A\nx\n# B\n"),
            (
                "# A\r\nold\r\n# B\r\n",
                section("A", "x\ny"),
                "# A\r\nx\r\ny\r\n# B\r\n",
            ),
            (
                &format!("{BOM_}# A\nold\n"),
                section("A", "new\n"),
                &format!("{BOM_}# A\nnew\n"),
            ),
            // Setext headings: the body starts after the underline.
            (
                "Plan\n====\nold\nOther\n-----\nx\n",
                section("Plan", "new\n"),
                "Plan\n====\nnew\n",
            ),
            (
                "Two\nlines\n---\nold\n",
                section("Two lines", "new\n"),
                "Two\nlines\n---\nnew\n",
            ),
            // A heading in code is none: the section runs on over it.
            (
                "# A\n```\n# B\n```\nold\n# C\n",
                section("A", "new\n"),
                "# A\nnew\n# C\n",
            ),
            // Nested: Parent > Child picks one of two.
            (
                "# Design\n## Sync\none\n# Ops\n## Sync\ntwo\n",
                section("Ops > Sync", "2\n"),
                "# Design\n## Sync\none\n# Ops\n## Sync\n2\n",
            ),
            // A closing sequence and inline Markdown in the heading.
            (
                "## The `x` plan ##\nold\n",
                section("The x plan", "new\n"),
                "## The `x` plan ##\nnew\n",
            ),
        ]);
    }

    #[test]
    fn section_errors_list_the_headings() {
        check_errors(&[
            (
                DOC,
                section("Nope", "x"),
                &[
                    "section #1: section \"Nope\" not found; headings: Title; Title > Plan; Title > Plan > Detail; Title > Notes",
                ],
            ),
            (
                "no headings\n",
                section("A", "x"),
                &["the document has no headings"],
            ),
            (
                "# A\n```\n# B\n```\n",
                section("B", "x"),
                &["not found", "headings: A"],
            ),
            ("---\n# c\n---\n", section("c", "x"), &["no headings"]),
            (
                "# Design\n## Sync\none\n# Ops\n## Sync\ntwo\n",
                section("Sync", "x"),
                &[
                    "\"Sync\" is ambiguous: Design > Sync (line 2); Ops > Sync (line 5)",
                    "Parent > Child",
                ],
            ),
            ("# A\n", section(" ", "x"), &["no heading given"]),
        ]);
    }

    #[test]
    fn frontmatter_changes_only_the_lines_of_its_keys() {
        let doc = "---\n# a comment\ntitle:   Old   # keep me\nstatus : draft\ntags:\n- a\n- b\n\n# another\nnested:\n  x: 1\n\n  y: |\n    text\nlast: 'q'\n---\n# Body\n";
        check(&[
            (
                doc,
                set(&[("status", Some(json!("shipped")))]),
                &doc.replace("status : draft", "status : shipped"),
            ),
            (
                doc,
                set(&[("title", Some(json!("New")))]),
                &doc.replace("title:   Old   # keep me", "title: New   # keep me"),
            ),
            (
                doc,
                set(&[("tags", Some(json!(["c"])))]),
                &doc.replace("tags:\n- a\n- b\n", "tags: [c]\n"),
            ),
            (
                doc,
                set(&[("nested", Some(json!({"z": true})))]),
                &doc.replace(
                    "nested:\n  x: 1\n\n  y: |\n    text\n",
                    "nested: {z: true}\n",
                ),
            ),
            (
                doc,
                set(&[("tags", None)]),
                &doc.replace("tags:\n- a\n- b\n", ""),
            ),
            (
                doc,
                set(&[("nested", None)]),
                &doc.replace("nested:\n  x: 1\n\n  y: |\n    text\n", ""),
            ),
            (
                doc,
                set(&[("last", Some(json!(2)))]),
                &doc.replace("last: 'q'", "last: 2"),
            ),
            (
                doc,
                set(&[("new", Some(json!("v"))), ("status", None)]),
                &doc.replace("status : draft\n", "")
                    .replace("last: 'q'\n", "last: 'q'\nnew: v\n"),
            ),
            // Removing a key that is not there, or setting what is there: no change.
            (doc, set(&[("missing", None)]), doc),
            // A flow collection over several lines, an empty value with a comment.
            (
                "---\ntags: [a,\n  b]\nx: 1\n---\n",
                set(&[("tags", None)]),
                "---\nx: 1\n---\n",
            ),
            (
                "---\ntags: [a,\nb]\nx: 1\n---\n",
                set(&[("tags", Some(json!("c")))]),
                "---\ntags: c\nx: 1\n---\n",
            ),
            (
                "---\nk:   # c\n---\n",
                set(&[("k", Some(json!("v")))]),
                "---\nk: v   # c\n---\n",
            ),
            (
                "---\nk: \"a #b\" # c\n---\n",
                set(&[("k", Some(json!(["x"])))]),
                "---\nk: [x] # c\n---\n",
            ),
            (
                "---\nk: ['a #b', \"c\"]  # c\n---\n",
                set(&[("k", Some(json!(1)))]),
                "---\nk: 1  # c\n---\n",
            ),
            (doc, set(&[("last", Some(json!("q")))]), doc),
            // CRLF, `...` and a quoted key.
            (
                "---\r\n\"title\": x\r\n...\r\nbody\r\n",
                set(&[("title", Some(json!("z"))), ("k", Some(json!(1)))]),
                "---\r\n\"title\": z\r\nk: 1\r\n...\r\nbody\r\n",
            ),
            // An empty block.
            (
                "---\n---\nbody\n",
                set(&[("a", Some(json!(1)))]),
                "---\na: 1\n---\nbody\n",
            ),
            ("---\n---", set(&[("a", Some(json!(1)))]), "---\na: 1\n---"),
            // No block: one is added, after a BOM, with the file's endings.
            (
                "body\n",
                set(&[("a", Some(json!("b")))]),
                "---\na: b\n---\nbody\n",
            ),
            ("", set(&[("a", Some(json!("b")))]), "---\na: b\n---\n"),
            (
                "x\r\ny\r\n",
                set(&[("a", Some(json!(1)))]),
                "---\r\na: 1\r\n---\r\nx\r\ny\r\n",
            ),
            (
                &format!("{BOM_}body"),
                set(&[("a", Some(json!(1))), ("b", Some(json!(2)))]),
                &format!("{BOM_}---\na: 1\nb: 2\n---\nbody"),
            ),
            ("body\n", set(&[("a", None)]), "body\n"),
            // Keys set in turn; the last word wins.
            (
                "body\n",
                set(&[("a", Some(json!(1))), ("a", Some(json!(2)))]),
                "---\na: 2\n---\nbody\n",
            ),
        ]);
    }

    #[test]
    fn frontmatter_refuses_what_it_cannot_do_safely() {
        check_errors(&[
            (
                "---\ntitle: [unclosed\n---\nbody\n",
                set(&[("title", Some(json!("x")))]),
                &["frontmatter #1", "malformed frontmatter", "replace edit"],
            ),
            (
                "---\n- a list\n---\n",
                set(&[("a", Some(json!(1)))]),
                &["expected a mapping"],
            ),
            (
                "body\n",
                set(&[("a b", Some(json!(1)))]),
                &["\"a b\" is not a plain key"],
            ),
            ("body\n", set(&[("", Some(json!(1)))]), &["not a plain key"]),
            ("body\n", set(&[]), &["no keys given"]),
            // Removing an anchor that another key uses.
            (
                "---\nbase: &b x\nother: *b\n---\n",
                set(&[("base", None)]),
                &["would not read back"],
            ),
        ]);
    }

    #[test]
    fn values_are_written_as_yaml_that_reads_back() {
        let cases: &[(Value, &str)] = &[
            (json!("plain words"), "plain words"),
            (json!("a, b"), "a, b"),
            (json!("é ü 漢字"), "é ü 漢字"),
            (json!("http://x.y/z"), "http://x.y/z"),
            (json!("C#"), "C#"),
            (json!(""), "\"\""),
            (json!("true"), "\"true\""),
            (json!("No"), "\"No\""),
            (json!("null"), "\"null\""),
            (json!("~"), "\"~\""),
            (json!("12"), "\"12\""),
            (json!("2024-01-02"), "\"2024-01-02\""),
            (json!("1.5"), "\"1.5\""),
            (json!(".inf"), "\".inf\""),
            (json!("-x"), "\"-x\""),
            (json!("a: b"), "\"a: b\""),
            (json!("a #b"), "\"a #b\""),
            (json!("ends:"), "\"ends:\""),
            (json!(" padded"), "\" padded\""),
            (json!("[x]"), "\"[x]\""),
            (json!("*ref"), "\"*ref\""),
            (json!("two\nlines"), "\"two\\nlines\""),
            (json!("tab\there"), "\"tab\\there\""),
            (json!("q\"uote\\"), "q\"uote\\"),
            (json!("\"q\" \\"), "\"\\\"q\\\" \\\\\""),
            (
                json!("bell\u{7}nel\u{85}ls\u{2028}"),
                "\"bell\\x07nel\\x85ls\\u2028\"",
            ),
            (json!(1), "1"),
            (json!(-2.5), "-2.5"),
            (json!(1e300), "1e+300"),
            (json!(1.5e-7), "1.5e-7"),
            (json!(0.1), "0.1"),
            (json!(u64::MAX), "18446744073709551615"),
            (json!(true), "true"),
            (json!([]), "[]"),
            (json!({}), "{}"),
            (
                json!(["a", "b: c", 1, null, "x,y"]),
                "[a, \"b: c\", 1, null, \"x,y\"]",
            ),
            (
                json!({"k": "v", "a b": [1], "c:": {}}),
                "{a b: [1], \"c:\": {}, k: v}",
            ),
        ];
        for (value, yaml) in cases {
            assert_eq!(yaml_value(value, false), *yaml, "{value}");
            let text = apply("body\n", &[set(&[("key", Some(value.clone()))])]).unwrap();
            assert_eq!(text, format!("---\nkey: {yaml}\n---\nbody\n"));
            let read = frontmatter::extract(&text).frontmatter.unwrap();
            assert_eq!(read["key"], *value, "{yaml}");
        }
        // Keys that YAML would read as something else are quoted.
        let text = apply(
            "",
            &[set(&[("true", Some(json!(1))), ("1.5", Some(json!(2)))])],
        )
        .unwrap();
        assert_eq!(text, "---\n\"true\": 1\n\"1.5\": 2\n---\n");
        assert_eq!(
            frontmatter::extract(&text).frontmatter,
            Some(json!({"true": 1, "1.5": 2}))
        );
    }

    #[test]
    fn edits_apply_in_order_or_not_at_all() {
        let text = "---\ntitle: T\n---\n# A\nold\n";
        let edits = [
            replace("old", "new"),
            append("tail\n"),
            section("A", "body\n"),
            prepend("top"),
            set(&[("title", Some(json!("U")))]),
        ];
        assert_eq!(
            apply(text, &edits).unwrap(),
            "---\ntitle: U\n---\ntop\n# A\nbody\n"
        );
        let err = apply(text, &[replace("old", "new"), replace("old", "x")]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "replace #2: \"old\" not found (it must match exactly, whitespace and line endings included)"
        );
    }

    #[test]
    fn parse_reads_the_wire_shapes() {
        let edits = parse(&json!([
            {"replace": "a", "with": "b"},
            {"replace": "a", "with": "b", "all": true},
            {"append": "x"},
            {"prepend": "y"},
            {"section": "Plan", "with": ""},
            {"frontmatter": {"status": "done", "draft": null}},
        ]))
        .unwrap();
        assert_eq!(
            edits,
            [
                replace("a", "b"),
                replace_all("a", "b"),
                append("x"),
                prepend("y"),
                section("Plan", ""),
                set(&[("draft", None), ("status", Some(json!("done")))]),
            ]
        );
        let cases: &[(Value, &str)] = &[
            (json!({"append": "x"}), "edits must be an array"),
            (json!([]), "edits is empty"),
            (json!([{"append": "x"}, "y"]), "edit #2: expected an object"),
            (
                json!([{"replace": "a"}]),
                "edit #1: a replace edit needs \"with\"",
            ),
            (
                json!([{"replace": "", "with": "b"}]),
                "edit #1: the text to replace is empty",
            ),
            (
                json!([{"replace": "a", "with": "b", "al": true}]),
                "edit #1: unknown key \"al\" in a replace edit",
            ),
            (
                json!([{"replace": "a", "with": 1}]),
                "\"with\" of a replace edit must be a string",
            ),
            (
                json!([{"replace": "a", "with": "b", "all": "yes"}]),
                "\"all\" must be true or false",
            ),
            (
                json!([{"append": "x", "with": "y"}]),
                "unknown key \"with\" in an append edit",
            ),
            (
                json!([{"append": "x", "prepend": "y"}]),
                "one edit per object: found append and prepend",
            ),
            (
                json!([{"insert": "x"}]),
                "edit #1: expected one of {replace, with, all?}",
            ),
            (json!([{"append": ""}]), "nothing to append"),
            (json!([{"section": "A"}]), "a section edit needs \"with\""),
            (
                json!([{"frontmatter": []}]),
                "\"frontmatter\" must be an object",
            ),
            (json!([{"frontmatter": {}}]), "no keys given"),
            (
                json!([{"frontmatter": {"a:b": 1}}]),
                "\"a:b\" is not a plain key",
            ),
        ];
        for (value, words) in cases {
            let err = parse(value).unwrap_err();
            assert!(err.0.contains(words), "{value}: {err}");
        }
    }

    #[test]
    fn the_schema_has_five_closed_shapes() {
        let schema = edits_schema();
        assert_eq!(schema["type"], "array");
        let shapes = schema["items"]["oneOf"].as_array().unwrap();
        assert_eq!(shapes.len(), 5);
        for shape in shapes {
            assert_eq!(shape["additionalProperties"], false);
            for key in shape["required"].as_array().unwrap() {
                assert!(shape["properties"].get(key.as_str().unwrap()).is_some());
            }
        }
    }

    #[test]
    fn diff_is_unified_and_clipped_at_a_line() {
        assert_eq!(diff("a\n", "a\n", "x", "y", 100), "");
        assert_eq!(
            diff("a\nb\nc\n", "a\nB\nc\n", "old", "new", 1000),
            "--- old\n+++ new\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"
        );
        let old: String = (0..100).map(|i| format!("line {i}\n")).collect();
        let new = old.replace("line ", "LINE ");
        let whole = diff(&old, &new, "a", "b", usize::MAX);
        for max in [0, 10, 80, 100, 500, 1000, whole.len() - 1] {
            let clipped = diff(&old, &new, "a", "b", max);
            let note = clipped.lines().last().unwrap();
            assert!(note.contains("of the diff left out"), "{note}");
            assert!(
                clipped.len() <= max.max(note.len() + 1),
                "{max}: {}",
                clipped.len()
            );
            let kept = &clipped[..clipped.len() - note.len() - 1];
            assert!(whole.starts_with(kept));
            assert!(kept.is_empty() || kept.ends_with('\n'));
            let left: usize = note
                .split(' ')
                .nth(4)
                .unwrap()
                .trim_start_matches('(')
                .parse()
                .unwrap();
            assert_eq!(left, whole.len() - kept.len(), "{note}");
        }
        assert_eq!(diff(&old, &new, "a", "b", whole.len()), whole);
    }

    /// A JSON value of a few levels, with strings of any characters.
    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(|f| json!(f)),
            any::<String>().prop_map(Value::String),
            "[ -~]{0,12}".prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 24, 5, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                prop::collection::btree_map(any::<String>(), inner, 0..5)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    /// The char boundary at or before `i`.
    fn floor_char(text: &str, mut i: usize) -> usize {
        while !text.is_char_boundary(i) {
            i -= 1;
        }
        i
    }

    proptest! {
        #[test]
        fn replace_changes_only_the_range(
            text in "([a-c #\\-\r\t]|\n|é){1,80}",
            start in 0usize..80,
            len in 1usize..12,
            with in "([a-d ]|\n){0,10}",
        ) {
            // An LF document (a stray `\r` elsewhere stays as it is).
            let text = if eol_of(&text) == "\n" { text } else { format!("x\n{text}") };
            let start = floor_char(&text, start.min(text.len() - 1));
            let mut end = (start + len).min(text.len());
            while !text.is_char_boundary(end) {
                end += 1;
            }
            let old = &text[start..end];
            let got = apply(&text, &[replace(old, &with)]);
            match occurrences(&text, old).len() {
                1 => prop_assert_eq!(got.unwrap(), format!("{}{with}{}", &text[..start], &text[end..])),
                n => {
                    let want = format!("occurs {n} times");
                    prop_assert!(got.unwrap_err().0.contains(&want));
                }
            }
        }

        #[test]
        fn replace_in_crlf_is_replace_in_lf(
            lf in "([a-c #]|\n){0,60}",
            start in 0usize..60,
            len in 1usize..12,
            with in "([a-d ]|\n){0,10}",
        ) {
            let lf = format!("{lf}\n");
            let crlf = lf.replace('\n', "\r\n");
            let start = start.min(lf.len() - 1);
            let end = (start + len).min(lf.len());
            let old = &lf[start..end];
            let got = apply(&crlf, &[replace(old, &with)]);
            match occurrences(&lf, old).len() {
                1 => {
                    let want = format!("{}{with}{}", &lf[..start], &lf[end..]);
                    prop_assert_eq!(got.unwrap(), want.replace('\n', "\r\n"));
                }
                n => {
                    let want = format!("occurs {n} times");
                    prop_assert!(got.unwrap_err().0.contains(&want));
                }
            }
        }

        #[test]
        fn apply_never_panics(
            text in "(---|\\.\\.\\.|# |=+|-+|```|> |- |[a-c:#\"' ]|\r?\n|\u{FEFF}|é){0,60}",
            words in "([a-c:#> ]|\n){0,8}",
            other in "([a-c ]|\r?\n){0,8}",
            kind in 0usize..5,
        ) {
            let edit = match kind {
                0 => Edit::Replace { old: words.clone(), with: other, all: words.len() % 2 == 0 },
                1 => Edit::Append(words),
                2 => Edit::Prepend(words),
                3 => Edit::Section { heading: words, with: other },
                _ => Edit::Frontmatter(vec![("k".to_string(), Some(json!(other))), ("a".to_string(), None)]),
            };
            if let Ok(new) = apply(&text, &[edit]) {
                let _ = diff(&text, &new, "a", "b", 200);
            }
        }

        #[test]
        fn frontmatter_values_read_back(
            base in prop_oneof![
                Just(""),
                Just("body\n"),
                Just("\u{FEFF}x"),
                Just("---\r\nkeep: [1, 2]  # c\r\nkey: |\r\n  old\r\n---\r\nbody\r\n"),
                Just("---\nkey: old\nother: {a: b}\n\n# end\n---\n"),
            ],
            key in "[a-z0-9_.-]{1,8}",
            value in json_value(),
        ) {
            prop_assume!(!value.is_null());
            let before = frontmatter::extract(base).frontmatter;
            let got = apply(base, &[set(&[(&key, Some(value.clone()))])]).unwrap();
            let mut want = match before {
                Some(Value::Object(map)) => map,
                _ => Map::new(),
            };
            want.insert(key.clone(), value);
            prop_assert_eq!(frontmatter::extract(&got).frontmatter, Some(Value::Object(want)));
            // Whatever else the file holds is there still, byte for byte.
            let body = frontmatter::split(base).map_or(base.trim_start_matches('\u{FEFF}'), |(_, b)| b);
            prop_assert!(got.ends_with(body));
        }
    }
}
