//! Search on PostgreSQL beside SQLite's: the same hits, totals, listings and cursors, snippets that mark a query word, and no query that is a syntax error.

use std::collections::BTreeSet;

use super::query::Expr;
use super::*;
use crate::cursor::{CursorError, decode_search, encode_search};
use crate::search::{Filter, Under, compile};
use crate::store::postgres::tests::{BothStores, Step, key_of};
use crate::store::sqlite::{CLOSE, OPEN};
use crate::store::{FileStat, NewDocument, SNIPPET_CHARS};

fn new_doc(
    key: &str,
    title: &str,
    description: Option<&str>,
    fm: Option<&str>,
    body: &[u8],
) -> NewDocument {
    NewDocument::new(
        key_of(key),
        FileStat {
            size: body.len() as u64,
            mtime_ns: 1,
            hash: *blake3::hash(body).as_bytes(),
        },
        std::str::from_utf8(body).is_ok(),
        title.to_string(),
        description.map(str::to_string),
        fm.map(str::to_string),
        body.to_vec(),
    )
}

/// A word found in one document only.
fn unique(i: usize) -> String {
    format!(
        "rare{}{}",
        (b'a' + (i / 26) as u8) as char,
        (b'a' + (i % 26) as u8) as char
    )
}

/// 48 generated documents with planted words (one per document, one in
/// every other, diacritics, a phrase and its words apart, words for a
/// prefix, ids with punctuation mentioned in bodies, words in titles and
/// descriptions), frontmatter for `where`, a folder's look-alike and a
/// binary document.
fn backlog() -> Vec<NewDocument> {
    let mut docs: Vec<NewDocument> = (0..48).map(planted).collect();
    docs.push(new_doc(
        "docs/adrs",
        "Not under the adr folder",
        None,
        None,
        b"A halfword outside the folder.",
    ));
    docs.push(new_doc(
        "notes/blob",
        "Binary zephyr",
        None,
        None,
        b"\xff\xfe zephyr kiwi",
    ));
    docs
}

fn planted(i: usize) -> NewDocument {
    let key = match i % 4 {
        0 => format!("features/FEAT-{i:04}"),
        1 => format!("notes/note-{i:02}"),
        2 => format!("docs/adr/{i:04}"),
        _ => format!("docs/guide/g{i:02}"),
    };
    let status = ["open", "closed", "done"][i % 3];
    let mut tags = Vec::new();
    if i.is_multiple_of(2) {
        tags.push("\"sync\"");
    }
    if i.is_multiple_of(5) {
        tags.push("\"offline\"");
    }
    let points = i % 4;
    let frontmatter = format!(
        r#"{{"status":"{status}","tags":[{}],"points":{points}}}"#,
        tags.join(",")
    );
    let mut title = format!("Item {i}");
    if i.is_multiple_of(7) {
        title.push_str(" zephyr");
    }
    let description = i
        .is_multiple_of(5)
        .then(|| format!("Summary with quokka number {i}"));
    let mut lines = vec![format!(
        "---\nstatus: {status}\npoints: {points}\n---\n# Item {i}\n"
    )];
    let mut say = |line: &str| lines.push(line.to_string());
    if i.is_multiple_of(5) {
        say(&"filler ".repeat(60));
    }
    say(&format!("Document {i} holds {}.", unique(i)));
    if i.is_multiple_of(2) {
        say("A halfword appears here.");
    }
    if i.is_multiple_of(6) {
        say("Café Résumé du jour.");
    }
    if i == 5 {
        say("A naïve approach.");
    }
    if i % 4 == 1 {
        say("This is a draft.");
    }
    match i % 3 {
        0 => say("Sign in with the code."),
        1 => say("Sign the form in ink."),
        _ => {}
    }
    match i % 8 {
        3 => say("Syncing now."),
        5 => say("Synchronise later."),
        7 => say("Just sync."),
        _ => {}
    }
    if i % 10 == 3 {
        say("See FEAT-0012 for details.");
    }
    if i.is_multiple_of(9) {
        say("kiwi");
    }
    if i.is_multiple_of(11) {
        say("mango");
    }
    if i % 7 == 3 {
        say("The zephyr blows.");
    }
    if i == 20 {
        say("Some **bold** text, ported to C++ in v2.1 with foo.bar here.");
    }
    if i.is_multiple_of(5) {
        say(&format!(
            "{}needle {}",
            "hay ".repeat(80),
            "stack ".repeat(80)
        ));
    }
    new_doc(
        &key,
        &title,
        description.as_deref(),
        Some(&frontmatter),
        lines.join("\n").as_bytes(),
    )
}

