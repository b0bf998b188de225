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
//!
//! The edits of a call read from its JSON (`wire`), the frontmatter's lines
//! rewritten and read back (`keys`); here, the edits on the text and
//! the diff of a change.

use std::borrow::Cow;
use std::fmt;

use pulldown_cmark::{Event, Options, Parser, Tag};
use serde_json::Value;

use crate::frontmatter;
use crate::parts::Lines;
use crate::parts::outline::{self, SectionError};

mod keys;
#[cfg(test)]
mod tests;
mod wire;

use keys::{plain_key, set_frontmatter};
pub use wire::{edits_schema, parse};

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

/// The unified diff (3 lines of context) from `old` to `new`, with
/// `---`/`+++` labels given, for dryRun and results; clipped to at most
/// `max_bytes` at a line boundary with a final line saying how much was
/// left out. Empty when the texts are equal.
pub fn diff(old: &str, new: &str, from_label: &str, to_label: &str, max_bytes: usize) -> String {
    if old == new {
        return String::new();
    }
    clip(
        crate::history::unified(old, new, from_label, to_label),
        max_bytes,
    )
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
