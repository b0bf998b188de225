//! `fuzz_search`: any query, `under` and `where` over a real store: `Search::new` refuses only what is too long, `Reader::search` never fails, its pages agree with one another and with the documents, and a search cursor resumes only its own search.
//!
//! The store holds ten documents (`DOCS`): frontmatter fields for `where`, a
//! binary body, a NUL, emoji, RTL text and combining marks, a word repeated
//! some fifty times, and `features/FEAT-0015`, which has as many fields as a
//! search may filter on. Each corpus file is one query, searched with each
//! of six settings of `under`, `where` and limit (see `fuzz_search`).

use std::collections::BTreeSet;

use orchestra::cursor::{self, CursorError, SearchResume};
use orchestra::doc::{DocKey, Prefix, is_valid_id};
use orchestra::search::{
    Filter, MAX_FILTERS, MAX_QUERY_BYTES, MAX_TERMS, Search, SearchError, Under,
};
use orchestra::store::{FileStat, Hit, NewDocument, SNIPPET_CHARS, Store};
use proptest::prelude::*;
use proptest::test_runner::{TestCaseError, TestCaseResult};
use serde_json::Value;

use super::{
    Edit, apply_edits, base64ish, corpus_file, edit, fuzz, replay, sealed, timed, valid_key,
};

/// The documents of the store: key, title, description, frontmatter (JSON,
/// as import stores it) and the file's bytes.
type Doc = (
    Prefix,
    &'static str,
    &'static str,
    Option<&'static str>,
    Option<&'static str>,
    &'static [u8],
);

