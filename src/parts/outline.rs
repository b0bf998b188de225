//! A Markdown document's outline: its headings (ATX and setext, outside the frontmatter and code, as CommonMark finds them) with their lines, and the section each one heads: up to the next heading of the same or a higher level; and the outline import stores for a large document (`Stored`, in a compact binary form), so that the tools neither load nor parse its whole text.

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

use super::Lines;

/// One heading and its section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Heading {
    /// 1 for `#`, … 6 for `######`.
    pub level: u8,
    /// Its text, inline Markdown taken out (`` `x` `` reads `x`).
    pub text: String,
    /// The line it starts on, and the last line of its section.
    pub line: usize,
    pub end_line: usize,
    /// The section's bytes, the heading's line included.
    pub start: usize,
    pub end: usize,
}

/// The headings of `text`, in order. The frontmatter block is not Markdown:
/// a `# comment` in its YAML is no heading.
pub fn headings(text: &str, lines: &Lines) -> Vec<Heading> {
    let body_start = match crate::frontmatter::split(text) {
        Some((_, body)) => text.len() - body.len(),
        // A BOM is no text: past it, a first line `# Title` is a heading.
        None if text.starts_with('\u{feff}') => '\u{feff}'.len_utf8(),
        None => 0,
    };
    let options =
        Options::ENABLE_TABLES | Options::ENABLE_TASKLISTS | Options::ENABLE_STRIKETHROUGH;
    let mut found: Vec<(u8, String, usize)> = Vec::new();
    let mut open: Option<(u8, String, usize)> = None;
    for (event, range) in Parser::new_ext(&text[body_start..], options).into_offset_iter() {
        match event {
            Event::Start(Tag::Heading { level, .. }) => {
                open = Some((level as u8, String::new(), body_start + range.start));
            }
            Event::End(TagEnd::Heading(_)) => found.extend(open.take()),
            Event::Text(t) | Event::Code(t) => {
                if let Some((_, heading, _)) = &mut open {
                    heading.push_str(&t);
                }
            }
            Event::SoftBreak | Event::HardBreak => {
                if let Some((_, heading, _)) = &mut open {
                    heading.push(' ');
                }
            }
            _ => {}
        }
    }
    let mut headings: Vec<Heading> = found
        .into_iter()
        .map(|(level, text, start)| {
            let line = lines.line_of(start);
            Heading {
                level,
                text: text.trim().to_string(),
                line,
                end_line: lines.count(),
                start: lines.start(line),
                end: lines.end(lines.count()),
            }
        })
        .collect();
    // A section ends where the next heading of its level or higher begins.
    for i in 0..headings.len() {
        if let Some(next) = headings[i + 1..]
            .iter()
            .find(|h| h.level <= headings[i].level)
        {
            let (line, start) = (next.line, next.start);
            headings[i].end_line = line - 1;
            headings[i].end = start;
        }
    }
    headings
}

/// The least size of a document whose outline import stores
/// ([`Stored`]): below it, `outline` and `read` by section parse the text
/// at each call, which costs less than a millisecond, and a cold import of
/// many small documents parses nothing more.
pub const OUTLINE_MIN_BYTES: usize = 256 * 1024;

/// What the tools need of a document's outline, computed once at import
/// and stored beside a large document: its headings, its lines, its
/// frontmatter keys and its size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    pub size: usize,
    pub total_lines: usize,
    pub frontmatter_keys: Option<Vec<String>>,
    pub headings: Vec<Heading>,
}

/// The outline to store of `text`, when it is at least
/// [`OUTLINE_MIN_BYTES`] large.
pub fn to_store(text: &str) -> Option<Stored> {
    (text.len() >= OUTLINE_MIN_BYTES).then(|| of(text))
}

/// The outline of `text`.
pub fn of(text: &str) -> Stored {
    let lines = Lines::of(text);
    Stored {
        size: text.len(),
        total_lines: lines.count(),
        frontmatter_keys: crate::frontmatter::keys(text),
        headings: headings(text, &lines),
    }
}

/// The format of [`Stored::encode`]: its first byte.
const FORMAT: u8 = 1;

