//! The property of `Reader::seeing` (issue 36), as data, on either backend: a reader seeing some areas answers every call as a store holding only the documents in them does, ranked searches' order and scores included.

use super::{FileStat, NewDocument, Reader, Store};
use crate::access::Areas;
use crate::doc::{DocKey, Prefix};
use crate::search::{Filter, Search, Under};

/// The project: features, notes and docs (`docs/adr` and `docs/other`).
/// Notes and docs hold the searched words too, are linked to and
/// mentioned from features, share names with them and id prefixes with
/// their completions.
const PROJECT: &[(&str, &str, &str)] = &[
    (
        "features/FEAT-001",
        "Offline sync",
        "---\nstatus: open\n---\n# Offline sync\nSync the board offline. See [the note](../notes/NOTE-001.md), \
         [the ADR](../docs/adr/0001.md), [the guide](/docs/other/guide.md) and \
         [a missing one](FEAT-404.md).\nMentions NOTE-001, FEAT-002, FEAT-003, ADR-007, TASK-001 and TASK-002.\n",
    ),
    (
        "features/FEAT-002",
        "Photos",
        "# Photos\nUpload photos while offline; sync them later.\nRelated: FEAT-001, NOTE-001.\n",
    ),
    (
        "features/FEAT-010",
        "Board",
        "---\nstatus: open\n---\n# Board\nThe board's sync engine, a quantum widget.\nSee TASK-002.\n",
    ),
    (
        "features/FEAT-011",
        "Search",
        "# Search\nSearch words in a widget. Sync sync.\n",
    ),
    ("features/FEAT-020", "Export", "# Export\nExport to csv.\n"),
    (
        "features/TASK-001",
        "A task",
        "# A task\nSync the task list.\n",
    ),
    (
        "features/TASK-002",
        "Another task",
        "# Another task\nWidgets.\n",
    ),
    (
        "notes/FEAT-003",
        "Sync note",
        "# Sync note\nsync sync offline quantum widget board\nSee [FEAT-001](../features/FEAT-001.md) and FEAT-002.\n",
    ),
    (
        "notes/NOTE-001",
        "Sync everywhere",
        "---\nstatus: open\n---\n# Sync everywhere\nsync offline sync quantum zebra photos\nFEAT-010 and [board](../features/FEAT-010.md).\n",
    ),
    (
        "notes/TASK-001",
        "Noted task",
        "# Noted task\nTASK-002 sync\n",
    ),
    (
        "notes/misc",
        "Widgets",
        "# Widgets\nwidget widget quantum offline zebra sync\n",
    ),
    (
        "docs/adr/0001",
        "ADR one",
        "# ADR one\nThe offline sync decision, see ADR-007 and FEAT-001, [photos](../../features/FEAT-002.md) \
         and [the note](../../notes/NOTE-001.md).\n",
    ),
    (
        "docs/adr/0002",
        "ADR two",
        "---\nstatus: open\n---\n# ADR two\nA widget decision. TASK-002.\n",
    ),
    (
        "docs/adr/ADR-007",
        "ADR seven",
        "# ADR seven\nsync decision quantum\n",
    ),
    (
        "docs/adr0",
        "Not in adr",
        "# Not in adr\nsync outside the folder\n",
    ),
    (
        "docs/other/guide",
        "Guide",
        "---\nstatus: open\n---\n# Guide\nsync guide widget, [ADR one](../adr/0001.md), FEAT-010.\n",
    ),
    (
        "docs/other/TASK-002",
        "Docs task",
        "# Docs task\nzebra crossing\n",
    ),
    (
        "notes/MOVED",
        "Moving note",
        "# Moving note\nsync offline, moved to features\n",
    ),
    (
        "features/OLD",
        "Moving feature",
        "# Moving feature\nquantum sync, moved to notes\n",
    ),
    (
        "docs/adr/0009",
        "Moving ADR",
        "# Moving ADR\nwidget sync, moved to docs/other\n",
    ),
    (
        "features/FEAT-030",
        "Renamed",
        "# Renamed\nzebra sync, moved within features\n",
    ),
];