fn fold(text: &str) -> String {
    text.to_lowercase()
        .chars()
        .map(|c| match c {
            'é' | 'è' | 'ê' => 'e',
            'ï' | 'î' => 'i',
            'à' | 'â' => 'a',
            'ô' => 'o',
            'ü' | 'û' => 'u',
            'ç' => 'c',
            c => c,
        })
        .collect()
}

/// The words of a document's columns as SQLite's tokenizer sees them
/// (case and the diacritics used here folded): the reference search.
struct Words(Vec<Vec<String>>);

impl Words {
    fn of(doc: &NewDocument) -> Words {
        let body = match doc.is_text {
            true => std::str::from_utf8(&doc.body[doc.body_start..]).unwrap(),
            false => "",
        };
        let columns = [
            doc.key.to_string().as_str(),
            &doc.title,
            doc.description.as_deref().unwrap_or(""),
            body,
        ]
        .map(|column| {
            fold(column)
                .split(|c: char| !c.is_alphanumeric())
                .filter(|w| !w.is_empty())
                .map(str::to_string)
                .collect()
        });
        Words(columns.into())
    }

    fn has(&self, word: &str) -> bool {
        self.0.iter().flatten().any(|w| w == word)
    }

    fn starts(&self, prefix: &str) -> bool {
        self.0.iter().flatten().any(|w| w.starts_with(prefix))
    }

    fn phrase(&self, words: &[&str]) -> bool {
        self.0
            .iter()
            .any(|column| column.windows(words.len()).any(|w| w == words))
    }

    /// In the description or the body, where a snippet can show it.
    fn shown(&self, word: &str) -> bool {
        self.0[2..].iter().flatten().any(|w| w.starts_with(word))
    }
}

fn search(query: &str, under: Option<&str>, filters: &[&str]) -> Search {
    Search::new(
        query,
        under.map(|u| Under::parse(u).unwrap()),
        filters.iter().map(|f| Filter::parse(f).unwrap()).collect(),
    )
    .unwrap()
}

/// Every hit of `search`, page by page, each checked against the total.
macro_rules! all_hits {
    ($reader:expr, $search:expr, $limit:expr) => {{
        let (reader, search) = (&$reader, &$search);
        let mut hits: Vec<Hit> = Vec::new();
        let mut resume = None;
        let mut total = None;
        loop {
            let page = reader.search(search, resume.as_ref(), $limit).unwrap();
            assert!(page.hits.len() <= $limit);
            assert_eq!(*total.get_or_insert(page.total), page.total, "{search:?}");
            hits.extend(page.hits);
            match page.next {
                Some(next) => resume = Some(next),
                None => break,
            }
        }
        assert_eq!(total, Some(hits.len() as u64), "{search:?}: total");
        hits
    }};
}

fn keys(hits: &[Hit]) -> Vec<String> {
    hits.iter().map(|h| h.key.to_string()).collect()
}

/// The keys, checking that none comes twice.
fn key_set(hits: &[Hit]) -> BTreeSet<String> {
    let set: BTreeSet<String> = keys(hits).into_iter().collect();
    assert_eq!(set.len(), hits.len(), "a hit came twice: {:?}", keys(hits));
    set
}

fn loaded() -> (BothStores, Vec<NewDocument>) {
    let both = BothStores::new();
    let docs = backlog();
    both.import(&docs.iter().cloned().map(Step::Put).collect::<Vec<_>>());
    (both, docs)
}

type Reference = fn(&Words) -> bool;