impl Stored {
    /// Its bytes as stored: a format byte, then numbers as LEB128 varints
    /// and strings as a length and their UTF-8 bytes (the size, the line
    /// count, the keys, then each heading's level, lines, bytes and text).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(16 + self.headings.len() * 32);
        out.push(FORMAT);
        put(&mut out, self.size as u64);
        put(&mut out, self.total_lines as u64);
        match &self.frontmatter_keys {
            None => put(&mut out, 0),
            Some(keys) => {
                put(&mut out, keys.len() as u64 + 1);
                for key in keys {
                    put_str(&mut out, key);
                }
            }
        }
        put(&mut out, self.headings.len() as u64);
        for h in &self.headings {
            out.push(h.level);
            put(&mut out, h.line as u64);
            put(&mut out, h.end_line as u64);
            put(&mut out, h.start as u64);
            put(&mut out, h.end as u64);
            put_str(&mut out, &h.text);
        }
        out
    }

    /// The outline `bytes` hold; `None` for bytes not of [`Stored::encode`].
    pub fn decode(bytes: &[u8]) -> Option<Stored> {
        let (&format, mut rest) = bytes.split_first()?;
        if format != FORMAT {
            return None;
        }
        let bytes = &mut rest;
        let size = get(bytes)? as usize;
        let total_lines = get(bytes)? as usize;
        let frontmatter_keys = match get(bytes)? {
            0 => None,
            n => Some((1..n).map(|_| get_str(bytes)).collect::<Option<Vec<_>>>()?),
        };
        let count = get(bytes)? as usize;
        let mut headings = Vec::with_capacity(count.min(bytes.len()));
        for _ in 0..count {
            let (&level, rest) = bytes.split_first()?;
            *bytes = rest;
            headings.push(Heading {
                level,
                line: get(bytes)? as usize,
                end_line: get(bytes)? as usize,
                start: get(bytes)? as usize,
                end: get(bytes)? as usize,
                text: get_str(bytes)?,
            });
        }
        bytes.is_empty().then_some(Stored {
            size,
            total_lines,
            frontmatter_keys,
            headings,
        })
    }
}

fn put(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push(n as u8 | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    put(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

fn get(bytes: &mut &[u8]) -> Option<u64> {
    let mut n = 0u64;
    for shift in (0..64).step_by(7) {
        let (&b, rest) = bytes.split_first()?;
        *bytes = rest;
        n |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return Some(n);
        }
    }
    None
}

fn get_str(bytes: &mut &[u8]) -> Option<String> {
    let len = get(bytes)? as usize;
    if len > bytes.len() {
        return None;
    }
    let (s, rest) = bytes.split_at(len);
    *bytes = rest;
    String::from_utf8(s.to_vec()).ok()
}

/// The path of heading `index`: its ancestors' texts and its own, joined
/// by ` > ` (`Design > Sync`).
pub fn path(headings: &[Heading], index: usize) -> String {
    let mut parts = vec![headings[index].text.as_str()];
    let mut level = headings[index].level;
    for heading in headings[..index].iter().rev() {
        if heading.level < level {
            parts.push(&heading.text);
            level = heading.level;
        }
    }
    parts.reverse();
    parts.join(" > ")
}

/// Why a section cannot be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SectionError {
    /// No heading has that text: the paths of those there are.
    Missing(Vec<String>),
    /// Several have it: their paths and lines.
    Ambiguous(Vec<(String, usize)>),
}

impl std::fmt::Display for SectionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        const SHOWN: usize = 50;
        match self {
            SectionError::Missing(paths) if paths.is_empty() => {
                write!(f, "no such heading: the document has none")
            }
            SectionError::Missing(paths) => {
                let shown: Vec<&str> = paths.iter().take(SHOWN).map(String::as_str).collect();
                write!(
                    f,
                    "no such heading; the document's are: {}",
                    shown.join("; ")
                )?;
                if paths.len() > SHOWN {
                    write!(f, "; and {} more (see outline)", paths.len() - SHOWN)?;
                }
                Ok(())
            }
            SectionError::Ambiguous(found) => {
                let shown: Vec<String> = found
                    .iter()
                    .take(SHOWN)
                    .map(|(path, line)| format!("{path} (line {line})"))
                    .collect();
                write!(
                    f,
                    "{} headings have that text: name one by its path (`Parent > Child`) or read it by offset: {}",
                    found.len(),
                    shown.join("; ")
                )
            }
        }
    }
}

/// The heading that `wanted` names: its text, or the last part of a path
/// `A > B > C` whose earlier parts are among its ancestors, in order.
/// Texts are compared trimmed, exactly, then ignoring case.
pub fn find<'a>(headings: &'a [Heading], wanted: &str) -> Result<&'a Heading, SectionError> {
    let parts: Vec<&str> = wanted.split('>').map(str::trim).collect();
    let exact = |a: &str, b: &str| a == b;
    let caseless = |a: &str, b: &str| a.to_lowercase() == b.to_lowercase();
    for same in [&exact as &dyn Fn(&str, &str) -> bool, &caseless] {
        // A heading whose own text holds ` > ` is named by its whole text.
        let whole: Vec<usize> = (0..headings.len())
            .filter(|&i| same(&headings[i].text, wanted.trim()))
            .collect();
        let matches = if whole.is_empty() {
            (0..headings.len())
                .filter(|&i| under_path(headings, i, &parts, same))
                .collect()
        } else {
            whole
        };
        match matches.as_slice() {
            [] => continue,
            [one] => return Ok(&headings[*one]),
            many => {
                return Err(SectionError::Ambiguous(
                    many.iter()
                        .map(|&i| (path(headings, i), headings[i].line))
                        .collect(),
                ));
            }
        }
    }
    Err(SectionError::Missing(
        (0..headings.len()).map(|i| path(headings, i)).collect(),
    ))
}