const DOCS: [Doc; 10] = [
    (
        Prefix::Features,
        "FEAT-0012",
        "Login code",
        Some("Sign in with a mailed code"),
        Some(r#"{"status":"open","tags":["sync","offline"],"points":3,"done":false}"#),
        b"---\nstatus: open\ntags: [sync, offline]\npoints: 3\ndone: false\n---\n# Login code\n\n\
          The login code is sent by mail. Sign in with it. See the C++ port, v2.1 and foo.bar.\n",
    ),
    (
        Prefix::Features,
        "FEAT-0013",
        "Caf\u{e9} R\u{e9}sum\u{e9}",
        None,
        Some(r#"{"status":"closed","tags":["sync"]}"#),
        "---\nstatus: closed\ntags: [sync]\n---\nA draft about **bold** text, NEAR(a b) OR \"quoted\" \
         words; key:title {key}: x ^x x^ a\"b\"c -\"x\" --flag.\n"
            .as_bytes(),
    ),
    (
        Prefix::Features,
        "FEAT-0014",
        "Empty",
        None,
        None,
        b"",
    ),
    (
        Prefix::Features,
        "FEAT-0015",
        "Every field",
        None,
        Some(FEAT_0015_FIELDS),
        b"A feature with every field set: login code, sync, FEAT-0012, C++, v2.1 and foo.bar.\n",
    ),
    (
        Prefix::Docs,
        "adr/0006",
        "Sync protocol",
        None,
        Some(r#"{"status":"open","title":"Sync protocol"}"#),
        b"---\nstatus: open\ntitle: Sync protocol\n---\nWe sign documents in batches. See FEAT-0012 \
          and orchestra://features/FEAT-0012.\n",
    ),
    (
        Prefix::Docs,
        "adr/sub/0007",
        "Nested",
        Some("A folder below a folder"),
        Some(r#"{"tags":[]}"#),
        "Deep folder: emoji \u{1f3bb}\u{1f468}\u{200d}\u{1f469}, RTL \u{5e9}\u{5dc}\u{5d5}\u{5dd} \
         \u{5e2}\u{5d5}\u{5dc}\u{5dd} \u{202e}reversed\u{202c}, combining e\u{301}\u{302} and \
         \u{ffff}\u{fffd}.\n"
            .as_bytes(),
    ),
    (
        Prefix::Docs,
        "adrs",
        "Not under docs/adr",
        None,
        None,
        b"signin and login, OR and AND and NOT.\n",
    ),
    (
        Prefix::Notes,
        "blob",
        "Binary zebra",
        None,
        None,
        b"\xff\xfe zebra-in-body \x00\xed\xa0\x80",
    ),
    (
        Prefix::Notes,
        "caf\u{e9} notes",
        "Caf\u{e9}",
        None,
        Some(r#"{"status":"open","tags":["a=b","x y",""],"n":null,"ok":true}"#),
        "---\nstatus: open\n---\nA NUL \0 inside a line, then a long one: word word word word \
         word word word word word word word word word word word word word word word word word \
         word word word word word word word word word word word word word word word word word \
         word word word word word word word word word word word word word word word word end.\n"
            .as_bytes(),
    ),
    (
        Prefix::Notes,
        "\u{65e5}\u{672c}/\u{8a9e}",
        "\u{65e5}\u{672c}\u{8a9e}",
        None,
        Some(r#"{"status":"open","tags":["sync"]}"#),
        "\u{65e5}\u{672c}\u{8a9e}\u{306e}\u{6587}\u{66f8}\u{3002}\n".as_bytes(),
    ),
];

/// The frontmatter of `features/FEAT-0015`: as many fields as a search may
/// filter on ([`MAX_FILTERS`]).
const FEAT_0015_FIELDS: &str = r#"{"status":"open","owner":"ana","priority":"2","area":"sync","team":"core","milestone":"m1","reviewer":"bo","estimate":"3","risk":"low","component":"login","release":"v2.1","platform":"web","customer":"acme","sprint":"9","epic":"auth","type":"feature"}"#;

/// `FEAT_0015_FIELDS` as `where` pairs: every one holds for that document.
fn feat_0015_filters() -> Vec<String> {
    let Ok(Value::Object(map)) = serde_json::from_str(FEAT_0015_FIELDS) else {
        unreachable!("FEAT_0015_FIELDS is an object");
    };
    map.iter()
        .map(|(name, value)| format!("{name}={}", value.as_str().unwrap()))
        .collect()
}

/// A stored document, as the checks need it.
struct Stored {
    key: DocKey,
    title: String,
    description: Option<String>,
    size: u64,
    /// The `(name, value)` pairs a `where` filter matches: the scalar
    /// fields and the scalar items of list fields, as text.
    fields: BTreeSet<(String, String)>,
}

/// What `where` compares for a frontmatter (integers only: SQLite's text of
/// a float is not JSON's).
fn fields(frontmatter: Option<&str>) -> BTreeSet<(String, String)> {
    let Some(Value::Object(map)) = frontmatter.map(|f| serde_json::from_str(f).unwrap()) else {
        return BTreeSet::new();
    };
    let text = |value: &Value| match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Null => Some("null".to_owned()),
        Value::Array(_) | Value::Object(_) => None,
    };
    let mut fields = BTreeSet::new();
    for (name, value) in &map {
        let items = match value {
            Value::Array(items) => items.iter().collect(),
            value => vec![value],
        };
        fields.extend(
            items
                .into_iter()
                .filter_map(text)
                .map(|t| (name.clone(), t)),
        );
    }
    fields
}

/// The store under fuzz, shared by every case (searches only read).
struct Fixture {
    _dir: tempfile::TempDir,
    store: Store,
    docs: Vec<Stored>,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_or_create(&dir.path().join("fuzz.db")).unwrap();
        let tx = store.begin_import("/fuzz", false).unwrap();
        let mut docs = Vec::new();
        for (prefix, id, title, description, frontmatter, body) in DOCS {
            let key = DocKey::new(prefix, id);
            tx.put(&NewDocument::new(
                key.clone(),
                FileStat {
                    size: body.len() as u64,
                    mtime_ns: 1_767_225_600_000_000_000,
                    hash: *blake3::hash(body).as_bytes(),
                },
                std::str::from_utf8(body).is_ok(),
                title.to_owned(),
                description.map(str::to_owned),
                frontmatter.map(str::to_owned),
                body.to_vec(),
            ))
            .unwrap();
            docs.push(Stored {
                key,
                title: title.to_owned(),
                description: description.map(str::to_owned),
                size: body.len() as u64,
                fields: fields(frontmatter),
            });
        }
        tx.commit(true).unwrap();
        Fixture {
            _dir: dir,
            store,
            docs,
        }
    }

    fn get(&self, key: &DocKey) -> Option<&Stored> {
        self.docs.iter().find(|doc| doc.key == *key)
    }
}

/// Whether `doc` passes the search's `under` and `where`.
fn admits(search: &Search, doc: &Stored) -> bool {
    let under = search.under.as_ref().is_none_or(|under| {
        doc.key.prefix == under.prefix
            && under
                .folder
                .as_ref()
                .is_none_or(|folder| doc.key.id.starts_with(folder.as_str()))
    });
    under
        && search
            .filters
            .iter()
            .all(|f| doc.fields.contains(&(f.name.clone(), f.value.clone())))
}

fn sort_key(key: &DocKey) -> (&str, &str) {
    (key.prefix.as_str(), key.id.as_str())
}

#[derive(Debug, Clone)]
struct SearchCase {
    query: String,
    /// Given to `Under::parse`; refused text means no `under`.
    under: Option<String>,
    /// Each given to `Filter::parse`; refused pairs are left out.
    filters: Vec<String>,
    limit: usize,
}

#[derive(Debug, Clone)]
enum Case {
    Search(SearchCase),
    /// A string given to `cursor::decode_search` with this fingerprint.
    CursorText(String, [u8; 8]),
    /// A cursor made for `fingerprint`, decoded for it, for `other`, and
    /// after `edits`.
    Cursor {
        resume: SearchResume,
        fingerprint: [u8; 8],
        other: [u8; 8],
        edits: Vec<Edit>,
    },
}

fn check_case(fixture: &Fixture, case: &SearchCase) -> TestCaseResult {
    let under = match &case.under {
        None => None,
        Some(text) => match Under::parse(text) {
            Ok(under) => Some(under),
            Err(SearchError::UnknownPrefix(t) | SearchError::Under(t)) => {
                prop_assert_eq!(&t, text, "the error names the input");
                None
            }
            Err(e) => {
                return Err(TestCaseError::fail(format!(
                    "Under::parse({text:?}): {e:?}"
                )));
            }
        },
    };
    let mut filters = Vec::new();
    for text in &case.filters {
        match Filter::parse(text) {
            Ok(filter) => {
                prop_assert!(!filter.name.is_empty() && filter.name.trim() == filter.name);
                filters.push(filter);
            }
            Err(SearchError::Where(t)) => prop_assert_eq!(&t, text, "the error names the input"),
            Err(e) => {
                return Err(TestCaseError::fail(format!(
                    "Filter::parse({text:?}): {e:?}"
                )));
            }
        }
    }
    let count = filters.len();
    let created = Search::new(case.query.clone(), under, filters);
    if case.query.len() > MAX_QUERY_BYTES {
        prop_assert_eq!(created, Err(SearchError::TooLong(case.query.len())));
        return Ok(());
    }
    if count > MAX_FILTERS {
        prop_assert_eq!(created, Err(SearchError::TooManyFilters));
        return Ok(());
    }
    // Any number of distinct terms is searched: a long query from its
    // most selective ones, which the page names.
    if let Ok(search) = &created
        && search.is_long()
    {
        prop_assert!(search.terms().len() > MAX_TERMS);
        let page = fixture
            .store
            .reader()
            .and_then(|reader| reader.search(search, None, case.limit))
            .map_err(|e| TestCaseError::fail(format!("{e:#}")))?;
        let used = page.terms.unwrap_or_default();
        prop_assert_eq!(
            used.len(),
            MAX_TERMS,
            "a long query names the terms it used"
        );
    }
    let search = created.map_err(|e| {
        TestCaseError::fail(format!(
            "Search::new refused a query of {} bytes: {e}",
            case.query.len()
        ))
    })?;
    check_search(fixture, &search, case.limit)
}

fn check_snippet(hit: &Hit) -> TestCaseResult {
    let snippet = &hit.snippet;
    prop_assert!(
        !snippet.chars().any(|c| c.is_whitespace() && c != ' '),
        "a snippet is one line: {:?}",
        snippet
    );
    // At most SNIPPET_CHARS of text, a closing `**` and an ellipsis.
    prop_assert!(
        snippet.chars().count() <= SNIPPET_CHARS + 3,
        "a snippet of {} characters: {:?}",
        snippet.chars().count(),
        snippet
    );
    prop_assert!(
        snippet.matches("**").count().is_multiple_of(2),
        "a snippet leaves a ** open: {:?}",
        snippet
    );
    Ok(())
}

/// Every page of `search`, following the cursors; checks each page and the
/// whole.
fn check_search(fixture: &Fixture, search: &Search, limit: usize) -> TestCaseResult {
    let reader = fixture
        .store
        .reader()
        .map_err(|e| TestCaseError::fail(format!("no reader: {e:#}")))?;
    let fingerprint = search.fingerprint();
    let mut other = fingerprint;
    other[7] ^= 1;
    let ranked = search.compile().matching.is_some();
    let mut admitted: Vec<&DocKey> = fixture
        .docs
        .iter()
        .filter(|doc| admits(search, doc))
        .map(|doc| &doc.key)
        .collect();
    admitted.sort_by_key(|key| sort_key(key));
    let mut hits: Vec<Hit> = Vec::new();
    let mut keys: BTreeSet<DocKey> = BTreeSet::new();
    let mut first_total = None;
    let mut resume = None;
    for page_number in 0.. {
        let page = timed("Reader::search", || {
            reader.search(search, resume.as_ref(), limit)
        })?
        .map_err(|e| TestCaseError::fail(format!("search failed on page {page_number}: {e:#}")))?;
        let total = *first_total.get_or_insert(page.total);
        prop_assert_eq!(
            page.total,
            total,
            "the total changed on page {}",
            page_number
        );
        prop_assert!(
            page.hits.len() <= limit,
            "{} hits, limit {}",
            page.hits.len(),
            limit
        );
        prop_assert!(
            page.total >= page.hits.len() as u64,
            "total {} < {} hits",
            page.total,
            page.hits.len()
        );
        for hit in &page.hits {
            let Some(stored) = fixture.get(&hit.key) else {
                return Err(TestCaseError::fail(format!(
                    "a hit that is not stored: {}",
                    hit.key
                )));
            };
            prop_assert!(keys.insert(hit.key.clone()), "a hit twice: {}", hit.key);
            prop_assert!(
                admitted.contains(&&hit.key),
                "a hit outside under/where: {}",
                hit.key
            );
            prop_assert_eq!(&hit.title, &stored.title);
            prop_assert_eq!(&hit.description, &stored.description);
            prop_assert_eq!(hit.size, stored.size);
            prop_assert!(hit.score.is_finite(), "score {}", hit.score);
            if !ranked {
                prop_assert_eq!(hit.score, 0.0);
            }
            check_snippet(hit)?;
        }
        hits.extend(page.hits.iter().cloned());
        let Some(next) = page.next else {
            break;
        };
        prop_assert_eq!(page.hits.len(), limit, "a page before another is full");
        prop_assert!(
            (keys.len() as u64) < total,
            "a next page after all {} hits",
            total
        );
        let text = cursor::encode_search(&fingerprint, &next);
        let decoded = cursor::decode_search(&text, &fingerprint);
        prop_assert_eq!(decoded.as_ref(), Ok(&next), "the cursor {:?}", text);
        prop_assert_eq!(
            cursor::decode_search(&text, &other),
            Err(CursorError::OtherSearch)
        );
        resume = decoded.ok();
    }
    prop_assert_eq!(
        hits.len() as u64,
        first_total.unwrap_or(0),
        "hits over all pages"
    );
    for pair in hits.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        prop_assert!(
            a.score > b.score || (a.score == b.score && sort_key(&a.key) < sort_key(&b.key)),
            "out of order: {} ({}) before {} ({})",
            a.key,
            a.score,
            b.key,
            b.score
        );
    }
    let compiled = search.compile();
    if compiled.matching.is_none() && compiled.excluded.is_none() {
        // Nothing to match: every document that passes under and where.
        let keys: Vec<&DocKey> = hits.iter().map(|hit| &hit.key).collect();
        prop_assert_eq!(keys, admitted, "a search with no words");
    }
    Ok(())
}

fn check_cursor_text(text: &str, fingerprint: &[u8; 8]) -> TestCaseResult {
    let decoded = timed("cursor::decode_search", || {
        cursor::decode_search(text, fingerprint)
    })?;
    if let Ok(resume) = decoded {
        if let SearchResume::After(key) = &resume {
            prop_assert!(is_valid_id(&key.id), "an invalid id: {:?}", key);
        }
        // Strict base64: an accepted cursor is the one `encode_search` makes.
        prop_assert_eq!(
            cursor::encode_search(fingerprint, &resume),
            text,
            "two cursors for {:?}",
            resume
        );
    }
    Ok(())
}

fn check_cursor(
    resume: &SearchResume,
    fingerprint: &[u8; 8],
    other: &[u8; 8],
    edits: &[Edit],
) -> TestCaseResult {
    let valid = cursor::encode_search(fingerprint, resume);
    prop_assert_eq!(
        cursor::decode_search(&valid, fingerprint),
        Ok(resume.clone())
    );
    if other != fingerprint {
        prop_assert_eq!(
            cursor::decode_search(&valid, other),
            Err(CursorError::OtherSearch)
        );
    }
    // A search cursor is no listing cursor, and the other way round.
    prop_assert_eq!(cursor::decode(&valid), Err(CursorError::Tag));
    if let SearchResume::After(key) = resume {
        prop_assert_eq!(
            cursor::decode_search(&cursor::encode(key), fingerprint),
            Err(CursorError::Tag)
        );
    }
    let edited = apply_edits(&valid, edits);
    check_cursor_text(&edited, fingerprint)?;
    if edited != valid {
        // A 32-bit checksum: a false alarm here is a 1-in-4-billion event.
        prop_assert!(
            cursor::decode_search(&edited, fingerprint).is_err(),
            "an edited cursor was accepted: {:?} -> {:?}",
            valid,
            edited
        );
    }
    check_cursor_text(&valid, fingerprint)
}

/// Queries: random text, and text made of the language's operators, FTS5's
/// syntax, the words of the documents and hostile characters; some near
/// the length limit.
fn query() -> impl Strategy<Value = String> {
    let fragment = prop_oneof![
        8 => prop::sample::select(vec![
            "\"", "\"", "*", "-", "(", ")", ":", "^", "{", "}", "+", ".", "OR", "OR", "AND",
            "NOT", "NEAR", "NEAR(", "or", "\"\"", "**", "--", "-\"", "\"*", "*\"", ",", "'",
            "login", "code", "sync", "sign", "in", "Caf\u{e9}", "cafe", "CAF\u{c9}", "FEAT",
            "0012", "FEAT-0012", "C++", "v2.1", "foo.bar", "zebra", "word", "key", "title",
            "status", "open", "\u{1f3bb}", "\u{5e9}\u{5dc}\u{5d5}\u{5dd}", "e\u{301}",
            "\u{301}", "\u{65e5}\u{672c}", "orchestra://", "orchestra://features/FEAT-0012",
            "key:title", "{key}:", "NEAR(a b)", "\0", "\u{ffff}", "\u{feff}", "\u{fffd}",
            "\u{200b}", "\u{202e}", "\u{1}", "\\",
        ])
        .prop_map(String::from),
        4 => prop::sample::select(vec![" ", " ", " ", "\t", "\n", "\r\n", "\u{3000}", "\u{a0}"])
            .prop_map(String::from),
        1 => any::<char>().prop_map(String::from),
        1 => "[a-z0-9]{1,6}",
    ];
    let built = prop::collection::vec(fragment, 0..24).prop_map(|f| f.concat());
    let long = (
        built.clone(),
        prop::sample::select(vec![
            "a ", "\u{e9}", "\"", "a OR ", "-a ", "x", "\"a\" ", "\0",
        ]),
        MAX_QUERY_BYTES - 6..MAX_QUERY_BYTES + 6,
    )
        .prop_map(|(mut query, pad, len)| {
            while query.len() + pad.len() <= len {
                query.push_str(pad);
            }
            while query.len() < len {
                query.push('a');
            }
            query
        });
    prop_oneof![
        2 => any::<String>(),
        8 => built,
        1 => long,
    ]
}

fn under() -> impl Strategy<Value = Option<String>> {
    prop_oneof![
        3 => Just(None),
        4 => prop::sample::select(vec![
            "docs", "docs/adr", "docs/adr/", "docs/adr/sub", "features", "notes", "notes/\u{65e5}\u{672c}",
            "docs/adrs", " docs ", "/docs/", "docs//adr", "docs/../x", "docs/.", "Docs", "feature",
            "", "/", "docs/a\0", "notes/caf\u{e9} notes", "notes/\u{10ffff}",
        ])
        .prop_map(|u| Some(u.to_owned())),
        1 => (prop::sample::select(vec!["docs/", "notes/", "features/", ""]), any::<String>())
            .prop_map(|(prefix, rest)| Some(format!("{prefix}{rest}"))),
    ]
}

fn filters() -> impl Strategy<Value = Vec<String>> {
    let name = prop_oneof![
        6 => prop::sample::select(vec![
            "status", "tags", "points", "done", "title", "n", "ok", " status ", "", " ", "missing",
        ])
        .prop_map(String::from),
        1 => "\\PC{0,6}",
    ];
    let value = prop_oneof![
        6 => prop::sample::select(vec![
            "open", "closed", "sync", "offline", "3", "false", "true", "null", "", "a=b", "x y",
            "Open", " open", "Sync protocol",
        ])
        .prop_map(String::from),
        1 => any::<String>(),
    ];
    let filter = prop_oneof![
        8 => (name, value).prop_map(|(name, value)| format!("{name}={value}")),
        1 => any::<String>(),
    ];
    let many = (
        prop::sample::subsequence(feat_0015_filters(), 0..=MAX_FILTERS),
        prop::collection::vec(filter.clone(), 0..3),
    )
        .prop_map(|(mut held, others)| {
            held.extend(others);
            held
        });
    prop_oneof![
        12 => prop::collection::vec(filter.clone(), 0..4),
        2 => many,
        1 => prop::collection::vec(filter, MAX_FILTERS - 1..MAX_FILTERS + 3),
    ]
}

fn resume() -> impl Strategy<Value = SearchResume> {
    prop_oneof![
        any::<u64>().prop_map(SearchResume::Offset),
        (0u64..64).prop_map(SearchResume::Offset),
        (0u64..64).prop_map(SearchResume::Relaxed),
        valid_key().prop_map(SearchResume::After),
    ]
}

fn case() -> impl Strategy<Value = Case> {
    let limit = prop_oneof![3 => 1usize..=3, 1 => 1usize..=100];
    let search = (query(), under(), filters(), limit).prop_map(|(query, under, filters, limit)| {
        Case::Search(SearchCase {
            query,
            under,
            filters,
            limit,
        })
    });
    let text = prop_oneof![
        2 => any::<String>(),
        2 => base64ish(),
        // Past the checksum: a search tag, then anything.
        3 => (any::<[u8; 8]>(), prop::sample::select(vec![b'o', b'k', b'x']), prop::collection::vec(any::<u8>(), 0..24))
            .prop_map(|(fingerprint, kind, rest)| {
                let mut body = b"s1".to_vec();
                body.extend_from_slice(&fingerprint);
                body.push(kind);
                body.extend_from_slice(&rest);
                sealed(&body)
            }),
    ];
    let cursor_text = (text, any::<[u8; 8]>())
        .prop_map(|(text, fingerprint)| Case::CursorText(text, fingerprint));
    let cursor = (
        resume(),
        any::<[u8; 8]>(),
        any::<[u8; 8]>(),
        prop::collection::vec(edit(), 1..4),
    )
        .prop_map(|(resume, fingerprint, other, edits)| Case::Cursor {
            resume,
            fingerprint,
            other,
            edits,
        });
    prop_oneof![
        8 => search,
        1 => cursor_text,
        1 => cursor,
    ]
}

#[test]
fn fuzz_search() {
    let fixture = Fixture::new();
    // Each query with and without under and where, in small and large
    // pages, and with as many filters as a search may carry.
    let every_field = feat_0015_filters();
    let settings: [(Option<&str>, Vec<String>, usize); 6] = [
        (None, vec![], 100),
        (None, vec![], 1),
        (Some("docs"), vec![], 2),
        (None, vec!["status=open".to_owned()], 1),
        (
            Some("features"),
            vec!["tags=sync".to_owned(), "status=closed".to_owned()],
            3,
        ),
        (Some("features"), every_field, 2),
    ];
    replay("search", |bytes| {
        let query = String::from_utf8_lossy(bytes).into_owned();
        for (under, filters, limit) in &settings {
            check_case(
                &fixture,
                &SearchCase {
                    query: query.clone(),
                    under: under.map(str::to_owned),
                    filters: filters.clone(),
                    limit: *limit,
                },
            )
            .map_err(|e| {
                let reason = match e {
                    TestCaseError::Fail(reason) | TestCaseError::Reject(reason) => reason,
                };
                TestCaseError::fail(format!(
                    "{reason}\nunder {under:?}, where {filters:?}, limit {limit}"
                ))
            })?;
        }
        Ok(())
    });
    fuzz("fuzz_search", 32, case(), |case: Case| match case {
        Case::Search(case) => check_case(&fixture, &case),
        Case::CursorText(text, fingerprint) => check_cursor_text(&text, &fingerprint),
        Case::Cursor {
            resume,
            fingerprint,
            other,
            edits,
        } => check_cursor(&resume, &fingerprint, &other, &edits),
    });
}

/// Generated inputs: queries at and past the length limit, some of them as
/// many terms as fit, and a word that a document holds some fifty times, repeated.
pub(super) fn generated_corpus() -> Vec<(String, Vec<u8>)> {
    let max = MAX_QUERY_BYTES;
    let repeat = |unit: &str, len: usize| {
        let mut query = unit.repeat(len / unit.len());
        query.push_str(&"a".repeat(len - query.len()));
        query
    };
    vec![
        corpus_file("gen-longest", "a".repeat(max)),
        corpus_file("gen-too-long", "a".repeat(max + 1)),
        corpus_file("gen-longest-multibyte", "\u{e9}".repeat(max / 2)),
        corpus_file(
            "gen-too-long-multibyte",
            format!("a{}", "\u{e9}".repeat(max / 2)),
        ),
        corpus_file("gen-longest-terms", repeat("a ", max)),
        corpus_file("gen-longest-or", repeat("a OR ", max)),
        corpus_file("gen-longest-exclusions", repeat("-a ", max)),
        corpus_file("gen-longest-phrases", repeat("\"a\" ", max)),
        corpus_file("gen-longest-prefixes", repeat("a* ", max)),
        corpus_file("gen-longest-quotes", "\"".repeat(max)),
        corpus_file("gen-longest-nul", "\0".repeat(max)),
        corpus_file("gen-too-long-terms", repeat("a ", max + 1)),
        corpus_file("gen-repeated-word", "word ".repeat(320)),
    ]
}
