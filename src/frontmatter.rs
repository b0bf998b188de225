//! YAML frontmatter of a Markdown document, and the title and description derived from it.
//!
//! Rules:
//! - A frontmatter block opens with a first line (after an optional BOM) that
//!   is exactly `---` and closes at the next line that is exactly `---` or
//!   `...`; trailing spaces and tabs are allowed on both. Unclosed means none.
//! - An empty block (or one holding only comments or `null`) is an empty
//!   mapping: `frontmatter: Some({})`, no warning. `None` is kept for "no
//!   block" and "malformed block", so the two cases stay distinguishable.
//! - Title: frontmatter `title` if it is a non-blank string (trimmed), a
//!   number or a bool; otherwise the first non-empty ATX level-1 heading of
//!   the body outside fenced code, as raw text (inline Markdown is kept).
//!   A closing `#` sequence is removed only when preceded by a space, as in
//!   CommonMark, so `# C#` is titled `C#`.
//! - Description: frontmatter `description` under the same scalar rules.

use serde_json::{Map, Value};

#[derive(Debug, Default, Clone, PartialEq)]
pub struct Extracted {
    pub title: Option<String>,
    pub description: Option<String>,
    /// The frontmatter as JSON: `None` when there is no block or it is malformed.
    pub frontmatter: Option<Value>,
    /// `Some("malformed frontmatter: ...")` when a block exists but is not a YAML mapping.
    pub warning: Option<String>,
}

const BOM: char = '\u{FEFF}';

/// `(yaml, body)` of a document that starts with a closed frontmatter block.
pub fn split(text: &str) -> Option<(&str, &str)> {
    let text = text.strip_prefix(BOM).unwrap_or(text);
    let open_end = text.find('\n')?;
    if !is_marker(&text[..open_end], "---") {
        return None;
    }
    let yaml_start = open_end + 1;
    let mut pos = yaml_start;
    while pos < text.len() {
        let line_end = text[pos..].find('\n').map_or(text.len(), |i| pos + i);
        let line = &text[pos..line_end];
        if is_marker(line, "---") || is_marker(line, "...") {
            let body_start = (line_end + 1).min(text.len());
            return Some((&text[yaml_start..pos], &text[body_start..]));
        }
        pos = line_end + 1;
    }
    None
}

/// The keys of a document's frontmatter, in the order the block has them;
/// `None` without a well-formed block.
pub fn keys(text: &str) -> Option<Vec<String>> {
    let (yaml, _) = split(text)?;
    if yaml.trim().is_empty() {
        return Some(Vec::new());
    }
    if flow_depth(yaml) > MAX_FLOW_DEPTH {
        return None;
    }
    let mapping = match serde_yaml_ng::from_str::<serde_yaml_ng::Value>(yaml).ok()? {
        serde_yaml_ng::Value::Mapping(mapping) => mapping,
        serde_yaml_ng::Value::Null => return Some(Vec::new()),
        _ => return None,
    };
    Some(
        mapping
            .keys()
            .map(|key| match key {
                serde_yaml_ng::Value::String(s) => s.clone(),
                other => serde_yaml_ng::to_string(other)
                    .map(|s| s.trim_end().to_string())
                    .unwrap_or_default(),
            })
            .collect(),
    )
}

/// Title, description and frontmatter of a Markdown document. Never fails:
/// a broken frontmatter block becomes a warning.
pub fn extract(text: &str) -> Extracted {
    let mut extracted = Extracted::default();
    let body = match split(text) {
        Some((yaml, body)) => {
            match parse_mapping(yaml) {
                Ok(map) => {
                    extracted.title = map.get("title").and_then(scalar_text);
                    extracted.description = map.get("description").and_then(scalar_text);
                    extracted.frontmatter = Some(Value::Object(map));
                }
                Err(warning) => extracted.warning = Some(warning),
            }
            body
        }
        None => text.strip_prefix(BOM).unwrap_or(text),
    };
    if extracted.title.is_none() {
        extracted.title = first_h1(body).map(str::to_owned);
    }
    extracted
}