/// Whether heading `index` is `parts`' last, under ancestors named by the
/// parts before it (nearest last).
fn under_path(
    headings: &[Heading],
    index: usize,
    parts: &[&str],
    same: &dyn Fn(&str, &str) -> bool,
) -> bool {
    let Some((last, ancestors)) = parts.split_last() else {
        return false;
    };
    if !same(&headings[index].text, last) {
        return false;
    }
    let mut wanted = ancestors.iter().rev().peekable();
    let mut level = headings[index].level;
    for heading in headings[..index].iter().rev() {
        if wanted.peek().is_none() {
            break;
        }
        if heading.level < level {
            level = heading.level;
            if wanted.peek().is_some_and(|w| same(&heading.text, w)) {
                wanted.next();
            }
        }
    }
    wanted.peek().is_none()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outline(text: &str) -> Vec<(u8, String, usize, usize)> {
        headings(text, &Lines::of(text))
            .into_iter()
            .map(|h| (h.level, h.text, h.line, h.end_line))
            .collect()
    }

    fn h(level: u8, text: &str, line: usize, end_line: usize) -> (u8, String, usize, usize) {
        (level, text.to_string(), line, end_line)
    }

    #[test]
    fn headings_and_their_sections() {
        let text = "---\n# not: a heading\n---\n# Title\nintro\n## A `code`\ntext\n```\n# in code\n```\n### A.1\nSetext\n------\n# Next\n";
        assert_eq!(
            outline(text),
            [
                h(1, "Title", 4, 13),
                h(2, "A code", 6, 11),
                h(3, "A.1", 11, 11),
                h(2, "Setext", 12, 13),
                h(1, "Next", 14, 14),
            ]
        );
        assert_eq!(outline("no headings\n"), []);
        assert_eq!(outline("# Only\r\nbody\r\n"), [h(1, "Only", 1, 2)]);
        assert_eq!(
            outline("\u{feff}# After a BOM\nbody\n"),
            [h(1, "After a BOM", 1, 2)]
        );
        let sections = headings(text, &Lines::of(text));
        assert_eq!(
            &text[sections[1].start..sections[1].end],
            "## A `code`\ntext\n```\n# in code\n```\n### A.1\n"
        );
    }

    #[test]
    fn a_stored_outline_reads_back_the_same() {
        for text in [
            "---\ntags: [a]\nowner: x\n---\n# Title\nintro\n## A `code`\ntext\n```\n# in code\n```\nSetext é\n------\n",
            "\u{feff}# After a BOM\r\nbody\r\n",
            "---\n---\n# Empty frontmatter\n",
            "no headings",
            "",
        ] {
            let stored = of(text);
            assert_eq!(Stored::decode(&stored.encode()), Some(stored), "{text:?}");
        }
        let big = "# x\n".repeat(100_000);
        let stored = of(&big);
        assert_eq!(Stored::decode(&stored.encode()).as_ref(), Some(&stored));
        assert_eq!(Stored::decode(&stored.encode()[..100]), None);
        assert_eq!(Stored::decode(b""), None);
        assert_eq!(to_store("# small\n"), None);
    }

    #[test]
    fn a_section_is_named_by_its_text_or_its_path() {
        let text = "# Design\n## Sync\none\n# Ops\n## Sync\ntwo\n## Deploy: a > b\n";
        let headings = headings(text, &Lines::of(text));
        let line = |wanted: &str| find(&headings, wanted).map(|h| h.line);
        assert_eq!(line("Design > Sync"), Ok(2));
        assert_eq!(line("ops > sync"), Ok(5));
        assert_eq!(line("Ops"), Ok(4));
        assert_eq!(line("Deploy: a > b"), Ok(7));
        assert_eq!(
            line("Sync"),
            Err(SectionError::Ambiguous(vec![
                ("Design > Sync".to_string(), 2),
                ("Ops > Sync".to_string(), 5)
            ]))
        );
        let missing = find(&headings, "Nope").unwrap_err();
        assert!(
            missing
                .to_string()
                .contains("Design > Sync; Ops; Ops > Sync"),
            "{missing}"
        );
        assert!(matches!(
            find(&headings, "Ops > Design"),
            Err(SectionError::Missing(_))
        ));
    }
}
