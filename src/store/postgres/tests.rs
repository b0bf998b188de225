//! The PostgreSQL store against a real server: the one `pg_virtualenv` starts for `scripts/test.sh` (its `PG*` variables name it), each test in a database of its own.

use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;

/// A database made for one test on the server the `PG*` variables name,
/// dropped with it.
struct TestDatabase {
    target: PgTarget,
    name: String,
}

impl TestDatabase {
    fn new() -> TestDatabase {
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
    assert_eq!(sqlite.len(), crate::store::MIGRATIONS.len());
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