/// A line that is exactly `marker`, give or take trailing blanks and a `\r`.
fn is_marker(line: &str, marker: &str) -> bool {
    let line = line.strip_suffix('\r').unwrap_or(line);
    line.trim_end_matches([' ', '\t']) == marker
}

fn parse_mapping(yaml: &str) -> Result<Map<String, Value>, String> {
    // Blank blocks are common (templates) and not worth a parser call.
    if yaml.trim().is_empty() {
        return Ok(Map::new());
    }
    // The YAML parser takes time quadratic in the depth of flow collections
    // (`[[[[…`) before it gives up at its recursion limit: refuse such
    // blocks up front, so one hostile file cannot stall an import.
    if flow_depth(yaml) > MAX_FLOW_DEPTH {
        return Err(format!(
            "malformed frontmatter: brackets nested deeper than {MAX_FLOW_DEPTH}"
        ));
    }
    match serde_yaml_ng::from_str::<Value>(yaml) {
        Ok(Value::Object(map)) => Ok(map),
        // Only comments, or an explicit null: nothing to say, not an error.
        Ok(Value::Null) => Ok(Map::new()),
        Ok(other) => Err(format!(
            "malformed frontmatter: expected a mapping, found {}",
            kind(&other)
        )),
        Err(err) => Err(format!("malformed frontmatter: {err}")),
    }
}

/// Deeper than any real frontmatter, and below the parser's own limit (128).
const MAX_FLOW_DEPTH: usize = 64;

/// The deepest nesting of `[` and `{` in `yaml`, quotes ignored: an upper
/// bound of the depth of its flow collections.
fn flow_depth(yaml: &str) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    for byte in yaml.bytes() {
        match byte {
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a sequence",
        Value::Object(_) => "a mapping",
    }
}

/// A scalar field as display text; blank strings count as absent.
fn scalar_text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.trim()).filter(|s| !s.is_empty()).map(str::to_owned),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Null | Value::Array(_) | Value::Object(_) => None,
    }
}

/// The text of the first non-empty `# ` heading outside fenced code, in one pass.
fn first_h1(body: &str) -> Option<&str> {
    let mut open_fence: Option<Fence> = None;
    for line in body.lines() {
        let Some(block) = block_start(line) else {
            continue;
        };
        match open_fence {
            Some(fence) => {
                if fence.is_closed_by(block) {
                    open_fence = None;
                }
            }
            None => {
                if let Some(fence) = Fence::open(block) {
                    open_fence = Some(fence);
                } else if let Some(title) = h1_text(block).filter(|t| !t.is_empty()) {
                    return Some(title);
                }
            }
        }
    }
    None
}

/// The line without its indentation, if the indentation (at most three
/// spaces) still allows a heading or fence; deeper means indented code.
fn block_start(line: &str) -> Option<&str> {
    let trimmed = line.trim_start_matches(' ');
    let indent = line.len() - trimmed.len();
    (indent <= 3 && !trimmed.starts_with('\t')).then_some(trimmed)
}

#[derive(Clone, Copy)]
struct Fence {
    marker: u8,
    len: usize,
}

impl Fence {
    fn open(block: &str) -> Option<Fence> {
        let marker = *block.as_bytes().first()?;
        if marker != b'`' && marker != b'~' {
            return None;
        }
        let len = block.bytes().take_while(|&b| b == marker).count();
        // A backtick "fence" whose info string has a backtick is inline code.
        let info = &block[len..];
        (len >= 3 && !(marker == b'`' && info.contains('`'))).then_some(Fence { marker, len })
    }

    fn is_closed_by(self, block: &str) -> bool {
        let len = block.bytes().take_while(|&b| b == self.marker).count();
        len >= self.len && block[len..].trim_matches([' ', '\t', '\r']).is_empty()
    }
}