#[test]
fn ranked_searches_find_the_same_documents_as_sqlite() {
    let (both, docs) = loaded();
    let (lite, pg) = (both.sqlite.reader().unwrap(), both.pg.reader().unwrap());
    let cases: &[(&str, Option<Reference>)] = &[
        ("halfword", Some(|w| w.has("halfword"))),
        ("kiwi", Some(|w| w.has("kiwi"))),
        ("kiwi OR mango", Some(|w| w.has("kiwi") || w.has("mango"))),
        (
            "kiwi OR mango halfword",
            Some(|w| (w.has("kiwi") || w.has("mango")) && w.has("halfword")),
        ),
        (
            "halfword -draft",
            Some(|w| w.has("halfword") && !w.has("draft")),
        ),
        (
            "halfword -draft -kiwi",
            Some(|w| w.has("halfword") && !w.has("draft") && !w.has("kiwi")),
        ),
        (
            "sign -\"sign in\"",
            Some(|w| w.has("sign") && !w.phrase(&["sign", "in"])),
        ),
        ("\"sign in\"", Some(|w| w.phrase(&["sign", "in"]))),
        ("sign in", Some(|w| w.has("sign") && w.has("in"))),
        ("sync*", Some(|w| w.starts("sync"))),
        ("synchronise", Some(|w| w.has("synchronise"))),
        ("cafe resume", Some(|w| w.has("cafe") && w.has("resume"))),
        ("CAFÉ", Some(|w| w.has("cafe"))),
        ("Résumé", Some(|w| w.has("resume"))),
        ("naive", Some(|w| w.has("naive"))),
        ("naïve", Some(|w| w.has("naive"))),
        ("zephyr", Some(|w| w.has("zephyr"))),
        ("quokka", Some(|w| w.has("quokka"))),
        ("needle", Some(|w| w.has("needle"))),
        ("item", Some(|w| w.has("item"))),
        ("draft", Some(|w| w.has("draft"))),
        ("rareab", Some(|w| w.has("rareab"))),
        ("rarea*", Some(|w| w.starts("rarea"))),
        (
            "rareab OR rarebb OR nothing",
            Some(|w| w.has("rareab") || w.has("rarebb")),
        ),
        ("nothinghere", Some(|_| false)),
        ("bold", Some(|w| w.has("bold"))),
        ("**bold**", Some(|w| w.starts("bold"))),
        ("C++", Some(|w| w.has("c"))),
        ("\"AND NOT NEAR(\"", Some(|_| false)),
        // No document holds all three: relaxed to those with any.
        (
            "AND NOT NEAR(",
            Some(|w| w.has("and") || w.has("not") || w.has("near")),
        ),
        ("FEAT-0012", None),
        ("FEAT-001*", None),
        ("orchestra://features/FEAT-0012", None),
        ("v2.1", None),
        ("foo.bar", None),
        ("adr/0010", None),
    ];
    let reference: BTreeSet<String> = docs
        .iter()
        .filter(|d| {
            d.key.to_string() == "features/FEAT-0012" || Words::of(d).phrase(&["feat", "0012"])
        })
        .map(|d| d.key.to_string())
        .collect();
    assert_eq!(reference.len(), 6, "FEAT-0012 and five mentions");
    for (query, expected) in cases {
        let s = search(query, None, &[]);
        let got = key_set(&all_hits!(pg, s, 3));
        assert_eq!(
            got,
            key_set(&all_hits!(lite, s, 3)),
            "{query:?}: PostgreSQL and SQLite"
        );
        if let Some(expected) = expected {
            let expected: BTreeSet<String> = docs
                .iter()
                .filter(|d| expected(&Words::of(d)))
                .map(|d| d.key.to_string())
                .collect();
            assert_eq!(got, expected, "{query:?}: reference");
        }
        if query.starts_with("FEAT-0012") {
            assert_eq!(got, reference);
        }
    }
    // Under a prefix or a folder, with `where` filters, on every page size.
    let filtered: &[(&str, Option<&str>, &[&str])] = &[
        ("halfword", Some("docs/adr"), &[]),
        ("halfword", Some("docs"), &[]),
        ("zephyr", Some("features"), &[]),
        ("sync*", None, &["status=open"]),
        ("halfword", None, &["tags=sync", "status=open"]),
        ("halfword -draft", Some("notes"), &["points=1"]),
        ("item", None, &["tags=offline"]),
        ("item", None, &["status=nope"]),
    ];
    for (query, under, filters) in filtered {
        let s = search(query, *under, filters);
        let expected = key_set(&all_hits!(lite, s, 5));
        for limit in [1, 4, 100] {
            assert_eq!(
                key_set(&all_hits!(pg, s, limit)),
                expected,
                "{query:?} {under:?} {filters:?}, pages of {limit}"
            );
        }
    }
    // Excluded words are in no hit.
    for hit in all_hits!(pg, search("halfword -draft", None, &[]), 10) {
        let doc = docs.iter().find(|d| d.key == hit.key).unwrap();
        assert!(!Words::of(doc).has("draft"), "{}", hit.key);
    }
}

