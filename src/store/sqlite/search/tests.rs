//! The SQLite store's search, against documents imported in each test: what it finds, how it ranks and pages, its snippets and the index it keeps.

use super::*;
use crate::doc::Prefix;
use crate::search::{Filter, Under};
use crate::store::sqlite::Store;
use crate::store::{FileStat, NewDocument};

fn doc(key: &str, title: &str, frontmatter: Option<&str>, body: &[u8]) -> NewDocument {
    let (prefix, id) = key.split_once('/').unwrap();
    NewDocument::new(
        DocKey::new(Prefix::parse(prefix).unwrap(), id),
        FileStat {
            size: body.len() as u64,
            mtime_ns: 1,
            hash: *blake3::hash(body).as_bytes(),
        },
        std::str::from_utf8(body).is_ok(),
        title.to_string(),
        None,
        frontmatter.map(str::to_string),
        body.to_vec(),
    )
}

fn import(store: &Store, docs: &[NewDocument], removed: &[&str]) {
    let tx = store.begin_import("/p", false).unwrap();
    for d in docs {
        tx.put(d).unwrap();
    }
    for key in removed {
        let (prefix, id) = key.split_once('/').unwrap();
        tx.remove(&DocKey::new(Prefix::parse(prefix).unwrap(), id))
            .unwrap();
    }
    tx.commit(true).unwrap();
}

/// The keys of every hit, following the cursors, and the total.
fn keys(store: &Store, query: &str, under: Option<&str>, filters: &[&str]) -> Vec<String> {
    let search = Search::new(
        query,
        under.map(|u| Under::parse(u).unwrap()),
        filters.iter().map(|f| Filter::parse(f).unwrap()).collect(),
    )
    .unwrap();
    let reader = store.reader().unwrap();
    let mut keys = Vec::new();
    let mut resume = None;
    loop {
        let page = reader.search(&search, resume.as_ref(), 2).unwrap();
        keys.extend(page.hits.iter().map(|h| h.key.to_string()));
        assert!(page.total as usize >= keys.len());
        match page.next {
            Some(next) => resume = Some(next),
            None => {
                assert_eq!(page.total as usize, keys.len(), "{query:?}: total");
                return keys;
            }
        }
    }
}

fn integrity(store: &Store) {
    let reader = store.reader().unwrap();
    reader
        .conn
        .execute(
            "INSERT INTO search (search, rank) VALUES ('integrity-check', 1)",
            [],
        )
        .unwrap();
}

