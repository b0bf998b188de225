//! Links between documents: what a document's Markdown links to, found once at import (links to `orchestra://` URIs, relative links to other documents, bare mentions of an id such as `FEAT-004`), and how a link names its target; SQL-free, for the store, the tools, the terminal and the viewer alike.
//!
//! A link names its target in one of two ways:
//! - a document's key (`LinkTarget::Document`), for a Markdown link or an
//!   autolink whose destination [`resolve`]s to a document of the project,
//!   whether or not that document exists (a link to a missing one is broken
//!   and becomes whole when it is imported, with no parsing again);
//! - a bare name (`LinkTarget::Mention`), for an id of the shape
//!   `LETTERS-NUMBER` written in the text. It links to the first document in
//!   key order whose last id segment is that name ([`name_of`]), and only
//!   while there is one: a mention of a name no document has is no link, so
//!   it is never broken.
//!
//! Links inside code (spans and blocks) do not count, nor do mentions inside
//! a link's text (the link counts) or of the document itself. Images are not
//! links. A link's line is the file's own, frontmatter included, as `outline`
//! numbers them.

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

use serde_json::json;

use crate::doc::{DocKey, Prefix};
use crate::store::{InLink, OutLink};
use crate::uri;

/// The longest link text and line context kept for a link, in bytes (cut
/// at a character boundary): a backlink shows where it is, not the page.
pub const CONTEXT_BYTES: usize = 240;

/// One link found in a document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// The line it is on (from 1, the frontmatter's lines counted).
    pub line: u32,
    pub target: LinkTarget,
    /// The link's text (a mention's is the name).
    pub text: String,
    /// The line it is on, trimmed and clipped to [`CONTEXT_BYTES`].
    pub context: String,
}

/// What a link points to.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LinkTarget {
    /// A document of the project, by key.
    Document(DocKey),
    /// A bare id (`FEAT-004`), linking to a document whose last id segment
    /// it is.
    Mention(String),
}

/// Where a link in a document points, once resolved.
#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    /// Another document of the project, and the fragment after `#`, if any.
    Document(DocKey, Option<String>),
    /// Anything else (another site, a page anchor): left as written.
    Other,
}

/// Resolves a link written in the document `from`: an `orchestra://` URI,
/// a path relative to the document (`../notes/x.md`, `FEAT-002.md`,
/// `./adr/0006.md#context`) or to the project root (`/docs/a.md`).
pub fn resolve(from: &DocKey, href: &str) -> Target {
    let (path, fragment) = match href.split_once('#') {
        Some((path, fragment)) => (path, Some(fragment.to_string())),
        None => (href, None),
    };
    if path.starts_with(uri::SCHEME_PREFIX) {
        return match uri::parse(path) {
            Ok(key) => Target::Document(key, fragment),
            Err(_) => Target::Other,
        };
    }
    // Another scheme (`https:`, `mailto:`), a network path, or an anchor in
    // this page: not a document.
    let has_scheme = path
        .split_once(':')
        .is_some_and(|(scheme, _)| !scheme.is_empty() && !scheme.contains('/'));
    if path.is_empty() || has_scheme || path.starts_with("//") {
        return Target::Other;
    }
    let path = path.split('?').next().unwrap_or_default();
    let Ok(decoded) = percent_encoding::percent_decode_str(path).decode_utf8() else {
        return Target::Other;
    };
    let Some(relative) = decoded.strip_suffix(".md") else {
        return Target::Other;
    };
    // The document's own folder in the project: `docs/adr` for docs/adr/0006.
    let mut segments: Vec<&str> = Vec::new();
    if !relative.starts_with('/') {
        segments.push(from.prefix.as_str());
        segments.extend(from.id.split('/'));
        segments.pop();
    }
    for segment in relative.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                if segments.pop().is_none() {
                    return Target::Other;
                }
            }
            segment => segments.push(segment),
        }
    }
    let Some((prefix, id)) = segments.split_first() else {
        return Target::Other;
    };
    match Prefix::parse(prefix) {
        Some(prefix) if !id.is_empty() => {
            let id = id.join("/");
            if crate::doc::is_valid_id(&id) {
                Target::Document(DocKey::new(prefix, id), fragment)
            } else {
                Target::Other
            }
        }
        _ => Target::Other,
    }
}

