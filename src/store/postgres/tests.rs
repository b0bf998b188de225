//! The PostgreSQL store against a real server: the one `pg_virtualenv` starts for `scripts/test.sh` (its `PG*` variables name it), each test in a database of its own.

use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;
use crate::doc::{ChangeKind, DocKey, Prefix};
use crate::store::{FileStat, NewDocument};

/// A database made for one test on the server the `PG*` variables name,
/// dropped with it.
pub(super) struct TestDatabase {
    pub(super) target: PgTarget,
    pub(super) name: String,
}

impl TestDatabase {
    pub(super) fn new() -> TestDatabase {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let name = format!(
            "orchestra_test_{}_{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let mut admin = connect(&server()).expect("the test server");
        admin
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .unwrap();
        let target =
            PgTarget::resolve(&format!("postgres:///{name}"), None, &PgEnv::process()).unwrap();
        TestDatabase { target, name }
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        if let Ok(mut admin) = connect(&server()) {
            let _ = admin.batch_execute(&format!("DROP DATABASE {} WITH (FORCE)", self.name));
        }
    }
}

/// The server of the tests, as the `PG*` variables say.
fn server() -> PgTarget {
    assert!(
        std::env::var_os("PGHOST").is_some(),
        "the PostgreSQL tests need a server: run them through `pg_virtualenv` \
         (`pg_virtualenv cargo test`), as scripts/test.sh does"
    );
    PgTarget::resolve("postgres://", None, &PgEnv::process()).unwrap()
}

#[test]
fn the_migrations_have_the_same_numbers_and_names_on_both_backends() {
    let names = |folder: &str| -> Vec<String> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("migrations")
            .join(folder);
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        names
    };
    let (sqlite, postgres) = (names("sqlite"), names("postgres"));
    assert_eq!(sqlite, postgres);
    assert_eq!(sqlite.len(), crate::store::sqlite::MIGRATIONS.len());
    assert_eq!(postgres.len(), MIGRATIONS.len());
    for (i, name) in sqlite.iter().enumerate() {
        assert!(name.starts_with(&format!("{:04}_", i + 1)), "{name}");
    }
}