#[test]
fn finds_what_the_documents_hold() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_or_create(&dir.path().join("db")).unwrap();
    let docs = [
        doc(
            "features/FEAT-0012",
            "Login code",
            Some(r#"{"status":"open","tags":["sync","offline"],"points":3,"done":false}"#),
            b"---\nstatus: open\n---\nThe login code is sent by mail. Sign in with it.",
        ),
        doc(
            "features/FEAT-0013",
            "Café Résumé",
            Some(r#"{"status":"closed","tags":["sync"]}"#),
            b"A draft about the C++ port, v2.1, and foo.bar syncing.",
        ),
        doc(
            "docs/adr/0006",
            "Sync protocol",
            Some(r#"{"status":"open"}"#),
            b"We sign documents in batches. See FEAT-0012.",
        ),
        doc("docs/adrs", "Not under docs/adr", None, b"signin and login"),
        doc(
            "notes/blob",
            "Binary zebra",
            None,
            b"\xff\xfe zebra-in-body",
        ),
    ];
    import(&store, &docs, &[]);
    integrity(&store);
    let check = |query: &str, under: Option<&str>, filters: &[&str], expected: &[&str]| {
        assert_eq!(
            keys(&store, query, under, filters),
            expected,
            "{query:?} {under:?} {filters:?}"
        );
    };
    check("login code", None, &[], &["features/FEAT-0012"]);
    check("cafe resume", None, &[], &["features/FEAT-0013"]);
    check("CAFÉ", None, &[], &["features/FEAT-0013"]);
    check("\"sign in\"", None, &[], &["features/FEAT-0012"]);
    check("sync*", None, &[], &["docs/adr/0006", "features/FEAT-0013"]);
    check(
        "login OR signin",
        None,
        &[],
        &["docs/adrs", "features/FEAT-0012"],
    );
    check("login -draft -signin", None, &[], &["features/FEAT-0012"]);
    // The id ranks first, then a document that mentions it.
    check(
        "FEAT-0012",
        None,
        &[],
        &["features/FEAT-0012", "docs/adr/0006"],
    );
    check(
        "orchestra://features/FEAT-0012",
        None,
        &[],
        &["features/FEAT-0012"],
    );
    check("C++", None, &[], &["features/FEAT-0013"]);
    check("v2.1 foo.bar", None, &[], &["features/FEAT-0013"]);
    // A binary document: found by its title and key, not its bytes.
    check("zebra", None, &[], &["notes/blob"]);
    check("body", None, &[], &[]);
    check("sign*", Some("docs/adr"), &[], &["docs/adr/0006"]);
    check("", Some("docs/adr"), &[], &["docs/adr/0006"]);
    check("", Some("docs"), &[], &["docs/adr/0006", "docs/adrs"]);
    check(
        "",
        None,
        &["status=open"],
        &["docs/adr/0006", "features/FEAT-0012"],
    );
    check(
        "",
        None,
        &["tags=sync"],
        &["features/FEAT-0012", "features/FEAT-0013"],
    );
    check(
        "",
        None,
        &["tags=sync", "status=open"],
        &["features/FEAT-0012"],
    );
    check(
        "",
        None,
        &["points=3", "done=false"],
        &["features/FEAT-0012"],
    );
    check("", None, &["status=Open"], &[]);
    check("sync*", None, &["status=open"], &["docs/adr/0006"]);
    check("-sync*", Some("features"), &[], &["features/FEAT-0012"]);
    let every = [
        "docs/adr/0006",
        "docs/adrs",
        "features/FEAT-0012",
        "features/FEAT-0013",
        "notes/blob",
    ];
    check("", None, &[], &every);
    check("\"AND NOT NEAR(\"", None, &[], &[]);
    // No document holds the three words: those that hold one of them.
    check(
        "AND NOT NEAR(",
        None,
        &[],
        &["docs/adrs", "features/FEAT-0013"],
    );
    check(") \" * -", None, &[], &every);

    // Incremental: new words found, old ones gone, removed never a hit.
    let changed = [doc(
        "features/FEAT-0012",
        "Passkeys",
        Some(r#"{"status":"closed"}"#),
        b"Passkeys replace the mailed code.",
    )];
    import(&store, &changed, &["docs/adr/0006"]);
    integrity(&store);
    check("passkeys", None, &[], &["features/FEAT-0012"]);
    check("login", None, &[], &["docs/adrs"]);
    check("batches", None, &[], &[]);
    check("", None, &["status=open"], &[]);
    check(
        "",
        None,
        &["status=closed"],
        &["features/FEAT-0012", "features/FEAT-0013"],
    );
}

/// Listings in key order, page by page (2 hits a page), and their
/// totals, against the documents filtered here: many hits (the walk
/// that looks each document up in the indexes), few (the set of hits
/// read and sorted), under one prefix or folder, resumed deep inside it;
/// after a load, then after imports that change and remove documents
/// (the deleted rows that a filter's count must leave out).
#[test]
fn listings_in_key_order_walk_or_sort_and_resume_inside_a_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_or_create(&dir.path().join("db")).unwrap();
    let statuses = ["open", "closed", "draft"];
    let key_of = |i: usize| match i % 3 {
        0 => format!("features/F-{i:03}"),
        1 => format!("notes/N-{i:03}"),
        _ => format!("docs/guide/G-{i:03}"),
    };
    // (key, status, has the word "alpha"), of the documents stored.
    let mut facts: Vec<(String, &str, bool)> = Vec::new();
    for round in 0..3 {
        let mut docs = Vec::new();
        let mut removed = Vec::new();
        for i in 0..300 {
            let key = key_of(i);
            // One document in 300 is `rare`: under 1% of them.
            let status = match (round, i) {
                (_, 152) => "rare",
                (0, _) => statuses[i % 7 % 3],
                _ if i % 4 == round => statuses[(i + round) % 3],
                _ => continue,
            };
            if round > 0 && i % 10 == round && i != 152 {
                removed.push(key.clone());
                facts.retain(|(k, _, _)| *k != key);
                continue;
            }
            let alpha = (i + round) % 5 == 0;
            let body = if alpha { "alpha beta" } else { "beta" };
            docs.push(doc(
                &key,
                "Title",
                Some(&format!(r#"{{"status":"{status}"}}"#)),
                body.as_bytes(),
            ));
            facts.retain(|(k, _, _)| *k != key);
            facts.push((key, status, alpha));
        }
        let removed: Vec<&str> = removed.iter().map(String::as_str).collect();
        import(&store, &docs, &removed);
        let cases: &[(&str, Option<&str>, &[&str])] = &[
            ("", None, &["status=open"]),
            ("", None, &["status=rare"]),
            ("", None, &["status=draft"]),
            ("", Some("features"), &["status=open"]),
            ("", Some("notes"), &["status=closed"]),
            ("", Some("docs/guide"), &["status=draft"]),
            ("", Some("docs"), &["status=rare"]),
            ("", Some("features"), &[]),
            ("-alpha", None, &[]),
            ("-alpha", Some("notes"), &["status=open"]),
        ];
        for (query, under, filters) in cases {
            let mut expected: Vec<String> = facts
                .iter()
                .filter(|(key, status, alpha)| {
                    under.is_none_or(|u| key.starts_with(&format!("{u}/")))
                        && filters
                            .iter()
                            .all(|f| f.strip_prefix("status=") == Some(status))
                        && !(query.contains("-alpha") && *alpha)
                })
                .map(|(key, _, _)| key.clone())
                .collect();
            expected.sort();
            let case = format!("round {round}: {query:?} {under:?} {filters:?}");
            assert!(!expected.is_empty(), "{case}");
            // `keys` also checks the total against the hits it paged.
            assert_eq!(keys(&store, query, *under, filters), expected, "{case}");
        }
    }
}

/// The keys of the documents whose row in `fields` has the pair
/// (`?` for a row without a document), and the number of rows.
fn with_pair(store: &Store, name: &str, value: &str) -> (Vec<String>, i64) {
    let reader = store.reader().unwrap();
    let keys = reader
        .conn
        .prepare(
            "SELECT coalesce(d.prefix || '/' || d.id, '?')
             FROM fields f LEFT JOIN documents d ON d.rowid = f.rowid
             WHERE fields MATCH ?1 ORDER BY 1",
        )
        .unwrap()
        .query_map([fields::all_of([(name, value)].into_iter())], |r| r.get(0))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    let rows = reader
        .conn
        .query_row("SELECT count(*) FROM fields_docsize", [], |r| r.get(0))
        .unwrap();
    (keys, rows)
}

#[test]
fn fields_hold_the_pairs_of_the_current_documents_and_no_other() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_or_create(&dir.path().join("db")).unwrap();
    let check = |pairs: &[(&str, &str, &[&str])], rows: i64| {
        for (name, value, keys) in pairs {
            assert_eq!(
                with_pair(&store, name, value),
                (keys.iter().map(|k| k.to_string()).collect(), rows),
                "{name}={value}"
            );
        }
        store
            .reader()
            .unwrap()
            .conn
            .execute_batch("INSERT INTO fields (fields, rank) VALUES ('integrity-check', 0)")
            .unwrap();
    };
    // A load rolled back leaves nothing for the next one.
    let tx = store.begin_import("/p", false).unwrap();
    tx.put(&doc("notes/gone", "G", Some(r#"{"k":"lost"}"#), b"x"))
        .unwrap();
    drop(tx);
    import(
        &store,
        &[
            doc(
                "notes/a",
                "A",
                Some(r#"{"k":"v","tags":["x","y","x"]}"#),
                b"a",
            ),
            doc("notes/b", "B", Some(r#"{"k":"w","n":3}"#), b"b"),
            doc("notes/c", "C", None, b"c"),
        ],
        &[],
    );
    check(
        &[
            ("k", "v", &["notes/a"]),
            ("tags", "x", &["notes/a"]),
            ("tags", "y", &["notes/a"]),
            ("k", "w", &["notes/b"]),
            ("n", "3", &["notes/b"]),
            ("k", "lost", &[]),
            ("K", "v", &[]),
            ("k", "V", &[]),
            ("tags", "x y", &[]),
        ],
        2,
    );
    // Replaced, removed (the last rowid, which SQLite gives again), new,
    // and unchanged fields under a new body.
    import(
        &store,
        &[
            doc("notes/a", "A", Some(r#"{"k":"w","tags":["y"]}"#), b"a2"),
            doc("notes/d", "D", Some(r#"{"n":4}"#), b"d"),
        ],
        &["notes/c", "notes/b"],
    );
    check(
        &[
            ("k", "v", &[]),
            ("k", "w", &["notes/a"]),
            ("tags", "x", &[]),
            ("tags", "y", &["notes/a"]),
            ("n", "3", &[]),
            ("n", "4", &["notes/d"]),
        ],
        2,
    );
    import(
        &store,
        &[doc(
            "notes/a",
            "A",
            Some(r#"{"k":"w","tags":["y"]}"#),
            b"a3",
        )],
        &["notes/d"],
    );
    check(&[("k", "w", &["notes/a"]), ("n", "4", &[])], 1);
    assert_eq!(keys(&store, "", None, &["k=w"]), ["notes/a"]);
    assert_eq!(keys(&store, "", None, &["k=w", "tags=y"]), ["notes/a"]);
    assert!(keys(&store, "", None, &["k=w", "tags=x"]).is_empty());
    assert!(keys(&store, "", None, &["k=lost"]).is_empty());
}

#[test]
fn ties_go_by_key_on_every_page() {
    for copies in [10, TIE_SLACK * 2] {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_or_create(&dir.path().join("db")).unwrap();
        // Inserted in reverse: rowid order is the opposite of key order.
        let docs: Vec<NewDocument> = (0..copies)
            .rev()
            .map(|i| doc(&format!("notes/n{i:03}"), "Same", None, b"equal words"))
            .collect();
        let mut all = docs.clone();
        all.push(doc("notes/zz-better", "Equal", None, b"equal words"));
        import(&store, &all, &[]);
        let mut expected: Vec<String> = docs.iter().map(|d| d.key.to_string()).collect();
        expected.sort();
        // The title match ranks first, then the ties in key order.
        expected.insert(0, "notes/zz-better".to_string());
        assert_eq!(
            keys(&store, "equal", None, &[]),
            expected,
            "{copies} copies"
        );
    }
}

#[test]
fn snippets_mark_the_match() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_or_create(&dir.path().join("db")).unwrap();
    let long = format!(
        "---\ntitle: x\n---\n{} needle {}",
        "hay ".repeat(200),
        "stack ".repeat(200)
    );
    import(
        &store,
        &[doc("notes/a", "A title", Some("{}"), long.as_bytes())],
        &[],
    );
    let reader = store.reader().unwrap();
    let page = reader
        .search(&Search::new("needle", None, vec![]).unwrap(), None, 20)
        .unwrap();
    let snippet = &page.hits[0].snippet;
    assert!(snippet.contains("**needle**"), "{snippet}");
    assert!(snippet.chars().count() <= SNIPPET_CHARS + 2, "{snippet}");
    assert!(page.hits[0].score > 0.0);
    // A title hit shows the start of the body, past the frontmatter.
    let page = reader
        .search(&Search::new("title", None, vec![]).unwrap(), None, 20)
        .unwrap();
    assert!(
        page.hits[0].snippet.starts_with("hay hay"),
        "{}",
        page.hits[0].snippet
    );
}

/// Every hit's score by the rank function and by FTS5's own `bm25()`
/// (the `rank` migration 0004 configures, same weights), by rowid.
fn scores(conn: &rusqlite::Connection, query: &str) -> Vec<(i64, f64, f64)> {
    let ranked = |extra: &str| -> Vec<(i64, f64)> {
        conn.prepare(&format!(
            "SELECT rowid, rank FROM search WHERE search MATCH ?1 {extra} ORDER BY rowid"
        ))
        .unwrap()
        .query_map([query], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<rusqlite::Result<Vec<_>>>()
        .unwrap()
    };
    let ours = ranked(&format!("AND rank MATCH '{RANK}'"));
    let fts5 = ranked("");
    assert_eq!(ours.len(), fts5.len(), "{query}: hits");
    assert!(!ours.is_empty(), "{query}: no hit");
    ours.into_iter()
        .zip(fts5)
        .map(|((rowid, a), (other, b))| {
            assert_eq!(rowid, other);
            (rowid, a, b)
        })
        .collect()
}

fn assert_same_scores(conn: &rusqlite::Connection, queries: &[&str]) {
    for query in queries {
        for (rowid, ours, fts5) in scores(conn, query) {
            assert!(
                (ours - fts5).abs() <= 1e-12 * fts5.abs().max(1.0),
                "{query}, row {rowid}: {ours}, FTS5's bm25() {fts5}"
            );
        }
    }
}

#[test]
fn ranks_as_fts5_bm25_with_and_without_the_lengths_in_memory() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_or_create(&dir.path().join("db")).unwrap();
    // Lengths from 3 to ~100 tokens; `common` in every document and in
    // the title of some, `rare` in one, `twice` twice in some bodies.
    let docs: Vec<_> = (0..48)
        .map(|i| {
            let body = format!(
                "common {}{}{}",
                "filler ".repeat(i * 2),
                if i % 5 == 0 { "twice twice " } else { "" },
                if i == 7 { "rare word" } else { "" }
            );
            let title = if i % 3 == 0 {
                "Common title"
            } else {
                "Other title"
            };
            doc(&format!("notes/n{i:02}"), title, None, body.as_bytes())
        })
        .collect();
    import(&store, &docs, &[]);
    // A rare word first: too few hits to read every length, each hit
    // asks FTS5. A common word then reads them all; the rare word, asked
    // again, uses them.
    let queries = [
        "rare",
        "common",
        "rare",
        "common twice",
        "\"rare word\"",
        "commo*",
        "twice OR rare",
        "common NOT twice",
        "title",
    ];
    let in_read_transaction = |store: &Store| {
        let reader = store.reader().unwrap();
        reader
            .in_transaction(|| {
                assert_same_scores(&reader.conn, &queries);
                Ok(())
            })
            .unwrap();
    };
    in_read_transaction(&store);
    // A re-import changes lengths and rows: nothing stale is used.
    let longer = doc(
        "notes/n01",
        "Common title",
        None,
        "common rare twice ".repeat(40).as_bytes(),
    );
    import(&store, &[longer], &["notes/n02", "notes/n03"]);
    in_read_transaction(&store);
    // In a write transaction that indexed one row again, shorter (same
    // rows, same sequence number): the lengths in memory are stale
    // there, FTS5's are used.
    let tx = store.begin_import("/p", false).unwrap();
    tx.conn
        .execute_batch(
            "INSERT INTO search (search, rowid, key, title, description, body)
                 SELECT 'delete', rowid, key, title, description, body
                 FROM search_source WHERE key = 'notes/n04';
             INSERT INTO search (rowid, key, title, description, body)
                 SELECT rowid, key, 'Common', '', 'common common filler filler filler'
                 FROM search_source WHERE key = 'notes/n04';",
        )
        .unwrap();
    assert_same_scores(&tx.conn, &queries[1..2]);
}

/// The segments of the full-text index and of the fields' index, as
/// their structure records say (`_data` row 10: a 4-byte cookie, the
/// marker of version 2 when the table has one, then the number of levels
/// and of segments, as SQLite varints, one byte each here).
fn segments(store: &Store) -> [i64; 2] {
    let reader = store.reader().unwrap();
    ["search_data", "fields_data"].map(|table| {
        let record: Vec<u8> = reader
            .conn
            .query_row(
                &format!("SELECT block FROM {table} WHERE id = 10"),
                [],
                |r| r.get(0),
            )
            .unwrap();
        let header = match record.get(4..8) == Some(&[0xff, 0x00, 0x00, 0x01]) {
            true => &record[8..],
            false => &record[4..],
        };
        assert!(header[0] < 0x80 && header[1] < 0x80, "{table}: {record:?}");
        i64::from(header[1])
    })
}

fn numbered(i: usize, revision: usize) -> NewDocument {
    doc(
        &format!("notes/n{i:03}"),
        &format!("Note {i}"),
        Some(&format!(
            r#"{{"status":"open","rev":{revision},"tags":["a","b"]}}"#
        )),
        format!("---\nstatus: open\n---\nword{i} rev{revision} common").as_bytes(),
    )
}

/// A load into an empty database writes each index as one segment, and so
/// does a later import whose changes come in rowid order (as they do
/// for documents loaded together: key order); one with changes out of
/// that order, two. More would mean that FTS5 wrote out its pending terms
/// during the import: at a statement that opened a statement journal,
/// or at a rowid lower than the last one written (see
/// `search::IndexWrites`).
#[test]
fn an_import_writes_its_index_changes_in_few_segments() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_or_create(&dir.path().join("db")).unwrap();
    // Each change: a document put, or the key of one removed.
    let write = |changes: Vec<Result<NewDocument, &str>>| {
        let before = segments(&store);
        let tx = store.begin_import("/p", false).unwrap();
        for change in &changes {
            match change {
                Ok(d) => {
                    tx.put(d).unwrap();
                    tx.record(crate::doc::ChangeKind::New, &d.key).unwrap();
                }
                Err(key) => {
                    let (prefix, id) = key.split_once('/').unwrap();
                    let key = DocKey::new(Prefix::parse(prefix).unwrap(), id);
                    tx.remove(&key).unwrap();
                    tx.record(crate::doc::ChangeKind::Removed, &key).unwrap();
                }
            }
        }
        tx.commit(true).unwrap();
        integrity(&store);
        let after = segments(&store);
        [after[0] - before[0], after[1] - before[1]]
    };
    // A load into an empty database.
    assert_eq!(
        write((0..300).map(|i| Ok(numbered(i, 0))).collect()),
        [1, 1]
    );
    // In key order: 60 documents replaced, 5 removed among them.
    let removed = [
        "notes/n001",
        "notes/n002",
        "notes/n003",
        "notes/n004",
        "notes/n006",
    ];
    let mut changes: Vec<_> = (0..60).map(|i| Ok(numbered(i * 5, 1))).collect();
    changes.extend(removed.iter().map(|&key| Err(key)));
    changes.sort_by_key(|c| match c {
        Ok(d) => d.key.to_string(),
        Err(key) => key.to_string(),
    });
    // (FTS5 may merge a segment that lost many rows: `deletemerge`.)
    let [search, fields] = write(changes);
    assert!(search == 1 && fields <= 1, "{search} and {fields} segments");
    assert_eq!(keys(&store, "word5", None, &[]), ["notes/n005"]);
    assert_eq!(keys(&store, "rev1", None, &[]).len(), 60);
    assert_eq!(keys(&store, "rev0", None, &[]).len(), 300 - 60 - 5);
    assert!(keys(&store, "word2", None, &[]).is_empty());
    // Out of rowid order: new documents (above every stored rowid)
    // before replaced and removed ones, and a rowid going back.
    let mut changes: Vec<_> = (300..305).map(|i| Ok(numbered(i, 2))).collect();
    changes.extend([Ok(numbered(10, 2)), Ok(numbered(200, 2))]);
    changes.extend([Err("notes/n007"), Ok(numbered(100, 2)), Err("notes/n008")]);
    let [search, fields] = write(changes);
    assert!(search <= 2 && fields <= 2, "{search} and {fields} segments");
    assert_eq!(keys(&store, "rev2", None, &[]).len(), 8);
    assert_eq!(keys(&store, "rev1", None, &[]).len(), 60 - 3);
    assert!(keys(&store, "word7", None, &[]).is_empty());
    assert_eq!(keys(&store, "word302", None, &[]), ["notes/n302"]);
    assert_eq!(keys(&store, "", None, &["rev=2"]).len(), 8);
    assert_eq!(keys(&store, "", None, &["rev=1"]).len(), 60 - 3);
    assert_eq!(keys(&store, "", None, &["rev=0"]).len(), 300 - 60 - 5 - 2);
    assert_eq!(keys(&store, "", None, &["tags=b"]).len(), 300 - 5 - 2 + 5);
}

#[test]
fn a_ranked_search_without_filters_counts_its_hits_as_it_ranks_them() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_or_create(&dir.path().join("db")).unwrap();
    // Bodies of 40 documents: every one has `alpha`, every third `beta`
    // right after it, every fifth a word starting with `sync`.
    let body = |i: usize, revision: usize| {
        let mut text = format!(
            "alpha{} text {i} rev {revision}",
            if i.is_multiple_of(3) { " beta" } else { "" }
        );
        if i.is_multiple_of(5) {
            text.push_str(&format!(" sync{}", ["ing", "ed", "s"][i % 3]));
        }
        text
    };
    let key = |i: usize| format!("{}/D{i:03}", ["notes", "features"][i % 2]);
    let status = |i: usize| format!(r#"{{"status":"{}"}}"#, ["open", "closed"][i % 4 / 3]);
    let version = |i: usize, revision: usize| {
        doc(
            &key(i),
            "Doc",
            Some(&status(i)),
            body(i, revision).as_bytes(),
        )
    };
    import(
        &store,
        &(0..40).map(|i| version(i, 0)).collect::<Vec<_>>(),
        &[],
    );
    // A second import removes some and rewrites others, so that the index
    // holds deletions the counts must not see.
    let removed: Vec<String> = (0..40).filter(|i| i % 7 == 1).map(key).collect();
    let removed: Vec<&str> = removed.iter().map(String::as_str).collect();
    import(
        &store,
        &(0..40)
            .filter(|i| i % 4 == 2 && i % 7 != 1)
            .map(|i| version(i, 1))
            .collect::<Vec<_>>(),
        &removed,
    );
    integrity(&store);
    let live: Vec<usize> = (0..40).filter(|i| i % 7 != 1).collect();
    let expected = |test: &dyn Fn(usize) -> bool| live.iter().filter(|&&i| test(i)).count() as u64;
    let beta = |i: usize| i.is_multiple_of(3);
    let sync = |i: usize| i.is_multiple_of(5);
    let note = |i: usize| i.is_multiple_of(2);
    let open = |i: usize| i % 4 < 3;
    // query, under, filters: its total, and how the ranking counted it:
    // `None`, not at all (the filters choose the rows it scores; no hit);
    // `Some(without_idf)`, with the ranks of one phrase left without IDF.
    type Case<'a> = (&'a str, Option<&'a str>, &'a [&'a str], u64, Option<bool>);
    let cases: &[Case] = &[
        // First, before any search has read every row's length.
        ("d005", None, &[], 1, Some(true)),
        ("alpha", None, &[], expected(&|_| true), Some(true)),
        ("\"alpha beta\"", None, &[], expected(&beta), Some(true)),
        ("sync*", None, &[], expected(&sync), Some(true)),
        ("rev", None, &[], expected(&|_| true), Some(true)),
        ("nowhere", None, &[], 0, None),
        ("alpha beta", None, &[], expected(&beta), Some(false)),
        (
            "alpha -beta",
            None,
            &[],
            expected(&|i| !beta(i)),
            Some(false),
        ),
        (
            "beta OR sync*",
            None,
            &[],
            expected(&|i| beta(i) || sync(i)),
            Some(false),
        ),
        ("\"alpha\" nowhere", None, &[], 0, None),
        // Relaxed: the documents with either word, ranked and counted so.
        ("alpha nowhere", None, &[], expected(&|_| true), Some(false)),
        ("alpha", Some("notes"), &[], expected(&note), None),
        ("alpha", None, &["status=open"], expected(&open), None),
        (
            "beta",
            Some("features"),
            &["status=open"],
            expected(&|i| beta(i) && !note(i) && open(i)),
            None,
        ),
    ];
    let reader = store.reader().unwrap();
    for &(query, under, filters, total, counted) in cases {
        let search = Search::new(
            query,
            under.map(|u| Under::parse(u).unwrap()),
            filters.iter().map(|f| Filter::parse(f).unwrap()).collect(),
        )
        .unwrap();
        rank::take_counted();
        let page = reader.search(&search, None, 5).unwrap();
        let case = format!("{query:?} {under:?} {filters:?}");
        assert_eq!(page.total, total, "{case}: total");
        assert_eq!(
            rank::take_counted().map(|c| (c.hits as u64, c.without_idf)),
            counted.map(|without_idf| (total, without_idf)),
            "{case}: counted by the ranking"
        );
        // Each score is what FTS5's `bm25()` gives the hit, for the
        // relaxed search's expression when it answered.
        let compiled = search.compile();
        assert_eq!(page.relaxed, query == "alpha nowhere", "{case}: relaxed");
        let matching = match page.relaxed {
            true => compiled.relaxed.unwrap(),
            false => compiled.matching.unwrap(),
        };
        for hit in &page.hits {
            let fts5: f64 = reader
                .conn
                .query_row(
                    "SELECT search.rank FROM search JOIN documents d ON d.rowid = search.rowid
                     WHERE search MATCH ?1 AND d.prefix = ?2 AND d.id = ?3",
                    (&matching, hit.key.prefix.as_str(), &hit.key.id),
                    |r| r.get(0),
                )
                .unwrap();
            assert!(
                (hit.score + fts5).abs() <= 1e-12 * fts5.abs().max(1.0),
                "{case}, {}: {}, FTS5's bm25() {fts5}",
                hit.key,
                hit.score
            );
        }
        assert_eq!(
            keys(&store, query, under, filters).len() as u64,
            total,
            "{query:?}: paged"
        );
    }
}

/// A small deterministic generator for the documents of a test.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

/// Every hit of a search with its pages, the total of each page and
/// whether each was relaxed, and the cursors that resumed it.
fn pages(store: &Store, search: &Search, limit: usize) -> (Vec<String>, u64, bool) {
    let reader = store.reader().unwrap();
    let mut keys = Vec::new();
    let first = reader.search(search, None, limit).unwrap();
    let (total, relaxed, terms) = (first.total, first.relaxed, first.terms.clone());
    let mut page = first;
    loop {
        assert_eq!((page.total, page.relaxed), (total, relaxed), "{search:?}");
        assert_eq!(page.terms, terms, "{search:?}: terms on every page");
        keys.extend(page.hits.iter().map(|h| h.key.to_string()));
        match page.next {
            Some(next) => {
                // A relaxed search's cursor resumes the relaxed search.
                assert_eq!(
                    matches!(next, SearchResume::Relaxed(_)),
                    relaxed,
                    "{search:?}: {next:?}"
                );
                page = reader.search(search, Some(&next), limit).unwrap();
            }
            None => break,
        }
    }
    assert_eq!(keys.len() as u64, total, "{search:?}: total");
    (keys, total, relaxed)
}

/// Documents that each hold some words of a question and none all of them,
/// and documents that hold none, with a status for `where`.
fn spread_question(words: &[&str], docs: usize, seed: u64) -> (Vec<NewDocument>, Vec<Vec<usize>>) {
    let mut rng = Lcg(seed);
    let mut held = Vec::new();
    let mut out = Vec::new();
    for i in 0..docs {
        // A third hold none; the others one to all but one of the words.
        let mut mine: Vec<usize> = match i % 3 {
            0 => Vec::new(),
            _ => (0..words.len()).filter(|_| rng.below(3) == 0).collect(),
        };
        if mine.len() == words.len() {
            mine.pop();
        }
        let mut body = format!("Document {i} is about filler and more filler.");
        for &w in &mine {
            body.push_str(&format!(" It mentions {}.", words[w]));
        }
        let key = format!(
            "{}/Q{i:03}",
            ["notes", "features", "docs"][rng.below(3) as usize]
        );
        let status = ["open", "closed"][(i / 2) % 2];
        out.push(doc(
            &key,
            &format!("Question part {i}"),
            Some(&format!(r#"{{"status":"{status}"}}"#)),
            format!("---\nstatus: {status}\n---\n{body}").as_bytes(),
        ));
        held.push(mine);
    }
    (out, held)
}

#[test]
fn questions_whose_words_are_spread_over_documents_find_them() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_or_create(&dir.path().join("db")).unwrap();
    let words = [
        "quorvex",
        "blintaph",
        "zendrill",
        "morcaste",
        "plivvet",
        "tarnwhistle",
    ];
    let (docs, held) = spread_question(&words, 60, 7);
    import(&store, &docs, &[]);
    let search = |query: &str, under: Option<&str>, filters: &[&str]| {
        Search::new(
            query,
            under.map(|u| Under::parse(u).unwrap()),
            filters.iter().map(|f| Filter::parse(f).unwrap()).collect(),
        )
        .unwrap()
    };
    // The reference: the documents that hold at least one word, in key order.
    let reference = |admit: &dyn Fn(&NewDocument) -> bool| {
        let mut keys: Vec<String> = docs
            .iter()
            .zip(&held)
            .filter(|(d, h)| !h.is_empty() && admit(d))
            .map(|(d, _)| d.key.to_string())
            .collect();
        keys.sort();
        keys
    };
    let sorted = |mut keys: Vec<String>| {
        keys.sort();
        keys
    };
    assert!(held.iter().all(|h| h.len() < words.len()));
    let question = words.join(" ");
    for limit in [1, 4, 100] {
        let (keys, total, relaxed) = pages(&store, &search(&question, None, &[]), limit);
        assert!(relaxed, "no document holds every word");
        assert_eq!(sorted(keys), reference(&|_| true), "pages of {limit}");
        assert_eq!(total as usize, reference(&|_| true).len());
    }
    // Relaxing keeps `under` and `where`.
    let (keys, _, relaxed) = pages(&store, &search(&question, Some("features"), &[]), 3);
    assert!(relaxed);
    assert_eq!(
        sorted(keys),
        reference(&|d| d.key.prefix == Prefix::Features)
    );
    let (keys, _, relaxed) = pages(&store, &search(&question, None, &["status=open"]), 3);
    assert!(relaxed);
    let open: Vec<String> = docs
        .iter()
        .filter(|d| d.frontmatter.as_deref().unwrap_or("").contains("open"))
        .map(|d| d.key.to_string())
        .collect();
    assert_eq!(
        sorted(keys),
        reference(&|d| open.contains(&d.key.to_string()))
    );
    // Best first: a document with more of the question's words ranks above
    // one with fewer, as BM25 has it (the words are equally rare).
    let page = store
        .reader()
        .unwrap()
        .search(&search(&question, None, &[]), None, 100)
        .unwrap();
    let most = held.iter().map(Vec::len).max().unwrap();
    let top = docs[held.iter().position(|h| h.len() == most).unwrap()]
        .key
        .clone();
    let top_score = page.hits.iter().find(|h| h.key == top).unwrap().score;
    assert!(page.hits[0].score >= top_score && top_score > page.hits.last().unwrap().score);
    // Words that some document holds together are not relaxed.
    let pair = held.iter().find(|h| h.len() >= 2).unwrap();
    let strict = format!("{} {}", words[pair[0]], words[pair[1]]);
    let (keys, _, relaxed) = pages(&store, &search(&strict, None, &[]), 5);
    assert!(!relaxed);
    let both: Vec<String> = docs
        .iter()
        .zip(&held)
        .filter(|(_, h)| h.contains(&pair[0]) && h.contains(&pair[1]))
        .map(|(d, _)| d.key.to_string())
        .collect();
    assert_eq!(sorted(keys), sorted(both));
    // A phrase, an exclusion, OR or a filter keep their meaning: no hit,
    // not relaxed.
    let not_relaxed = [
        (
            format!("\"{}\" {}", words[0], words[1..].join(" ")),
            None,
            vec![],
        ),
        (format!("{question} -filler"), None, vec![]),
        (
            format!("{} OR nowhere {}", words[0], words[1..].join(" ")),
            None,
            vec![],
        ),
        (format!("\"{question}\""), None, vec![]),
        (question.clone(), None, vec!["status=nope"]),
        ("".to_string(), None, vec!["status=nope"]),
    ];
    for (query, under, filters) in &not_relaxed {
        let (keys, total, relaxed) = pages(&store, &search(query, *under, filters), 5);
        assert_eq!(
            (keys.len(), total, relaxed),
            (0, 0, false),
            "{query:?} {filters:?}"
        );
    }
    // A cursor of the relaxed search resumes it; a cursor of the strict
    // search resumes the strict one (which has nothing here).
    let s = search(&question, None, &[]);
    let reader = store.reader().unwrap();
    let second = reader
        .search(&s, Some(&SearchResume::Relaxed(2)), 2)
        .unwrap();
    assert!(second.relaxed && second.hits.len() == 2);
    assert_eq!(second.next, Some(SearchResume::Relaxed(4)));
    let strict = reader
        .search(&s, Some(&SearchResume::Offset(2)), 2)
        .unwrap();
    assert!(!strict.relaxed && strict.hits.is_empty() && strict.total == 0);
}

#[test]
fn a_long_query_is_answered_from_its_most_selective_words() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_or_create(&dir.path().join("db")).unwrap();
    // 60 words; word i is in the documents j < 60 - i (word 0 in all 60),
    // so the most selective are the last ones.
    let words: Vec<String> = (0..60).map(|i| format!("lw{}x", unique_word(i))).collect();
    let docs: Vec<NewDocument> = (0..60)
        .map(|j| {
            let body: Vec<&str> = (0..60)
                .filter(|&i| j < 60 - i)
                .map(|i| words[i].as_str())
                .collect();
            doc(
                &format!("notes/L{j:02}"),
                "Long",
                None,
                body.join(" ").as_bytes(),
            )
        })
        .collect();
    import(&store, &docs, &[]);
    let sentence = words.join(" ");
    assert!(sentence.len() <= crate::search::MAX_QUERY_BYTES);
    let search = Search::new(sentence.clone(), None, vec![]).unwrap();
    let page = store.reader().unwrap().search(&search, None, 100).unwrap();
    // The 32 words in the fewest documents: 28..60, in query order.
    let used: Vec<String> = words[28..].to_vec();
    assert_eq!(page.terms.as_deref(), Some(used.as_slice()));
    // All 32 are in document 0 only.
    assert!(!page.relaxed);
    let keys: Vec<String> = page.hits.iter().map(|h| h.key.to_string()).collect();
    assert_eq!(keys, ["notes/L00"]);
    // With a word no document holds, nothing holds them all: relaxed, the
    // documents that hold any of the 32 kept (the unknown word among them).
    let with_unknown = format!("{sentence} nowhereword");
    let search = Search::new(with_unknown, None, vec![]).unwrap();
    let (keys, total, relaxed) = pages(&store, &search, 7);
    assert!(relaxed);
    let page = store.reader().unwrap().search(&search, None, 1).unwrap();
    let used = page.terms.unwrap();
    assert_eq!(used.len(), crate::search::MAX_TERMS);
    assert_eq!(used.last().map(String::as_str), Some("nowhereword"));
    assert_eq!(&used[..31], &words[29..]);
    // Word 29 is in documents 0..31.
    assert_eq!(total, 31);
    let mut expected: Vec<String> = (0..31).map(|j| format!("notes/L{j:02}")).collect();
    expected.sort();
    let mut keys = keys;
    keys.sort();
    assert_eq!(keys, expected);
    // The counts of the terms are FTS5's: the same as one count per term.
    let reader = store.reader().unwrap();
    let terms = search.terms();
    let counts = reader.term_documents(&terms, None).unwrap();
    for (term, count) in terms.iter().zip(&counts) {
        let one: i64 = reader
            .conn
            .query_row(
                "SELECT count(*) FROM search WHERE search MATCH ?1",
                [term],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(*count, one as u64, "{term}");
    }
    assert_eq!(counts.last(), Some(&0));
    assert_eq!(counts[0], 60);
}

/// Letters only, different for each `i`: FTS5 reads digits as part of a word.
fn unique_word(i: usize) -> String {
    format!(
        "{}{}",
        (b'a' + (i / 26) as u8) as char,
        (b'a' + (i % 26) as u8) as char
    )
}