#[test]
fn listings_in_key_order_are_the_same_page_by_page() {
    let (both, _) = loaded();
    let (lite, pg) = (both.sqlite.reader().unwrap(), both.pg.reader().unwrap());
    let cases: &[(&str, Option<&str>, &[&str])] = &[
        ("", None, &[]),
        ("", None, &["status=open"]),
        ("", None, &["tags=sync", "status=open"]),
        ("", None, &["points=1"]),
        ("", None, &["status=nope"]),
        ("", Some("docs/adr"), &[]),
        ("", Some("docs"), &["tags=offline"]),
        ("-draft", None, &[]),
        ("-draft -halfword", Some("features"), &[]),
        ("-sync*", None, &["status=open"]),
        ("-\"sign in\"", Some("notes"), &[]),
        ("OR * -", None, &["tags=sync"]),
    ];
    for (query, under, filters) in cases {
        let s = search(query, *under, filters);
        let mut resume = None;
        let mut pages = 0;
        loop {
            let expected = lite.search(&s, resume.as_ref(), 4).unwrap();
            let got = pg.search(&s, resume.as_ref(), 4).unwrap();
            // Everything: keys, titles, sizes, snippets (the start of
            // the body), scores, totals and the cursor.
            assert_eq!(
                got, expected,
                "{query:?} {under:?} {filters:?}, page {pages}"
            );
            pages += 1;
            match got.next {
                Some(next) => resume = Some(next),
                None => break,
            }
        }
        assert!(pages >= 1);
    }
}

#[test]
fn snippets_mark_a_query_word_and_are_short() {
    let (both, docs) = loaded();
    let (lite, pg) = (both.sqlite.reader().unwrap(), both.pg.reader().unwrap());
    let cases: &[(&str, &[&str])] = &[
        ("needle", &["needle"]),
        ("halfword", &["halfword"]),
        ("quokka", &["quokka"]),
        ("zephyr", &["zephyr"]),
        ("cafe", &["cafe"]),
        ("kiwi OR mango", &["kiwi", "mango"]),
        ("sync*", &["sync"]),
        ("filler needle", &["filler", "needle"]),
        ("FEAT-0012", &["feat"]),
        ("\"sign in\"", &["sign"]),
        ("item", &["item"]),
        ("bold", &["bold"]),
    ];
    for (query, words) in cases {
        let s = search(query, None, &[]);
        let expected = all_hits!(lite, s, 100);
        let hits = all_hits!(pg, s, 7);
        assert!(!hits.is_empty(), "{query:?}");
        for hit in &hits {
            let snippet = &hit.snippet;
            assert!(
                snippet.chars().count() <= SNIPPET_CHARS + 4,
                "{query:?}: {snippet}"
            );
            assert!(
                !snippet.contains(['\n', OPEN, CLOSE]),
                "{query:?}: {snippet:?}"
            );
            let doc = docs.iter().find(|d| d.key == hit.key).unwrap();
            let shown = words.iter().any(|w| Words::of(doc).shown(w));
            let folded = fold(snippet);
            if shown {
                assert!(
                    words.iter().any(|w| folded.contains(&format!("**{w}"))),
                    "{query:?} {}: {snippet}",
                    hit.key
                );
            } else {
                // A match in the key or the title: the start of the
                // body, as on SQLite.
                let sqlite = expected.iter().find(|h| h.key == hit.key).unwrap();
                assert_eq!(snippet, &sqlite.snippet, "{query:?}");
            }
        }
    }
    // A match far into a body: a few words before it, `…` where cut.
    let needle = all_hits!(pg, search("needle", None, &[]), 20);
    for hit in &needle {
        assert!(hit.snippet.starts_with("…hay hay"), "{}", hit.snippet);
        assert!(
            hit.snippet.contains("hay **needle** stack"),
            "{}",
            hit.snippet
        );
        assert!(hit.snippet.ends_with("stack…"), "{}", hit.snippet);
    }
    // A short body is shown whole, its punctuation kept, with no `…`:
    // as on SQLite.
    for i in [1, 2, 3, 4, 6, 7, 9, 11, 13, 23] {
        let s = search(&unique(i), None, &[]);
        let (got, expected) = (all_hits!(pg, s, 1), all_hits!(lite, s, 1));
        assert_eq!(got[0].snippet, expected[0].snippet);
        assert!(!got[0].snippet.contains('…'), "{}", got[0].snippet);
    }
    // A document's own `**` is text, not a mark.
    let hits = all_hits!(pg, search("ported", None, &[]), 20);
    assert!(
        hits[0]
            .snippet
            .contains("Some **bold** text, **ported** to C++"),
        "{}",
        hits[0].snippet
    );
}