/// The text of a level-1 ATX heading, without its optional closing `#`s.
fn h1_text(block: &str) -> Option<&str> {
    let rest = block.strip_prefix('#')?;
    if !(rest.is_empty() || rest.starts_with([' ', '\t'])) {
        return None; // `#tag` or `##`
    }
    let text = rest.trim();
    let without_closing = text.trim_end_matches('#');
    Some(if without_closing.is_empty() {
        ""
    } else if without_closing.ends_with([' ', '\t']) {
        without_closing.trim_end()
    } else {
        text
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn keys_in_the_blocks_order() {
        let keys = |text: &str| keys(text);
        let some = |k: &[&str]| Some(k.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(
            keys(
                "---
zeta: 1
alpha: [a]
# c
3: x
---
body"
            ),
            some(&["zeta", "alpha", "3"])
        );
        assert_eq!(
            keys(
                "---
---
"
            ),
            some(&[])
        );
        assert_eq!(
            keys(
                "---
# only a comment
---
"
            ),
            some(&[])
        );
        assert_eq!(keys("no block"), None);
        assert_eq!(
            keys(
                "---
- a list
---
"
            ),
            None
        );
    }

    /// The expected result, with the warning given as a prefix of the actual one.
    struct Expected {
        title: Option<&'static str>,
        description: Option<&'static str>,
        frontmatter: Option<Value>,
        warning: Option<&'static str>,
    }

    const NONE: Expected = Expected {
        title: None,
        description: None,
        frontmatter: None,
        warning: None,
    };

    #[track_caller]
    fn check(text: &str, expected: Expected) {
        let got = extract(text);
        assert_eq!(got.title.as_deref(), expected.title, "title of {text:?}");
        assert_eq!(
            got.description.as_deref(),
            expected.description,
            "description of {text:?}"
        );
        assert_eq!(
            got.frontmatter, expected.frontmatter,
            "frontmatter of {text:?}"
        );
        match (&got.warning, expected.warning) {
            (None, None) => {}
            (Some(warning), Some(prefix)) if warning.starts_with(prefix) => {}
            (got, want) => panic!("warning of {text:?}: got {got:?}, want prefix {want:?}"),
        }
    }

    #[test]
    fn extracts() {
        let cases: Vec<(&str, Expected)> = vec![
            ("", NONE),
            ("plain text\n", NONE),
            (
                "# Title\n\nbody",
                Expected {
                    title: Some("Title"),
                    ..NONE
                },
            ),
            (
                "intro\n\n#  Spaced   \n",
                Expected {
                    title: Some("Spaced"),
                    ..NONE
                },
            ),
            (
                "   # Indented three\n",
                Expected {
                    title: Some("Indented three"),
                    ..NONE
                },
            ),
            ("    # indented code\n", NONE),
            ("\t# tab is code\n", NONE),
            (
                "# Closed ##\n",
                Expected {
                    title: Some("Closed"),
                    ..NONE
                },
            ),
            (
                "# C#\n",
                Expected {
                    title: Some("C#"),
                    ..NONE
                },
            ),
            (
                "#\n# ##\n# Real\n",
                Expected {
                    title: Some("Real"),
                    ..NONE
                },
            ),
            (
                "#\tTabbed\n",
                Expected {
                    title: Some("Tabbed"),
                    ..NONE
                },
            ),
            ("#hashtag\n", NONE),
            ("## sub\n", NONE),
            (
                "## sub\n# Top\n",
                Expected {
                    title: Some("Top"),
                    ..NONE
                },
            ),
            (
                "# First\n# Second\n",
                Expected {
                    title: Some("First"),
                    ..NONE
                },
            ),
            (
                "# CRLF title\r\nbody\r\n",
                Expected {
                    title: Some("CRLF title"),
                    ..NONE
                },
            ),
            (
                "\u{FEFF}# BOM title\n",
                Expected {
                    title: Some("BOM title"),
                    ..NONE
                },
            ),
            // Fenced code.
            (
                "```\n# not a title\n```\n# Title\n",
                Expected {
                    title: Some("Title"),
                    ..NONE
                },
            ),
            ("~~~md\n# no\n~~~\n", NONE),
            (
                "````\n```\n# still code\n````\n# Out\n",
                Expected {
                    title: Some("Out"),
                    ..NONE
                },
            ),
            ("~~~\n# no\n```\n# no\n", NONE),
            ("```\n# unclosed fence runs to the end\n", NONE),
            (
                "``not a fence``\n# Title\n",
                Expected {
                    title: Some("Title"),
                    ..NONE
                },
            ),
            (
                "``` a`b\n# Title\n",
                Expected {
                    title: Some("Title"),
                    ..NONE
                },
            ),
            // Frontmatter.
            (
                "---\ntitle: From YAML\ndescription: Short\n---\n# Heading\n",
                Expected {
                    title: Some("From YAML"),
                    description: Some("Short"),
                    frontmatter: Some(json!({"title": "From YAML", "description": "Short"})),
                    warning: None,
                },
            ),
            (
                "---\ntags: [a, b]\n---\n# Heading\n",
                Expected {
                    title: Some("Heading"),
                    frontmatter: Some(json!({"tags": ["a", "b"]})),
                    ..NONE
                },
            ),
            (
                "---\r\ntitle: Windows\r\n---\r\nbody\r\n",
                Expected {
                    title: Some("Windows"),
                    frontmatter: Some(json!({"title": "Windows"})),
                    ..NONE
                },
            ),
            (
                "\u{FEFF}---\ntitle: BOM\n---\n",
                Expected {
                    title: Some("BOM"),
                    frontmatter: Some(json!({"title": "BOM"})),
                    ..NONE
                },
            ),
            (
                "--- \t\ntitle: x\n...\t\n",
                Expected {
                    title: Some("x"),
                    frontmatter: Some(json!({"title": "x"})),
                    ..NONE
                },
            ),
            (
                "---\ntitle: 2024\ndescription: 1.5\n---\n",
                Expected {
                    title: Some("2024"),
                    description: Some("1.5"),
                    frontmatter: Some(json!({"title": 2024, "description": 1.5})),
                    ..NONE
                },
            ),
            (
                "---\ntitle: true\n---\n",
                Expected {
                    title: Some("true"),
                    frontmatter: Some(json!({"title": true})),
                    ..NONE
                },
            ),
            (
                "---\ntitle: '  '\ndescription: [x]\n---\n# Fallback\n",
                Expected {
                    title: Some("Fallback"),
                    frontmatter: Some(json!({"title": "  ", "description": ["x"]})),
                    ..NONE
                },
            ),
            (
                "---\ntitle:\n---\n# Null title\n",
                Expected {
                    title: Some("Null title"),
                    frontmatter: Some(json!({"title": null})),
                    ..NONE
                },
            ),
            (
                "---\ndate: 2024-01-02\n---\n",
                Expected {
                    frontmatter: Some(json!({"date": "2024-01-02"})),
                    ..NONE
                },
            ),
            (
                "---\n---\n# T\n",
                Expected {
                    title: Some("T"),
                    frontmatter: Some(json!({})),
                    ..NONE
                },
            ),
            (
                "---\n# only a comment\n---\n",
                Expected {
                    frontmatter: Some(json!({})),
                    ..NONE
                },
            ),
            // Malformed or non-mapping frontmatter: warning, heading still found.
            (
                "---\ntitle: [unclosed\n---\n# Heading\n",
                Expected {
                    title: Some("Heading"),
                    warning: Some("malformed frontmatter: "),
                    ..NONE
                },
            ),
            (
                "---\n- a\n- b\n---\n# H\n",
                Expected {
                    title: Some("H"),
                    warning: Some("malformed frontmatter: expected a mapping, found a sequence"),
                    ..NONE
                },
            ),
            (
                "---\njust words\n---\n",
                Expected {
                    warning: Some("malformed frontmatter: expected a mapping, found a string"),
                    ..NONE
                },
            ),
            // Not frontmatter at all.
            (
                "---\ntitle: unclosed\n# Heading\n",
                Expected {
                    title: Some("Heading"),
                    ..NONE
                },
            ),
            ("---", NONE),
            ("----\ntitle: x\n----\n", NONE),
            ("\n---\ntitle: x\n---\n", NONE),
            (
                " ---\ntitle: x\n---\n# H\n",
                Expected {
                    title: Some("H"),
                    ..NONE
                },
            ),
        ];
        for (text, expected) in cases {
            check(text, expected);
        }
    }

    #[test]
    fn hostile_yaml_is_a_warning() {
        let deep = format!("---\na: {}{}\n---\n", "[".repeat(500), "]".repeat(500));
        // Ten levels of ten aliases each: 10^10 nodes if expanded.
        let mut laughs = String::from("---\na0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..10 {
            let refs = vec![format!("*a{}", i - 1); 10].join(", ");
            laughs.push_str(&format!("a{i}: &a{i} [{refs}]\n"));
        }
        laughs.push_str("---\n# Laughs\n");
        check(
            &deep,
            Expected {
                warning: Some("malformed frontmatter: "),
                ..NONE
            },
        );
        check(
            &laughs,
            Expected {
                title: Some("Laughs"),
                warning: Some("malformed frontmatter: "),
                ..NONE
            },
        );
    }

    #[track_caller]
    fn check_split(text: &str, expected: Option<(&str, &str)>) {
        assert_eq!(split(text), expected, "split({text:?})");
    }

    #[test]
    fn splits() {
        for (text, expected) in [
            ("---\na: 1\n---\nbody", Some(("a: 1\n", "body"))),
            ("---\r\na: 1\r\n---\r\nbody", Some(("a: 1\r\n", "body"))),
            ("\u{FEFF}---\na: 1\n...\nbody", Some(("a: 1\n", "body"))),
            ("---  \na: 1\n---\t\n", Some(("a: 1\n", ""))),
            ("---\n---", Some(("", ""))),
            ("---\na: 1\n---", Some(("a: 1\n", ""))),
            ("---\na: ---\n---\nb\n---\n", Some(("a: ---\n", "b\n---\n"))),
            ("---\na: 1\n", None),
            ("---", None),
            ("", None),
            ("---x\n---\n", None),
            ("# T\n---\na\n---\n", None),
        ] {
            check_split(text, expected);
        }
    }

    proptest! {
        #[test]
        fn extract_never_panics(text in any::<String>()) {
            let _ = extract(&text);
        }

        #[test]
        fn frontmatter_xor_warning(
            yaml in "([a-z#:\\-\\[\\]{}'\" \t|>&*!%@`]|\r?\n){0,60}",
            body in "([#`~ a-z]|\r?\n){0,40}",
        ) {
            let text = format!("---\n{yaml}\n---\n{body}");
            let got = extract(&text);
            prop_assert!(got.frontmatter.is_some() != got.warning.is_some(), "{:?}", got);
            if let Some(title) = &got.title {
                prop_assert!(!title.is_empty());
            }
        }

        #[test]
        fn no_block_means_no_frontmatter(text in "[^\\-\u{FEFF}]\\PC*") {
            let got = extract(&text);
            prop_assert_eq!(got.frontmatter, None);
            prop_assert_eq!(got.warning, None);
        }
    }

    #[test]
    fn deep_flow_nesting_is_refused_quickly() {
        let text = format!(
            "---\na: {}{}\n---\n# Heading\n",
            "[".repeat(64_000),
            "]".repeat(64_000)
        );
        let started = std::time::Instant::now();
        let extracted = extract(&text);
        assert!(started.elapsed() < std::time::Duration::from_secs(1));
        assert_eq!(extracted.title.as_deref(), Some("Heading"));
        assert!(extracted.warning.unwrap().contains("nested deeper than"));
        let fine = extract("---\ntags: [a, [b, {c: d}]]\n---\n");
        assert!(fine.warning.is_none());
    }
}
