//! `fuzz_frontmatter`: `frontmatter::split` agrees with the rules restated here, and `frontmatter::extract` never panics and gives frontmatter or a warning for every block.

use orchestra::frontmatter;
use proptest::prelude::*;
use proptest::test_runner::TestCaseResult;

use super::{corpus_file, fuzz, replay, timed};

/// The frontmatter rules of `src/frontmatter.rs`, restated line by line:
/// the byte offsets of the yaml and of the body, if the text has a block.
fn reference_split(text: &str) -> Option<(std::ops::Range<usize>, usize)> {
    let start = if text.starts_with('\u{FEFF}') { 3 } else { 0 };
    let is_marker = |line: &str, marker: &str| {
        let line = line.strip_suffix('\n').unwrap_or(line);
        let line = line.strip_suffix('\r').unwrap_or(line);
        line.trim_end_matches([' ', '\t']) == marker
    };
    let mut lines = text[start..].split_inclusive('\n');
    let first = lines.next()?;
    if !first.ends_with('\n') || !is_marker(first, "---") {
        return None;
    }
    let yaml_start = start + first.len();
    let mut pos = yaml_start;
    for line in lines {
        if is_marker(line, "---") || is_marker(line, "...") {
            return Some((yaml_start..pos, pos + line.len()));
        }
        pos += line.len();
    }
    None
}

/// Where `part` lies inside `whole`, if it is a slice of it.
fn offset_in(whole: &str, part: &str) -> Option<usize> {
    let start = (part.as_ptr() as usize).checked_sub(whole.as_ptr() as usize)?;
    (start + part.len() <= whole.len()).then_some(start)
}

fn check_frontmatter(text: &str) -> TestCaseResult {
    let split = timed("frontmatter::split", || frontmatter::split(text))?;
    let expected = reference_split(text);
    match (split, &expected) {
        (None, None) => {}
        (Some((yaml, body)), Some((yaml_range, body_start))) => {
            let yaml_at = offset_in(text, yaml);
            let body_at = offset_in(text, body);
            prop_assert!(
                yaml_at.is_some() && body_at.is_some(),
                "split returned slices that are not in the input"
            );
            prop_assert_eq!(
                (
                    yaml_at.unwrap()..yaml_at.unwrap() + yaml.len(),
                    body_at.unwrap()
                ),
                (yaml_range.clone(), *body_start),
                "split disagrees with the rules: yaml {:?}, body {:?}",
                yaml,
                body
            );
            prop_assert_eq!(
                body_at.unwrap() + body.len(),
                text.len(),
                "body is not a suffix"
            );
            let after_bom = text.strip_prefix('\u{FEFF}').unwrap_or(text);
            prop_assert!(after_bom.starts_with("---"));
        }
        (got, want) => {
            prop_assert!(
                false,
                "split gives {:?}, the rules give {:?}",
                got,
                want.as_ref()
                    .map(|(yaml, body)| (&text[yaml.clone()], &text[*body..]))
            );
        }
    }
    let extracted = timed("frontmatter::extract", || frontmatter::extract(text))?;
    let has_block = expected.is_some();
    if extracted.frontmatter.is_some() || extracted.warning.is_some() {
        prop_assert!(
            has_block,
            "frontmatter or warning without a block: {:?}",
            extracted
        );
    }
    if has_block {
        prop_assert!(
            extracted.frontmatter.is_some() != extracted.warning.is_some(),
            "a block must give frontmatter xor a warning: {:?}",
            extracted
        );
    }
    if let Some(frontmatter) = &extracted.frontmatter {
        prop_assert!(frontmatter.is_object(), "{:?}", frontmatter);
    }
    if let Some(warning) = &extracted.warning {
        prop_assert!(
            warning.starts_with("malformed frontmatter: "),
            "{:?}",
            warning
        );
    }
    for field in [&extracted.title, &extracted.description]
        .into_iter()
        .flatten()
    {
        prop_assert!(
            !field.is_empty() && field.trim() == field,
            "untrimmed title or description {:?}",
            field
        );
    }
    Ok(())
}