#[test]
fn ranking_puts_keys_and_titles_first_and_ties_in_key_order() {
    let (both, docs) = loaded();
    let pg = both.pg.reader().unwrap();
    let in_title: BTreeSet<String> = docs
        .iter()
        .filter(|d| fold(&d.title).contains("zephyr"))
        .map(|d| d.key.to_string())
        .collect();
    let hits = all_hits!(pg, search("zephyr", None, &[]), 4);
    assert_eq!(in_title.len(), 8);
    assert!(hits.len() > in_title.len());
    assert_eq!(
        key_set(&hits[..in_title.len()]),
        in_title,
        "{:?}",
        keys(&hits)
    );
    for pair in hits.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        assert!(a.score > 0.0 && b.score > 0.0);
        assert!(
            a.score > b.score || (a.score == b.score && a.key < b.key),
            "{} {} then {} {}",
            a.key,
            a.score,
            b.key,
            b.score
        );
    }
    // A document's id finds it first; a description outranks a body.
    let hits = all_hits!(pg, search("FEAT-0012", None, &[]), 4);
    assert_eq!(hits[0].key.to_string(), "features/FEAT-0012");
    let hits = all_hits!(pg, search("quokka OR halfword", None, &[]), 100);
    let described: BTreeSet<String> = docs
        .iter()
        .filter(|d| d.description.is_some())
        .map(|d| d.key.to_string())
        .collect();
    assert_eq!(described.len(), 10);
    assert_eq!(key_set(&hits[..10]), described, "{:?}", keys(&hits));

    // Equal scores go by key, across pages, on both backends.
    let both = BothStores::new();
    let mut steps: Vec<Step> = (0..12)
        .rev()
        .map(|i| {
            Step::Put(new_doc(
                &format!("notes/n{i:03}"),
                "Same",
                None,
                None,
                b"equal words",
            ))
        })
        .collect();
    steps.push(Step::Put(new_doc(
        "notes/zz-better",
        "Equal",
        None,
        None,
        b"equal words",
    )));
    both.import(&steps);
    let mut expected: Vec<String> = (0..12).map(|i| format!("notes/n{i:03}")).collect();
    expected.insert(0, "notes/zz-better".to_string());
    let s = search("equal", None, &[]);
    assert_eq!(keys(&all_hits!(both.pg.reader().unwrap(), s, 5)), expected);
    assert_eq!(
        keys(&all_hits!(both.sqlite.reader().unwrap(), s, 5)),
        expected
    );
}

#[test]
fn a_cursor_resumes_only_its_own_search() {
    let (both, _) = loaded();
    let pg = both.pg.reader().unwrap();
    let (words, other) = (
        search("halfword", None, &[]),
        search("halfword", Some("docs"), &[]),
    );
    let first = pg.search(&words, None, 5).unwrap();
    let next = first.next.clone().unwrap();
    assert_eq!(next, SearchResume::Offset(5));
    let cursor = encode_search(&words.fingerprint(), &next);
    assert_eq!(
        decode_search(&cursor, &other.fingerprint()),
        Err(CursorError::OtherSearch)
    );
    let resumed = decode_search(&cursor, &words.fingerprint()).unwrap();
    let second = pg.search(&words, Some(&resumed), 5).unwrap();
    let both_pages: Vec<Hit> = first.hits.iter().chain(&second.hits).cloned().collect();
    assert_eq!(
        keys(&both_pages),
        keys(&pg.search(&words, None, 10).unwrap().hits)
    );
    // A key-order cursor, and a cursor of the wrong kind, as on SQLite.
    let listing = search("", None, &["status=open"]);
    let next = pg.search(&listing, None, 3).unwrap().next.unwrap();
    assert!(matches!(next, SearchResume::After(_)));
    let cursor = encode_search(&listing.fingerprint(), &next);
    assert_eq!(
        decode_search(&cursor, &words.fingerprint()),
        Err(CursorError::OtherSearch)
    );
    assert_eq!(
        pg.search(&words, Some(&next), 5).unwrap(),
        pg.search(&words, None, 5).unwrap()
    );
}