/// Moves made by a second import, as a write's `move` records them: each
/// document of [`PROJECT`] at the first key goes to the second.
const MOVES: &[(&str, &str)] = &[
    ("notes/MOVED", "features/MOVED"),
    ("features/OLD", "notes/NEW"),
    ("docs/adr/0009", "docs/other/moved"),
    ("features/FEAT-030", "features/FEAT-031"),
];

fn key_of(text: &str) -> DocKey {
    let (prefix, id) = text.split_once('/').unwrap();
    DocKey::new(Prefix::parse(prefix).unwrap(), id)
}

fn doc(key: &str, title: &str, body: &str) -> NewDocument {
    let frontmatter = body
        .starts_with("---\nstatus: open")
        .then(|| r#"{"status":"open"}"#.to_string());
    NewDocument::new(
        key_of(key),
        FileStat {
            size: body.len() as u64,
            mtime_ns: 1,
            hash: *blake3::hash(body.as_bytes()).as_bytes(),
        },
        true,
        title.to_string(),
        frontmatter.as_ref().map(|_| "A description".to_string()),
        frontmatter,
        body.as_bytes().to_vec(),
    )
}

/// Imports the documents of the project that `keep` keeps, in one import,
/// then makes the [`MOVES`] of them in another: a move between two kept
/// keys is recorded on both; with one key kept, the store has a removal
/// or a new document.
fn import(store: &Store, keep: impl Fn(&DocKey) -> bool) {
    let tx = store.begin_import("/p", false).unwrap();
    for (key, title, body) in PROJECT {
        if keep(&key_of(key)) {
            let mut doc = doc(key, title, body);
            store.location().prepare(&mut doc);
            tx.put(&doc).unwrap();
        }
    }
    tx.commit(true).unwrap();
    let tx = store.begin_import("/p", false).unwrap();
    for (from, to) in MOVES {
        let (_, title, body) = PROJECT.iter().find(|(key, _, _)| key == from).unwrap();
        let (from, to) = (key_of(from), key_of(to));
        let base = match keep(&from) {
            true => {
                let base = tx.current(&from).unwrap().unwrap().version;
                tx.remove(&from).unwrap();
                Some(base)
            }
            false => None,
        };
        if keep(&to) {
            let mut doc = doc(&to.to_string(), title, body);
            store.location().prepare(&mut doc);
            tx.put(&doc).unwrap();
            if let Some(base) = base {
                let version = tx.current(&to).unwrap().unwrap().version;
                tx.record_move(&from, base + 1, &to, version).unwrap();
            }
        }
    }
    tx.commit(true).unwrap();
}

fn areas(names: &[&str]) -> Areas {
    Areas::from_areas(names.iter().map(|n| Under::parse(n).unwrap()))
}

fn search(query: &str, under: Option<&str>, filters: &[&str]) -> Search {
    Search::new(
        query,
        under.map(|u| Under::parse(u).unwrap()),
        filters.iter().map(|f| Filter::parse(f).unwrap()).collect(),
    )
    .unwrap()
}

/// Every answer a reader gives, as text: pages of 2 followed to their
/// end, every point read of every key of the project and of missing ones,
/// completions, the nearest ids, links both ways and searches of every
/// kind, hits with their scores.
fn answers(reader: &Reader) -> Vec<String> {
    let mut out = Vec::new();
    let mut after: Option<DocKey> = None;
    loop {
        let page = reader.page(after.as_ref(), 2).unwrap();
        out.push(format!("page after {after:?}: {page:?}"));
        match page.last() {
            Some(last) => after = Some(last.key.clone()),
            None => break,
        }
    }
    out.push(format!("count {}", reader.count().unwrap()));
    for under in ["docs", "docs/adr", "docs/other", "features", "notes"] {
        let under = Under::parse(under).unwrap();
        for start in [None, Some("a"), Some("FEAT-010"), Some("adr/0001")] {
            let mut after = start.map(str::to_string);
            loop {
                let page = reader.page_under(&under, after.as_deref(), 2).unwrap();
                out.push(format!("page under {under:?} after {after:?}: {page:?}"));
                match page.last() {
                    Some(last) => after = Some(last.key.id.clone()),
                    None => break,
                }
            }
        }
        out.push(format!(
            "count under {under:?}: {}",
            reader.count_under(&under).unwrap()
        ));
    }
    for (prefix, typed) in [
        (Prefix::Features, ""),
        (Prefix::Features, "FEAT-0"),
        (Prefix::Features, "T"),
        (Prefix::Notes, "FEAT"),
        (Prefix::Notes, ""),
        (Prefix::Docs, ""),
        (Prefix::Docs, "adr"),
        (Prefix::Docs, "adr/"),
        (Prefix::Docs, "adr/0"),
        (Prefix::Docs, "o"),
        (Prefix::Docs, "other/T"),
    ] {
        for limit in [1, 2, 10] {
            out.push(format!(
                "complete {prefix:?} {typed:?} {limit}: {:?}",
                reader.complete_ids(prefix, typed, limit).unwrap()
            ));
        }
    }
    let mut keys: Vec<&str> = PROJECT.iter().map(|(key, _, _)| *key).collect();
    keys.extend(MOVES.iter().map(|(_, to)| *to));
    keys.extend([
        "features/FEAT-005",
        "features/A",
        "features/zzz",
        "notes/FEAT-004",
        "docs/adr/0003",
        "docs/adr/zzz",
        "docs/b",
        "docs/other/a",
    ]);
    for key in &keys {
        let key = key_of(key);
        for limit in [1, 3, 4] {
            out.push(format!(
                "nearest {key} {limit}: {:?}",
                reader.nearest(&key, limit).unwrap()
            ));
        }
        out.push(format!(
            "get {key}: {:?}",
            reader.get(&key, 1 << 20).unwrap()
        ));
        out.push(format!(
            "get {key} small: {:?}",
            reader.get(&key, 10).unwrap()
        ));
        out.push(format!("exists {key}: {}", reader.exists(&key).unwrap()));
        let meta = reader.meta(&key).unwrap().map(|mut m| {
            m.changed_ms = None;
            m
        });
        out.push(format!("meta {key}: {meta:?}"));
        let history: Vec<_> = reader
            .history(&key, None, 10)
            .unwrap()
            .into_iter()
            .map(|mut v| {
                v.committed_ms = None;
                v
            })
            .collect();
        out.push(format!("history {key}: {history:?}"));
        let version = reader.version(&key, 1).unwrap().map(|mut v| {
            v.version.committed_ms = None;
            v
        });
        out.push(format!("version {key}: {version:?}"));
        out.push(format!(
            "version bytes {key}: {:?}",
            reader.version_bytes(&key, 1).unwrap()
        ));
        out.push(format!(
            "versions {key}: {:?} {}",
            reader.complete_versions(&key, "", 5).unwrap(),
            reader.count_versions(&key).unwrap()
        ));
        out.push(format!(
            "outline {key}: {:?}",
            reader.outline(&key).unwrap()
        ));
        out.push(format!(
            "range {key}: {:?}",
            reader.body_range(&key, 2, 10).unwrap()
        ));
        let mut after = None;
        loop {
            let page = reader.links_out(&key, after, 2).unwrap();
            out.push(format!("links out {key} after {after:?}: {page:?}"));
            match page.last() {
                Some(last) => after = Some(last.n),
                None => break,
            }
        }
        let mut after: Option<(DocKey, u32)> = None;
        loop {
            let page = reader
                .links_in(&key, after.as_ref().map(|(k, n)| (k, *n)), 2)
                .unwrap();
            out.push(format!("links in {key} after {after:?}: {page:?}"));
            match page.last() {
                Some(last) => after = Some((last.source.clone(), last.n)),
                None => break,
            }
        }
    }
    let all: Vec<DocKey> = keys.iter().map(|k| key_of(k)).collect();
    let all: Vec<&DocKey> = all.iter().collect();
    out.push(format!(
        "versions of: {:?}",
        reader.versions_of(&all).unwrap()
    ));
    let long: String = (0..40)
        .map(|i| format!("w{i}"))
        .chain(["sync", "offline", "zebra", "quantum"].map(String::from))
        .collect::<Vec<_>>()
        .join(" ");
    let searches = [
        search("sync", None, &[]),
        search("offline sync", None, &[]),
        search("quantum zebra", None, &[]),
        search("widget photos", None, &[]),
        search("zebra", None, &[]),
        search("sync -offline", None, &[]),
        search("-zebra", None, &[]),
        search("", None, &["status=open"]),
        search("sync", None, &["status=open"]),
        search("sync", Some("docs"), &[]),
        search("sync", Some("docs/adr"), &[]),
        search("sync", Some("features"), &[]),
        search("sync offline", Some("docs/other"), &[]),
        search("widget", None, &["status=open"]),
        search("", Some("docs"), &[]),
        search("quantum zebra", Some("features"), &[]),
        search("nothing-at-all", None, &[]),
        search(&long, None, &[]),
    ];
    for search in &searches {
        let mut resume = None;
        loop {
            let page = reader.search(search, resume.as_ref(), 2).unwrap();
            out.push(format!("search {search:?} from {resume:?}: {page:?}"));
            match page.next {
                Some(next) => resume = Some(next),
                None => break,
            }
        }
    }
    out
}

#[track_caller]
fn assert_same(got: &[String], want: &[String], what: &str) {
    for (got, want) in got.iter().zip(want) {
        assert_eq!(got, want, "{what}");
    }
    assert_eq!(got.len(), want.len(), "{what}");
}

/// The property, on stores made by `new_store` (each empty, of one
/// backend).
pub(in crate::store) fn check(new_store: &mut dyn FnMut() -> Store) {
    let all = new_store();
    import(&all, |_| true);
    // A store where notes is empty: the issue's own test.
    let no_notes = new_store();
    import(&no_notes, |key| key.prefix != Prefix::Notes);

    // Seeing everything, or `None`, is the store's own answer.
    let whole = answers(&all.reader().unwrap());
    assert_same(
        &answers(&all.reader().unwrap().seeing(None)),
        &whole,
        "seeing None",
    );
    assert_same(
        &answers(&all.reader().unwrap().seeing(Some(Areas::everything()))),
        &whole,
        "seeing everything",
    );

    let features = areas(&["features"]);
    assert_same(
        &answers(&all.reader().unwrap().seeing(Some(features.clone()))),
        &answers(&no_notes.reader().unwrap().seeing(Some(features.clone()))),
        "features: a store with notes, and one without",
    );

    for seen in [
        areas(&["features"]),
        areas(&["docs/adr"]),
        areas(&["docs/adr", "features"]),
        areas(&["docs/other", "notes"]),
        Areas::nothing(),
    ] {
        let only = new_store();
        import(&only, |key| seen.contains(key));
        let want = answers(&only.reader().unwrap());
        let what = format!("{seen:?}");
        assert_same(
            &answers(&all.reader().unwrap().seeing(Some(seen.clone()))),
            &want,
            &format!("{what}: the whole store seeing them"),
        );
        assert_same(
            &answers(&only.reader().unwrap().seeing(Some(seen.clone()))),
            &want,
            &format!("{what}: the store of only them seeing them"),
        );
    }
}

#[test]
fn sqlite_readers_seeing_areas_answer_as_stores_of_only_their_documents() {
    let dir = tempfile::tempdir().unwrap();
    let mut n = 0;
    check(&mut || {
        n += 1;
        Store::open_or_create(&dir.path().join(format!("{n}.db"))).unwrap()
    });
}