/// Markdown-ish text built from the fragments frontmatter and headings are
/// made of.
fn markdownish() -> impl Strategy<Value = String> {
    let fragment = prop_oneof![
        6 => prop::sample::select(vec![
            "---", "--- ", "---\t", "...", "----", "-- -", "# ", "#", "## ", "```", "~~~", "````",
            "title: x", "title: ", "description: y", "title: 'a'", "title: \"b\\n\"", "title: 1",
            "title: true", "title: [a]", "title: {a: 1}", "\n", "\n", "\n", "\r\n", "\r",
            "\u{FEFF}", ": ", "- ", "[", "]", "{", "}", "&a ", "*a", "!", "!!str ", "|", ">",
            "'", "\"", " ", "  ", "\t", "a", "é", "%YAML 1.2", "? ", "<<: *a", "~", "null", "\0",
            ",", "#!", "\\", "a: &a [x, *a]",
        ])
        .prop_map(String::from),
        1 => "[a-z ]{1,6}",
        1 => any::<char>().prop_map(String::from),
    ];
    let fragments = || prop::collection::vec(fragment.clone(), 0..30).prop_map(|f| f.concat());
    prop_oneof![
        2 => fragments(),
        3 => (
            prop::sample::select(vec!["---\n", "---\r\n", "\u{FEFF}---\n", "--- \n"]),
            fragments(),
            prop::sample::select(vec!["\n---\n", "\n...\n", "\r\n---\r\n", "\n---", "\n--- \t\n", ""]),
            fragments(),
        )
            .prop_map(|(open, yaml, close, body)| format!("{open}{yaml}{close}{body}")),
    ]
}

#[test]
fn fuzz_frontmatter() {
    replay("frontmatter", |bytes| {
        check_frontmatter(&String::from_utf8_lossy(bytes))
    });
    let strategy = prop_oneof![
        1 => any::<String>(),
        4 => markdownish(),
    ];
    fuzz("fuzz_frontmatter", 128, strategy, |text: String| {
        check_frontmatter(&text)
    });
}

/// Generated inputs: documents too large or too repetitive to write by hand.
pub(super) fn generated_corpus() -> Vec<(String, Vec<u8>)> {
    // Ten levels of ten aliases each: 10^10 nodes if expanded.
    let mut laughs = String::from("---\na0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..10 {
        let refs = vec![format!("*a{}", i - 1); 10].join(", ");
        laughs.push_str(&format!("a{i}: &a{i} [{refs}]\n"));
    }
    laughs.push_str("title: *a9\n---\n# Laughs\n");
    // Past the parser's recursion limit (128), yet small: the YAML
    // scanner is quadratic in the depth of flow collections.
    let depth = 2_000;
    vec![
        corpus_file("gen-billion-laughs.md", laughs),
        corpus_file(
            "gen-deep-flow-sequence.md",
            format!("---\na: {}{}\n---\n", "[".repeat(depth), "]".repeat(depth)),
        ),
        corpus_file(
            "gen-deep-flow-mapping.md",
            format!(
                "---\na: {}{}\n---\n",
                "{a: ".repeat(depth),
                "}".repeat(depth)
            ),
        ),
        corpus_file(
            "gen-deep-block-sequence.md",
            format!(
                "---\na:\n{}\n---\n",
                (0..300)
                    .map(|i| format!("{}- ", " ".repeat(i * 2)))
                    .collect::<Vec<_>>()
                    .join("\n")
            ),
        ),
        corpus_file(
            "gen-many-fences.md",
            "```\n# in\n```\n".repeat(2000) + "# Out\n",
        ),
        corpus_file("gen-long-line.md", format!("# {}\n", "x".repeat(100_000))),
        corpus_file(
            "gen-many-dashes.md",
            format!("---\n{}", "--\n".repeat(10_000)),
        ),
    ]
}