#[test]
fn no_query_is_a_syntax_error() {
    let (both, _) = loaded();
    let (lite, pg) = (both.sqlite.reader().unwrap(), both.pg.reader().unwrap());
    let long = "halfword' ".repeat(300);
    let queries = [
        "'",
        "''",
        "\\",
        "\\'",
        "a'b",
        "it's",
        "'x'*",
        ":*",
        "a:*",
        "kiwi:*AB",
        "a & b | !c",
        "<->",
        "a <-> b",
        "!!kiwi",
        "(kiwi",
        "kiwi)",
        "\"unclosed",
        "-\"x y\"",
        "x*",
        "\"\\\\\"*",
        "é*",
        "日本語*",
        "kiwi\0mango",
        "\"\" \"\"",
        "$1",
        "%",
        "_",
        "E'x'",
        "'; DROP TABLE documents; --",
        "kiwi OR",
        "OR OR OR",
        "-kiwi -mango",
        "a-b-c*",
        "halfword' -'draft",
        "features/",
        "/",
        "orchestra://",
        "foo:bar",
        &long,
    ];
    for query in queries {
        let s = search(query, None, &[]);
        let got = all_hits!(pg, s, 50);
        let expected = all_hits!(lite, s, 50);
        assert_eq!(key_set(&got), key_set(&expected), "{query:?}");
    }
    assert_eq!(pg.count().unwrap(), 50);
}

/// Words are SQLite's: a key's words are found one by one, and so are
/// the parts of a path, a host name or a signed number.
#[test]
fn words_are_sqlites() {
    let both = BothStores::new();
    both.import(&[
        Step::Put(new_doc(
            "features/FEAT-0012",
            "Offline",
            None,
            None,
            b"Works offline.",
        )),
        Step::Put(new_doc(
            "notes/mention",
            "Mention",
            None,
            None,
            "See features/FEAT-0012 and foo.bar, then RFC-2119 at the caf\u{e9}.".as_bytes(),
        )),
        Step::Put(new_doc("docs/adr/0006", "Sync", None, None, b"Sync it.")),
    ]);
    let (lite, pg) = (both.sqlite.reader().unwrap(), both.pg.reader().unwrap());
    let check = |query: &str, expected: &[&str]| {
        let s = search(query, None, &[]);
        let set: BTreeSet<String> = expected.iter().map(|k| k.to_string()).collect();
        assert_eq!(key_set(&all_hits!(lite, s, 10)), set, "{query:?} on SQLite");
        assert_eq!(
            key_set(&all_hits!(pg, s, 10)),
            set,
            "{query:?} on PostgreSQL"
        );
    };
    let both_keys: &[&str] = &["features/FEAT-0012", "notes/mention"];
    check("FEAT-0012", both_keys);
    check("features/FEAT-0012", both_keys);
    check("0012", both_keys);
    check("feat-00*", both_keys);
    check("adr", &["docs/adr/0006"]);
    check("adr/0006", &["docs/adr/0006"]);
    check("features", both_keys);
    check("foo", &["notes/mention"]);
    check("foo.bar", &["notes/mention"]);
    check("bar foo", &["notes/mention"]);
    check("\"bar foo\"", &[]);
    check("RFC-2119", &["notes/mention"]);
    check("2119", &["notes/mention"]);
    check("CAFE", &["notes/mention"]);
    check("sync", &["docs/adr/0006"]);
    // A phrase does not run from the title into the body.
    check("\"offline works\"", &[]);
    check("\"works offline\"", &["features/FEAT-0012"]);
}