/// Whether `word` has the shape of an id that a bare mention names:
/// ASCII capital letters, a hyphen, digits (`FEAT-004`, `TASK-0061`).
pub fn is_mention(word: &str) -> bool {
    let Some((letters, digits)) = word.split_once('-') else {
        return false;
    };
    !letters.is_empty()
        && !digits.is_empty()
        && letters.bytes().all(|b| b.is_ascii_uppercase())
        && digits.bytes().all(|b| b.is_ascii_digit())
}

/// The name a mention of the document `id` would use: its last segment,
/// when that has a mention's shape (`tasks/TASK-003` → `TASK-003`).
pub fn name_of(id: &str) -> Option<&str> {
    let last = id.rsplit('/').next().unwrap_or(id);
    is_mention(last).then_some(last)
}

/// The bare words of `text` that have a mention's shape, with their byte
/// offsets: maximal runs of letters, digits, `-` and `_` (the viewer links
/// the same words).
pub fn mentions(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let is_word = |c: char| c.is_alphanumeric() || c == '-' || c == '_';
    let mut rest = text.char_indices().peekable();
    std::iter::from_fn(move || {
        loop {
            let (start, _) = loop {
                let (i, c) = rest.next()?;
                if is_word(c) {
                    break (i, c);
                }
            };
            let mut end = text.len();
            while let Some(&(i, c)) = rest.peek() {
                if !is_word(c) {
                    end = i;
                    break;
                }
                rest.next();
            }
            let word = &text[start..end];
            if is_mention(word) {
                return Some((start, word));
            }
        }
    })
}

/// Line numbers of byte offsets that come in ascending order, counted as
/// they come (no table of every line).
struct LineCounter<'a> {
    text: &'a [u8],
    offset: usize,
    line: u32,
}

impl LineCounter<'_> {
    fn line_of(&mut self, offset: usize) -> u32 {
        if offset < self.offset {
            // Out of order (a link's text before its start): count afresh.
            self.offset = 0;
            self.line = 1;
        }
        self.line += memchr_count(&self.text[self.offset..offset]);
        self.offset = offset;
        self.line
    }
}

fn memchr_count(bytes: &[u8]) -> u32 {
    bytes.iter().filter(|&&b| b == b'\n').count() as u32
}

/// The line around byte `offset` of `text`, trimmed and clipped.
fn context_at(text: &str, offset: usize) -> String {
    let start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let end = text[offset..].find('\n').map_or(text.len(), |i| offset + i);
    clip(text[start..end].trim())
}

fn clip(text: &str) -> String {
    let mut end = text.len().min(CONTEXT_BYTES);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_string()
}