#[test]
fn servers_that_start_together_migrate_once() {
    let db = TestDatabase::new();
    let opened: Vec<Result<PgStore>> = std::thread::scope(|s| {
        let starts: Vec<_> = (0..4)
            .map(|_| s.spawn(|| PgStore::open(db.target.clone())))
            .collect();
        starts.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for store in &opened {
        let store = store.as_ref().expect("every server starts");
        assert_eq!(store.schema_version().unwrap(), MIGRATIONS.len());
    }
    // Opening again changes nothing.
    let store = PgStore::open(db.target.clone()).unwrap();
    assert_eq!(store.schema_version().unwrap(), MIGRATIONS.len());
    let mut client = connect(&db.target).unwrap();
    let configs: i64 = client
        .query_one(
            "SELECT count(*) FROM pg_ts_config WHERE cfgname = 'orchestra'",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(configs, 1);
}

/// A listing reads titles and descriptions: they stay in the row (0009),
/// as the small frontmatter and `where` terms do (0010), where the body and
/// the search vector go out of line, compressed with lz4.
#[test]
fn titles_and_descriptions_stay_in_the_row() {
    let db = TestDatabase::new();
    PgStore::open(db.target.clone()).unwrap();
    let mut client = connect(&db.target).unwrap();
    // Storage: x extended (out of line when the row is too large), m main;
    // compression: l lz4, nothing for the default (pglz).
    let storage: Vec<(String, i8, i8)> = client
        .query(
            "SELECT attname::text, attstorage, attcompression FROM pg_attribute
             WHERE attrelid = 'documents'::regclass
               AND attname IN ('title', 'description', 'body', 'frontmatter', 'search', 'fields')
             ORDER BY attname",
            &[],
        )
        .unwrap()
        .iter()
        .map(|row| (row.get(0), row.get(1), row.get(2)))
        .collect();
    let expected: Vec<(String, i8, i8)> = [
        ("body", b'x', b'l'),
        ("description", b'm', 0),
        ("fields", b'm', 0),
        ("frontmatter", b'm', 0),
        ("search", b'x', b'l'),
        ("title", b'm', 0),
    ]
    .iter()
    .map(|(name, storage, compression)| (name.to_string(), *storage as i8, *compression as i8))
    .collect();
    assert_eq!(storage, expected);
}

#[test]
fn a_database_with_a_newer_schema_is_refused() {
    let db = TestDatabase::new();
    PgStore::open(db.target.clone()).unwrap();
    let mut client = connect(&db.target).unwrap();
    client
        .execute("UPDATE orchestra_schema SET version = version + 1", &[])
        .unwrap();
    let err = PgStore::open(db.target.clone()).err().expect("refused");
    let message = format!("{err:#}");
    assert!(
        message.contains("newer than this orchestra knows"),
        "{message}"
    );
    assert!(message.contains(&db.target.to_string()), "{message}");
}

#[test]
fn a_failed_migration_leaves_the_database_as_it_was() {
    let db = TestDatabase::new();
    let mut client = connect(&db.target).unwrap();
    // A table in the way of migration 0002: the whole migration rolls back.
    client
        .batch_execute("CREATE TABLE changes (x integer)")
        .unwrap();
    let err = PgStore::open(db.target.clone()).err().expect("fails");
    assert!(
        format!("{err:#}").contains("migration 0002 failed"),
        "{err:#}"
    );
    let tables: Vec<String> = client
        .query(
            "SELECT tablename::text FROM pg_tables WHERE schemaname = 'public' ORDER BY 1",
            &[],
        )
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect();
    assert_eq!(tables, ["changes"]);
}

#[test]
fn the_schema_keeps_keys_in_byte_order_and_bodies_byte_exact() {
    let db = TestDatabase::new();
    PgStore::open(db.target.clone()).unwrap();
    let mut client = connect(&db.target).unwrap();
    let body: &[u8] = b"\x00\xff binary \x00";
    for id in ["b", "B", "a", "\u{e9}", "Z", "_"] {
        client
            .execute(
                "INSERT INTO documents (prefix, id, size, mtime_ns, hash, is_text, title, seq, body)
                 VALUES ('notes', $1, 0, 0, '\\x00', false, $1, 1, $2)",
                &[&id, &body],
            )
            .unwrap();
    }
    let ids: Vec<String> = client
        .query("SELECT id FROM documents ORDER BY prefix, id", &[])
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect();
    // SQLite's BINARY order: bytes, not the locale's.
    assert_eq!(ids, ["B", "Z", "_", "a", "b", "\u{e9}"]);
    let stored: Vec<u8> = client
        .query_one("SELECT body FROM documents WHERE id = 'a'", &[])
        .unwrap()
        .get(0);
    assert_eq!(stored, body);
}

#[test]
fn the_search_configuration_ignores_case_and_diacritics() {
    let db = TestDatabase::new();
    PgStore::open(db.target.clone()).unwrap();
    let mut client = connect(&db.target).unwrap();
    for (text, query, matches) in [
        ("Café Résumé", "cafe resume", true),
        ("CAFE", "café", true),
        ("naïve approach", "naive", true),
        ("login code", "logout", false),
    ] {
        let found: bool = client
            .query_one(
                "SELECT to_tsvector('orchestra', $1) @@ plainto_tsquery('orchestra', $2)",
                &[&text, &query],
            )
            .unwrap()
            .get(0);
        assert_eq!(found, matches, "{text} / {query}");
    }
}

#[test]
fn a_wrong_password_is_a_clear_error_that_never_shows_it() {
    let db = TestDatabase::new();
    // pg_virtualenv's server asks for passwords over TCP.
    let url = format!(
        "postgres://{}:not-the-password-7731@{}:{}/{}",
        std::env::var("PGUSER").unwrap_or_else(|_| "postgres".into()),
        std::env::var("PGHOST").unwrap(),
        std::env::var("PGPORT").unwrap_or_else(|_| "5432".into()),
        db.name
    );
    let target = PgTarget::resolve(&url, None, &PgEnv::process()).unwrap();
    let err = PgStore::open(target.clone()).err().expect("refused");
    let message = format!("{err:#}");
    assert!(
        message.contains("password authentication failed"),
        "{message}"
    );
    assert!(message.contains(&target.to_string()), "{message}");
    assert!(!message.contains("not-the-password-7731"), "{message}");
    assert!(!format!("{err:?}").contains("not-the-password-7731"));
}

#[test]
fn sslmode_says_whether_the_connection_is_encrypted() {
    let db = TestDatabase::new();
    // pg_virtualenv's server offers TLS (Debian's self-signed certificate).
    for (mode, encrypted) in [("disable", false), ("prefer", true), ("require", true)] {
        let url = format!(
            "postgres://{}@{}:{}/{}?sslmode={mode}",
            std::env::var("PGUSER").unwrap_or_else(|_| "postgres".into()),
            std::env::var("PGHOST").unwrap(),
            std::env::var("PGPORT").unwrap_or_else(|_| "5432".into()),
            db.name
        );
        let target = PgTarget::resolve(&url, None, &PgEnv::process()).unwrap();
        let store = PgStore::open(target).unwrap();
        let mut conn = store.pool.get().unwrap();
        let ssl: bool = conn
            .query_one(
                "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
                &[],
            )
            .unwrap()
            .get(0);
        assert_eq!(ssl, encrypted, "sslmode={mode}");
    }
}

/// A document as import would make it from `body`.
pub(super) fn doc(
    key: &str,
    title: &str,
    frontmatter: Option<&str>,
    body: &[u8],
    mtime_ns: i64,
) -> NewDocument {
    let (prefix, id) = key.split_once('/').unwrap();
    NewDocument::new(
        DocKey::new(Prefix::parse(prefix).unwrap(), id),
        FileStat {
            size: body.len() as u64,
            mtime_ns,
            hash: *blake3::hash(body).as_bytes(),
        },
        std::str::from_utf8(body).is_ok(),
        title.to_string(),
        frontmatter.map(|_| "A description".to_string()),
        frontmatter.map(str::to_string),
        body.to_vec(),
    )
}

/// What one import does, on either backend.
// Steps are few and short-lived: a boxed document would only make every
// test's list of steps noisier.
#[allow(clippy::large_enum_variant)]
pub(super) enum Step {
    Put(NewDocument),
    Touch(&'static str, i64),
    Remove(&'static str),
}

pub(super) fn key_of(text: &str) -> DocKey {
    let (prefix, id) = text.split_once('/').unwrap();
    DocKey::new(Prefix::parse(prefix).unwrap(), id)
}

/// Three imports: a load, changes (new, changed, unchanged bytes with a new
/// mtime, removed, a revert), and one that changes nothing.
pub(super) fn imports() -> Vec<Vec<Step>> {
    let big = "x".repeat(5000);
    vec![
        vec![
            Step::Put(doc(
                "features/FEAT-001",
                "Offline",
                Some(r#"{"status":"open","tags":["sync","offline"]}"#),
                b"---\nstatus: open\n---\n# Offline\n",
                1,
            )),
            Step::Put(doc("features/FEAT-002", "Photos", None, b"# Photos\n", 1)),
            Step::Put(doc("features/FEAT-010", "Board", None, big.as_bytes(), 1)),
            Step::Put(doc("notes/B", "Upper", None, b"# B", 1)),
            Step::Put(doc("notes/a", "Lower", None, b"# a", 1)),
            Step::Put(doc("notes/_", "Underscore", None, b"# _", 1)),
            Step::Put(doc(
                "notes/caf\u{e9} notes",
                "Caf\u{e9}",
                None,
                "# Caf\u{e9}\0 nul".as_bytes(),
                1,
            )),
            Step::Put(doc("notes/blob", "blob", None, b"\xff\xfe\x00 binary", 1)),
            Step::Put(doc("docs/adr/0001", "ADR 1", None, b"# ADR 1", 1)),
            Step::Put(doc("docs/adr/0002", "ADR 2", None, b"# ADR 2", 1)),
            Step::Put(doc("docs/guide", "Guide", None, b"# Guide", 1)),
        ],
        vec![
            Step::Put(doc(
                "features/FEAT-001",
                "Offline v2",
                Some(r#"{"status":"done"}"#),
                b"---\nstatus: done\n---\n# Offline v2\n",
                2,
            )),
            Step::Put(doc("features/FEAT-003", "New", None, b"# New", 2)),
            Step::Touch("notes/a", 5),
            Step::Remove("docs/adr/0002"),
            Step::Put(doc("docs/guide", "Guide", None, b"# Guide, edited", 2)),
        ],
        vec![Step::Put(doc("docs/guide", "Guide", None, b"# Guide", 3))],
        vec![],
    ]
}

/// Everything a server answers from `Reader`, as text, for comparing the
/// two backends: pages of 3, every point read with a large and a small
/// limit, completions, counts, the feed.
macro_rules! answers {
    ($reader:expr) => {{
        let reader = $reader;
        let mut out = Vec::new();
        let mut after: Option<DocKey> = None;
        loop {
            let page = reader.page(after.as_ref(), 3).unwrap();
            out.push(format!("page after {after:?}: {page:?}"));
            match page.last() {
                Some(last) => after = Some(last.key.clone()),
                None => break,
            }
        }
        let keys = [
            "features/FEAT-001",
            "features/FEAT-003",
            "features/FEAT-010",
            "notes/a",
            "notes/B",
            "notes/blob",
            "notes/caf\u{e9} notes",
            "docs/adr/0002",
            "docs/guide",
            "docs/nope",
        ];
        for key in keys {
            let key = key_of(key);
            out.push(format!(
                "get {key}: {:?}",
                reader.get(&key, 1 << 20).unwrap()
            ));
            out.push(format!(
                "get {key} small: {:?}",
                reader.get(&key, 10).unwrap()
            ));
            out.push(format!("exists {key}: {:?}", reader.exists(&key).unwrap()));
        }
        for (prefix, typed) in [
            (Prefix::Notes, ""),
            (Prefix::Notes, "a"),
            (Prefix::Notes, "caf\u{e9}"),
            (Prefix::Features, "FEAT-0"),
            (Prefix::Docs, "adr/"),
            (Prefix::Docs, "zzz"),
        ] {
            out.push(format!(
                "complete {prefix:?} {typed:?}: {:?}",
                reader.complete_ids(prefix, typed, 2).unwrap()
            ));
        }
        out.push(format!(
            "count {} seq {}",
            reader.count().unwrap(),
            reader.seq().unwrap()
        ));
        for after in [0, 1, 2, 5] {
            out.push(format!(
                "changes after {after}: {:?}",
                reader.changes_after(after).unwrap()
            ));
        }
        out
    }};
}

/// Both stores, side by side: a SQLite file and a PostgreSQL database
/// that every import goes to alike.
pub(super) struct BothStores {
    pub(super) sqlite: crate::store::Store,
    pub(super) sqlite_path: std::path::PathBuf,
    pub(super) pg: PgStore,
    pub(super) db: TestDatabase,
    _dir: tempfile::TempDir,
}

impl BothStores {
    pub(super) fn new() -> BothStores {
        let db = TestDatabase::new();
        let pg = PgStore::open(db.target.clone()).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let sqlite_path = dir.path().join("o.db");
        let sqlite = crate::store::Store::open_or_create(&sqlite_path).unwrap();
        BothStores {
            sqlite,
            sqlite_path,
            pg,
            db,
            _dir: dir,
        }
    }

    /// Runs one import of `steps` on both stores, recording the feed as
    /// import does; commits it as a change unless it has no step.
    pub(super) fn import(&self, steps: &[Step]) {
        let changed = !steps.is_empty();
        let lite = self.sqlite.begin_import("/p", false).unwrap();
        let post = self.pg.begin_import("/p", false).unwrap();
        assert_eq!(lite.seq(), post.seq());
        assert_eq!(lite.starts_empty(), post.starts_empty());
        for step in steps {
            match step {
                Step::Put(doc) => {
                    let kind = match self.sqlite.reader().unwrap().exists(&doc.key).unwrap() {
                        true => ChangeKind::Updated,
                        false => ChangeKind::New,
                    };
                    lite.put(doc).unwrap();
                    lite.record(kind, &doc.key).unwrap();
                    post.put(doc).unwrap();
                    post.record(kind, &doc.key).unwrap();
                }
                Step::Touch(key, mtime) => {
                    lite.touch(&key_of(key), *mtime).unwrap();
                    post.touch(&key_of(key), *mtime).unwrap();
                }
                Step::Remove(key) => {
                    lite.remove(&key_of(key)).unwrap();
                    lite.record(ChangeKind::Removed, &key_of(key)).unwrap();
                    post.remove(&key_of(key)).unwrap();
                    post.record(ChangeKind::Removed, &key_of(key)).unwrap();
                }
            }
        }
        lite.commit(changed).unwrap();
        post.commit(changed).unwrap();
    }
}

#[test]
fn both_backends_give_the_same_answers_for_the_same_imports() {
    let both = BothStores::new();
    let mut all = imports();
    // Every document removed; then a load into the empty `documents` of a
    // database that keeps their history: a document back after its removal
    // takes the next number, a new one 1.
    let current = [
        "docs/adr/0001",
        "docs/guide",
        "features/FEAT-001",
        "features/FEAT-002",
        "features/FEAT-003",
        "features/FEAT-010",
        "notes/B",
        "notes/_",
        "notes/a",
        "notes/blob",
        "notes/caf\u{e9} notes",
    ];
    all.push(current.into_iter().map(Step::Remove).collect());
    all.push(vec![
        Step::Put(doc(
            "features/FEAT-001",
            "Offline again",
            None,
            b"# Back",
            6,
        )),
        Step::Put(doc("features/FEAT-020", "Twenty", None, b"# Twenty", 6)),
    ]);
    for (n, steps) in all.into_iter().enumerate() {
        if n == imports().len() + 1 {
            let empty = both.pg.reader().unwrap().page(None, 1).unwrap();
            assert!(empty.is_empty(), "a load: {empty:?}");
        }
        both.import(&steps);
        let (expected, got) = (
            answers!(both.sqlite.reader().unwrap()),
            answers!(both.pg.reader().unwrap()),
        );
        for (e, g) in expected.iter().zip(&got) {
            assert_eq!(e, g, "after import {}", n + 1);
        }
        assert_eq!(expected.len(), got.len());
        assert_eq!(
            sqlite_history(&both.sqlite_path),
            pg_history(&both.db.target),
            "after import {}",
            n + 1
        );
    }
}

/// The versions and the kept bodies' hashes, as text.
fn sqlite_history(path: &std::path::Path) -> Vec<String> {
    let conn = rusqlite::Connection::open(path).unwrap();
    let mut rows: Vec<String> = conn
        .prepare(
            "SELECT prefix, id, version, lower(hex(hash)), size, title, is_text, seq FROM versions
             ORDER BY prefix, id, version",
        )
        .unwrap()
        .query_map([], |r| {
            Ok(format!(
                "{} {} {} {:?} {} {} {} {}",
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, i64>(2)?,
                r.get::<_, Option<String>>(3)?.filter(|h| !h.is_empty()),
                r.get::<_, i64>(4)?,
                r.get::<_, String>(5)?,
                r.get::<_, bool>(6)?,
                r.get::<_, i64>(7)?
            ))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let mut bodies: Vec<String> = conn
        .prepare("SELECT lower(hex(hash)), size FROM bodies ORDER BY hash")
        .unwrap()
        .query_map([], |r| {
            Ok(format!(
                "body {} {}",
                r.get::<_, String>(0)?,
                r.get::<_, i64>(1)?
            ))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect();
    rows.append(&mut bodies);
    rows
}

fn pg_history(target: &PgTarget) -> Vec<String> {
    let mut client = connect(target).unwrap();
    let mut rows: Vec<String> = client
        .query(
            "SELECT prefix, id, version, encode(hash, 'hex'), size, title, is_text, seq FROM versions
             ORDER BY prefix, id, version",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| {
            format!(
                "{} {} {} {:?} {} {} {} {}",
                r.get::<_, String>(0),
                r.get::<_, String>(1),
                r.get::<_, i32>(2),
                r.get::<_, Option<String>>(3),
                r.get::<_, i64>(4),
                r.get::<_, String>(5),
                r.get::<_, bool>(6),
                r.get::<_, i64>(7)
            )
        })
        .collect();
    let mut bodies: Vec<String> = client
        .query(
            "SELECT encode(hash, 'hex'), size FROM bodies ORDER BY hash",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| format!("body {} {}", r.get::<_, String>(0), r.get::<_, i64>(1)))
        .collect();
    rows.append(&mut bodies);
    rows
}

#[test]
fn an_import_dropped_before_its_commit_leaves_the_database_as_it_was() {
    let db = TestDatabase::new();
    let pg = PgStore::open(db.target.clone()).unwrap();
    let tx = pg.begin_import("/p", false).unwrap();
    tx.put(&doc("notes/a", "A", None, b"# A", 1)).unwrap();
    tx.record(ChangeKind::New, &key_of("notes/a")).unwrap();
    drop(tx);
    let reader = pg.reader().unwrap();
    assert_eq!((reader.count().unwrap(), reader.seq().unwrap()), (0, 0));
    assert_eq!(pg_history(&db.target), Vec::<String>::new());
    // And the project was not recorded: another one may import.
    pg.begin_import("/q", false).unwrap().commit(false).unwrap();
}

#[test]
fn imports_serialize_and_each_commit_notifies_its_sequence() {
    let db = TestDatabase::new();
    let pg = PgStore::open(db.target.clone()).unwrap();
    let mut listener = connect(&db.target).unwrap();
    listener
        .batch_execute(&format!("LISTEN {FEED_CHANNEL}"))
        .unwrap();
    let first = pg.begin_import("/p", false).unwrap();
    first.put(&doc("notes/a", "A", None, b"# A", 1)).unwrap();
    first.record(ChangeKind::New, &key_of("notes/a")).unwrap();
    let (began, second) = std::sync::mpsc::channel();
    let waiting = {
        let pg = pg.clone();
        std::thread::spawn(move || {
            let tx = pg.begin_import("/p", false).unwrap();
            began.send(tx.seq()).unwrap();
            tx.put(&doc("notes/b", "B", None, b"# B", 1)).unwrap();
            tx.record(ChangeKind::New, &key_of("notes/b")).unwrap();
            tx.commit(true).unwrap();
        })
    };
    // The second import waits for the first to end.
    assert!(
        second
            .recv_timeout(std::time::Duration::from_millis(500))
            .is_err()
    );
    assert_eq!(
        listener.notifications().len(),
        0,
        "nothing is announced before a commit"
    );
    first.commit(true).unwrap();
    assert_eq!(second.recv().unwrap(), 2);
    waiting.join().unwrap();
    let mut heard = Vec::new();
    {
        use postgres::fallible_iterator::FallibleIterator;
        let mut notifications = listener.notifications();
        let mut arriving = notifications.timeout_iter(std::time::Duration::from_secs(5));
        while heard.len() < 2
            && let Some(notification) = arriving.next().unwrap()
        {
            heard.push(notification.payload().to_string());
        }
    }
    assert_eq!(heard, ["1", "2"]);
    let batch = pg.reader().unwrap().changes_after(0).unwrap();
    assert_eq!(
        (batch.seq, batch.changes),
        (
            2,
            vec![
                (ChangeKind::New, key_of("notes/a")),
                (ChangeKind::New, key_of("notes/b"))
            ]
        )
    );
}

#[test]
fn a_database_holding_another_project_is_refused_unless_replaced() {
    let db = TestDatabase::new();
    let pg = PgStore::open(db.target.clone()).unwrap();
    pg.begin_import("/p", false).unwrap().commit(false).unwrap();
    let err = pg.begin_import("/q", false).err().expect("refused");
    assert_eq!(
        err.to_string(),
        format!(
            "the database {} holds the project /p, not /q (pass --replace to replace it)",
            db.target
        )
    );
    let tx = pg.begin_import("/q", true).unwrap();
    assert!(tx.replaces());
}

#[test]
fn a_lost_connection_is_unavailable_and_a_bad_query_is_not() {
    let db = TestDatabase::new();
    let mut client = connect(&db.target).unwrap();
    let bad = client
        .batch_execute("SELECT * FROM no_such_table")
        .unwrap_err();
    assert!(!crate::store::is_unavailable(&anyhow::Error::new(bad)));
    let pid: i32 = client
        .query_one("SELECT pg_backend_pid()", &[])
        .unwrap()
        .get(0);
    connect(&db.target)
        .unwrap()
        .execute("SELECT pg_terminate_backend($1)", &[&pid])
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(200));
    let lost = client.batch_execute("SELECT 1").unwrap_err();
    let lost = anyhow::Error::new(lost).context("reading a page");
    assert!(crate::store::is_unavailable(&lost), "{lost:#}");
}

#[test]
fn readers_seeing_areas_answer_as_stores_of_only_their_documents() {
    let mut databases = Vec::new();
    crate::store::seeing_tests::check(&mut || {
        let db = TestDatabase::new();
        let store =
            crate::store::Store::Postgres(Box::new(PgStore::open(db.target.clone()).unwrap()));
        databases.push(db);
        store
    });
}