/// `compile`'s FTS5 expressions, read back, as a tree.
#[test]
fn compiled_queries_read_back() {
    fn show(expr: &Expr) -> String {
        match expr {
            Expr::Term { text, prefix } => {
                format!("{text:?}{}", if *prefix { "*" } else { "" })
            }
            Expr::And(a, b) => format!("and({}, {})", show(a), show(b)),
            Expr::Or(a, b) => format!("or({}, {})", show(a), show(b)),
            Expr::Not(a, b) => format!("not({}, {})", show(a), show(b)),
        }
    }
    #[track_caller]
    fn check(query: &str, expected: &str) {
        let compiled = compile(query);
        let fts = compiled.matching.or(compiled.excluded).unwrap();
        assert_eq!(
            show(&Expr::parse(&fts).unwrap()),
            expected,
            "{query:?}: {fts}"
        );
    }
    check("login code", r#"and("login", "code")"#);
    check("\"sign in\"", r#""sign in""#);
    check("sync*", r#""sync"*"#);
    check("\"sign i\"*", r#""sign i"*"#);
    check("-draft -wip", r#"or("draft", "wip")"#);
    check("login -draft", r#"not("login", "draft")"#);
    check(
        "login OR signin code",
        r#"and(or("login", "signin"), "code")"#,
    );
    check(
        "a OR b OR c d -x -y",
        r#"not(and(or(or("a", "b"), "c"), "d"), or("x", "y"))"#,
    );
    check(r#"say "hi"#, r#"and("say", "hi")"#);
    check(r#"x"y z"#, r#"and("x", "y z")"#);
    check(r#"-"a b" c"#, r#"not("c", "a b")"#);
    check("AND NOT NEAR(", r#"and(and("AND", "NOT"), "NEAR(")"#);
    check("**bold**", r#""**bold"*"#);
    for broken in [
        "",
        "\"open",
        "AND",
        "\"a\" AND",
        "(\"a\"",
        "\"a\")",
        "\"a\" **",
        "x",
    ] {
        assert!(Expr::parse(broken).is_err(), "{broken:?}");
    }
}

/// A database whose vectors PostgreSQL's parser made (before migration
/// 0008) has them made anew by orchestra when a server or import opens it.
#[test]
fn migration_0008_makes_the_stored_vectors_anew() {
    let both = BothStores::new();
    both.import(&[
        Step::Put(new_doc(
            "features/FEAT-0012",
            "Offline",
            None,
            None,
            b"Works.",
        )),
        Step::Put(new_doc(
            "notes/n",
            "Note",
            Some("Caf\u{e9}"),
            None,
            b"See v2.1 now.",
        )),
        Step::Put(new_doc(
            "notes/blob",
            "Blob",
            None,
            None,
            b"\xff\xfe v2 binary",
        )),
    ]);
    let mut client = crate::store::postgres::connect(&both.db.target).unwrap();
    client
        .batch_execute(
            "UPDATE documents SET search = to_tsvector('orchestra', prefix || '/' || id);
             UPDATE orchestra_schema SET version = 7",
        )
        .unwrap();
    let count = |query: &str| {
        let pg = both.pg.reader().unwrap();
        pg.search(&search(query, None, &[]), None, 10)
            .unwrap()
            .total
    };
    // Before: the parser's one token per key, nothing of the text.
    assert_eq!(count("0012"), 0);
    assert_eq!(count("cafe"), 0);
    assert!(crate::store::postgres::PgStore::open_read_only(both.db.target.clone()).is_err());
    crate::store::postgres::PgStore::open(both.db.target.clone()).unwrap();
    assert_eq!(count("0012"), 1);
    assert_eq!(count("cafe"), 1);
    assert_eq!(count("\"v2 1\""), 1);
    // A binary document is found by its key and title only, as on SQLite.
    assert_eq!(count("binary"), 0);
    assert_eq!(count("blob"), 1);
    let lite = both.sqlite.reader().unwrap();
    for query in ["0012", "cafe", "\"v2 1\"", "binary", "blob", "notes"] {
        let s = search(query, None, &[]);
        assert_eq!(
            key_set(&all_hits!(both.pg.reader().unwrap(), s, 10)),
            key_set(&all_hits!(lite, s, 10)),
            "{query:?}"
        );
    }
}

#[test]
fn questions_and_long_queries_are_answered_alike() {
    let both = BothStores::new();
    // Each document holds some of the question's words, none all of them;
    // word i of the 60-word sentence is in the documents j < 60 - i.
    let question = ["quorvex", "blintaph", "zendrill", "morcaste"];
    let words: Vec<String> = (0..60).map(|i| format!("lw{}x", unique(i))).collect();
    let docs: Vec<NewDocument> = (0..60)
        .map(|j| {
            let mut body: Vec<&str> = (0..60)
                .filter(|&i| j < 60 - i)
                .map(|i| words[i].as_str())
                .collect();
            body.extend(
                question
                    .iter()
                    .enumerate()
                    .filter(|(q, _)| j % 5 != 0 && (j + q) % 3 == 0)
                    .map(|(_, w)| *w),
            );
            let key = format!("{}/L{j:02}", ["notes", "features"][j % 2]);
            let status = ["open", "closed"][j % 3 / 2];
            new_doc(
                &key,
                "Long",
                None,
                Some(&format!(r#"{{"status":"{status}"}}"#)),
                format!("---\nstatus: {status}\n---\n{}", body.join(" ")).as_bytes(),
            )
        })
        .collect();
    both.import(&docs.iter().cloned().map(Step::Put).collect::<Vec<_>>());
    let (lite, pg) = (both.sqlite.reader().unwrap(), both.pg.reader().unwrap());
    let holds = |d: &NewDocument, w: &str| Words::of(d).has(w);
    let any_of = |terms: &[&str], admit: &dyn Fn(&NewDocument) -> bool| -> BTreeSet<String> {
        docs.iter()
            .filter(|d| admit(d) && terms.iter().any(|w| holds(d, w)))
            .map(|d| d.key.to_string())
            .collect()
    };
    assert!(docs.iter().all(|d| !question.iter().all(|w| holds(d, w))));
    let sentence = words.join(" ");
    let relaxed_sentence = format!("{sentence} nowhereword");
    // query, under, filters, relaxed, the reference
    type Case<'a> = (
        String,
        Option<&'a str>,
        Vec<&'a str>,
        bool,
        BTreeSet<String>,
    );
    let kept: Vec<&str> = words[29..].iter().map(String::as_str).collect();
    let cases: Vec<Case> = vec![
        (
            question.join(" "),
            None,
            vec![],
            true,
            any_of(&question, &|_| true),
        ),
        (
            question.join(" "),
            Some("features"),
            vec![],
            true,
            any_of(&question, &|d| d.key.prefix.as_str() == "features"),
        ),
        (
            question.join(" "),
            None,
            vec!["status=closed"],
            true,
            any_of(&question, &|d| {
                d.frontmatter.as_deref().unwrap().contains("closed")
            }),
        ),
        (
            format!("\"{}\" {}", question[0], question[1..].join(" ")),
            None,
            vec![],
            false,
            BTreeSet::new(),
        ),
        (
            format!("{} -nothing", question.join(" ")),
            None,
            vec![],
            false,
            BTreeSet::new(),
        ),
        (
            format!("{} OR {}", question[0], question[1..].join(" ")),
            None,
            vec![],
            false,
            docs.iter()
                .filter(|d| {
                    (holds(d, question[0]) || holds(d, question[1]))
                        && question[2..].iter().all(|w| holds(d, w))
                })
                .map(|d| d.key.to_string())
                .collect(),
        ),
        (
            sentence.clone(),
            None,
            vec![],
            false,
            ["notes/L00".to_string()].into(),
        ),
        (
            relaxed_sentence.clone(),
            None,
            vec![],
            true,
            any_of(&kept, &|_| true),
        ),
    ];
    for (query, under, filters, relaxed, expected) in &cases {
        let s = search(query, *under, filters);
        let label = format!("{query:.60} {under:?} {filters:?}");
        for limit in [3, 100] {
            let mut resume = None;
            let mut got = (Vec::new(), Vec::new());
            loop {
                let a = lite.search(&s, resume.as_ref(), limit).unwrap();
                let b = pg.search(&s, resume.as_ref(), limit).unwrap();
                assert_eq!(
                    (a.total, a.relaxed, &a.terms),
                    (b.total, b.relaxed, &b.terms),
                    "{label}"
                );
                assert_eq!(a.next, b.next, "{label}: the same cursors");
                assert_eq!(
                    (a.relaxed, a.total),
                    (*relaxed, expected.len() as u64),
                    "{label}"
                );
                got.0.extend(a.hits);
                got.1.extend(b.hits);
                match a.next {
                    Some(next) => resume = Some(next),
                    None => break,
                }
            }
            assert_eq!(
                key_set(&got.0),
                *expected,
                "{label}: SQLite, pages of {limit}"
            );
            assert_eq!(
                key_set(&got.1),
                *expected,
                "{label}: PostgreSQL, pages of {limit}"
            );
        }
    }
    // Both choose the same terms of a long query: the 32 in the fewest
    // documents, named on the page.
    let page = pg
        .search(&search(&relaxed_sentence, None, &[]), None, 1)
        .unwrap();
    let mut used: Vec<String> = kept.iter().map(|w| w.to_string()).collect();
    used.push("nowhereword".to_string());
    assert_eq!(page.terms, Some(used));
    let counts = pg
        .term_documents(&search(&relaxed_sentence, None, &[]).terms(), None)
        .unwrap();
    assert_eq!(counts[..3], [60, 59, 58]);
    assert_eq!(counts.last(), Some(&0));
}