/// The links of the document `from`, whose whole text (frontmatter
/// included) is `text`, in the order they are written. One per target and
/// line: the same target twice on a line is one link.
pub fn extract(from: &DocKey, text: &str) -> Vec<Link> {
    let body_start = match crate::frontmatter::split(text) {
        Some((_, body)) => text.len() - body.len(),
        None => 0,
    };
    let markdown = &text[body_start..];
    // Most documents link nowhere: without a `[`, a `<` or a capital
    // followed somewhere by a hyphen there is nothing for the parser to find.
    if !markdown.contains(['[', '<']) && !mentions(markdown).any(|_| true) {
        return Vec::new();
    }
    let own_name = name_of(&from.id);
    let options =
        Options::ENABLE_TABLES | Options::ENABLE_TASKLISTS | Options::ENABLE_STRIKETHROUGH;
    let mut lines = LineCounter {
        text: text.as_bytes(),
        offset: 0,
        line: 1,
    };
    let mut found: Vec<Link> = Vec::new();
    // The links being read (a link's text may hold another's in raw HTML
    // only; CommonMark links do not nest): target, start, text so far.
    let mut open: Vec<(Option<DocKey>, usize, String)> = Vec::new();
    let mut in_code_block = 0usize;
    let mut in_image = 0usize;
    let mut push = |found: &mut Vec<Link>, offset: usize, target: LinkTarget, text_: String| {
        let line = lines.line_of(offset);
        if found
            .iter()
            .rev()
            .take_while(|l| l.line == line)
            .any(|l| l.target == target)
        {
            return;
        }
        found.push(Link {
            line,
            target,
            text: clip(text_.trim()),
            context: context_at(text, offset),
        });
    };
    for (event, range) in Parser::new_ext(markdown, options).into_offset_iter() {
        let at = body_start + range.start;
        match event {
            Event::Start(Tag::CodeBlock(_)) => in_code_block += 1,
            Event::End(TagEnd::CodeBlock) => in_code_block = in_code_block.saturating_sub(1),
            Event::Start(Tag::Image { .. }) => in_image += 1,
            Event::End(TagEnd::Image) => in_image = in_image.saturating_sub(1),
            Event::Start(Tag::Link { dest_url, .. }) => {
                let target = match resolve(from, &dest_url) {
                    Target::Document(key, _) if key != *from => Some(key),
                    _ => None,
                };
                open.push((target, at, String::new()));
            }
            Event::End(TagEnd::Link) => {
                if let Some((Some(key), start, label)) = open.pop() {
                    push(&mut found, start, LinkTarget::Document(key), label);
                }
            }
            Event::Text(t) if in_code_block == 0 => {
                if let Some((_, _, label)) = open.last_mut() {
                    label.push_str(&t);
                } else if in_image == 0 {
                    for (offset, word) in mentions(&t) {
                        if Some(word) != own_name {
                            // The text event's bytes are the source's, but
                            // an escape or entity can shift them: the line
                            // is that of the text's start then.
                            let at = if markdown.get(range.clone()) == Some(&*t) {
                                at + offset
                            } else {
                                at
                            };
                            push(
                                &mut found,
                                at,
                                LinkTarget::Mention(word.to_string()),
                                word.to_string(),
                            );
                        }
                    }
                }
            }
            Event::Code(t) => {
                if let Some((_, _, label)) = open.last_mut() {
                    label.push_str(&t);
                }
            }
            Event::SoftBreak | Event::HardBreak => {
                if let Some((_, _, label)) = open.last_mut() {
                    label.push(' ');
                }
            }
            _ => {}
        }
    }
    found
}

/// The JSON of a link from the document: as the `links` tool and `orchestra links --json` give it.
pub fn out_json(link: &OutLink) -> serde_json::Value {
    json!({
        "line": link.line,
        "target": uri::format(&link.target),
        "exists": link.exists,
        "mention": link.mention,
        "text": link.text,
    })
}

