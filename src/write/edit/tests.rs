//! The edits' tables: input text, edit, expected bytes; and the properties that hold for any text.

use serde_json::{Map, json};

use super::keys::yaml_value;
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

const DOC: &str =
    "---\n# not: a heading\n---\n# Title\nintro\n## Plan\nold plan\n\n### Detail\nd\n## Notes\nn\n";

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