/// The JSON of a link to the document, as the tool and the terminal give it.
pub fn in_json(link: &InLink) -> serde_json::Value {
    json!({
        "source": uri::format(&link.source),
        "line": link.line,
        "mention": link.mention,
        "text": link.text,
        "context": link.context,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(s: &str) -> DocKey {
        let (prefix, id) = s.split_once('/').unwrap();
        DocKey::new(Prefix::parse(prefix).unwrap(), id)
    }

    #[test]
    fn links_resolve_from_the_document() {
        let from = key("docs/adr/0006");
        // href → the document and fragment it opens, if any.
        type Case<'a> = (&'a str, Option<(&'a str, Option<&'a str>)>);
        let cases: &[Case] = &[
            (
                "orchestra://features/FEAT-001",
                Some(("features/FEAT-001", None)),
            ),
            (
                "orchestra://docs/adr/0007#x",
                Some(("docs/adr/0007", Some("x"))),
            ),
            ("0007.md", Some(("docs/adr/0007", None))),
            (
                "./0007.md#context",
                Some(("docs/adr/0007", Some("context"))),
            ),
            ("../guide.md", Some(("docs/guide", None))),
            ("../../notes/x.md", Some(("notes/x", None))),
            ("/features/FEAT-002.md", Some(("features/FEAT-002", None))),
            ("../../../x.md", None),
            ("../../other/x.md", None),
            ("https://example.com/a.md", None),
            ("mailto:a@b.c", None),
            ("javascript:alert(1)", None),
            ("#context", None),
            ("picture.png", None),
            ("//host/a.md", None),
            ("caf%C3%A9.md", Some(("docs/adr/café", None))),
        ];
        for (href, expected) in cases {
            let got = match resolve(&from, href) {
                Target::Document(key, fragment) => Some((key, fragment)),
                Target::Other => None,
            };
            let expected = expected.map(|(k, f)| (key(k), f.map(str::to_string)));
            assert_eq!(got, expected, "{href}");
        }
    }

    #[test]
    fn mention_shapes() {
        for (word, shaped) in [
            ("FEAT-004", true),
            ("TASK-0061", true),
            ("ADR-1", true),
            ("feat-004", false),
            ("FEAT-", false),
            ("-004", false),
            ("FEAT-004-b", false),
            ("FEAT-0a", false),
            ("FÉAT-1", false),
            ("FEAT004", false),
        ] {
            assert_eq!(is_mention(word), shaped, "{word}");
        }
        assert_eq!(name_of("tasks/TASK-003"), Some("TASK-003"));
        assert_eq!(name_of("FEAT-001"), Some("FEAT-001"));
        assert_eq!(name_of("area/page-1"), None);
    }

    /// (target as written in the expectation, line, text) of each link.
    fn extracted(from: &str, text: &str) -> Vec<(String, u32, String)> {
        extract(&key(from), text)
            .into_iter()
            .map(|l| {
                let target = match l.target {
                    LinkTarget::Document(k) => k.to_string(),
                    LinkTarget::Mention(name) => format!("~{name}"),
                };
                (target, l.line, l.text)
            })
            .collect()
    }

    #[test]
    fn every_kind_of_link_and_none_in_code() {
        let text = "---\ntitle: FEAT-001 sync\ndepends: FEAT-009\n---\n\
# FEAT-001: Sync\n\
\n\
See [the ADR](../docs/adr/0006.md#context) and <orchestra://notes/sync>.\n\
Also [two](FEAT-002.md), [web](https://example.com/x.md), FEAT-004 and FEAT-004 again.\n\
`FEAT-005` and `[x](FEAT-006.md)` are code; so is\n\
\n\
```\nFEAT-007 [y](FEAT-008.md)\n```\n\
\n\
![pic](FEAT-010.md) [FEAT-011 text](orchestra://features/FEAT-012) feat-013 FEAT-0014's.\n";
        assert_eq!(
            extracted("features/FEAT-001", text),
            vec![
                ("docs/adr/0006".into(), 7, "the ADR".into()),
                ("notes/sync".into(), 7, "orchestra://notes/sync".into()),
                ("features/FEAT-002".into(), 8, "two".into()),
                ("~FEAT-004".into(), 8, "FEAT-004".into()),
                ("features/FEAT-012".into(), 15, "FEAT-011 text".into()),
                ("~FEAT-0014".into(), 15, "FEAT-0014".into()),
            ]
        );
    }

    #[test]
    fn a_backlink_shows_its_line() {
        let links = extract(
            &key("notes/a"),
            "intro\n\n  Blocked by FEAT-004, see [b](b.md).  \n",
        );
        assert_eq!(links.len(), 2);
        assert!(
            links
                .iter()
                .all(|l| l.line == 3 && l.context == "Blocked by FEAT-004, see [b](b.md).")
        );
        let long = format!("{} FEAT-1", "é".repeat(400));
        let links = extract(&key("notes/a"), &long);
        assert_eq!(links[0].context.len(), CONTEXT_BYTES);
    }

    #[test]
    fn a_document_does_not_link_to_itself() {
        assert!(extracted("docs/tasks/TASK-003", "TASK-003 [me](TASK-003.md)").is_empty());
    }
}
