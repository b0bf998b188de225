//! Reads for people browsing the backlog on PostgreSQL: listings under a prefix or folder, a document's metadata, the nearest ids to a missing one, and the database's statistics, with the answers of the SQLite `Reader`.

use anyhow::{Context, Result};

use super::PgReader;
use super::reader::summary;
use crate::doc::{DocKey, Prefix};
use crate::search::Under;
use crate::store::{DocMeta, DocSummary, PrefixStats, StoreStats, nearest_of, successor};

/// The id range of a listing: every id under `under`, or every key.
fn id_bounds(under: &Under) -> (String, Option<String>) {
    match &under.folder {
        Some(folder) => (folder.clone(), successor(folder)),
        None => (String::new(), None),
    }
}

/// `limit` as a `LIMIT`: SQLite reads `usize::MAX as i64` (-1) as no limit,
/// PostgreSQL refuses a negative one; `i64::MAX` is no limit on both.
pub(super) fn sql_limit(limit: usize) -> i64 {
    i64::try_from(limit).unwrap_or(i64::MAX)
}

impl PgReader {
    /// Up to `limit` documents under `under`, after the id `after` (from the
    /// start when `None`), in id order: a keyset page of the primary key.
    pub fn page_under(
        &self,
        under: &Under,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<DocSummary>> {
        let (low, high) = id_bounds(under);
        // `id > after` when resuming, `id >= low` from the start.
        let (op, from) = match after {
            Some(after) if after >= low.as_str() => (">", after.to_string()),
            _ => (">=", low),
        };
        let (prefix, limit) = (under.prefix.as_str(), sql_limit(limit));
        let columns = "SELECT prefix, id, title, description, size, mtime_ns FROM documents";
        let mut conn = self.conn.borrow_mut();
        // Only a folder has an upper bound (PostgreSQL cannot type a
        // parameter that no clause uses).
        let rows = match &high {
            Some(high) => conn.query(
                &format!(
                    "{columns} WHERE prefix = $1 AND id {op} $2 AND id < $3 ORDER BY id LIMIT $4"
                ),
                &[&prefix, &from, high, &limit],
            )?,
            None => conn.query(
                &format!("{columns} WHERE prefix = $1 AND id {op} $2 ORDER BY id LIMIT $3"),
                &[&prefix, &from, &limit],
            )?,
        };
        rows.iter().map(summary).collect()
    }

    /// The number of documents under `under`: a count over the key range.
    pub fn count_under(&self, under: &Under) -> Result<u64> {
        let (low, high) = id_bounds(under);
        let mut conn = self.conn.borrow_mut();
        let row = match high {
            Some(high) => conn.query_one(
                "SELECT count(*) FROM documents WHERE prefix = $1 AND id >= $2 AND id < $3",
                &[&under.prefix.as_str(), &low, &high],
            )?,
            None => conn.query_one(
                "SELECT count(*) FROM documents WHERE prefix = $1 AND id >= $2",
                &[&under.prefix.as_str(), &low],
            )?,
        };
        Ok(row.get::<_, i64>(0) as u64)
    }

    /// Everything stored about `key` but its bytes; `None` when absent.
    pub fn meta(&self, key: &DocKey) -> Result<Option<DocMeta>> {
        let row = self.conn.borrow_mut().query_opt(
            "SELECT d.title, d.description, d.frontmatter, d.size, d.hash, d.mtime_ns, d.is_text,
                    d.seq, i.committed_ms
             FROM documents d LEFT JOIN imports i ON i.seq = d.seq
             WHERE d.prefix = $1 AND d.id = $2",
            &[&key.prefix.as_str(), &key.id],
        )?;
        Ok(row.map(|row| {
            let hash: Vec<u8> = row.get(4);
            DocMeta {
                key: key.clone(),
                title: row.get(0),
                description: row.get(1),
                frontmatter: row.get(2),
                size: row.get::<_, i64>(3) as u64,
                // As SQLite: a hash of another length (never written) reads as zeros.
                hash: hash.try_into().unwrap_or([0; 32]),
                mtime_ns: row.get(5),
                is_text: row.get(6),
                seq: row.get(7),
                changed_ms: row.get(8),
            }
        }))
    }

    /// Up to `limit` ids of `key`'s prefix nearest to it in key order: half
    /// before, half after (more of one side when the other runs out).
    pub fn nearest(&self, key: &DocKey, limit: usize) -> Result<Vec<DocKey>> {
        let side = |sql: &str| -> Result<Vec<String>> {
            let rows = self
                .conn
                .borrow_mut()
                .query(sql, &[&key.prefix.as_str(), &key.id, &sql_limit(limit)])?;
            Ok(rows.iter().map(|row| row.get(0)).collect())
        };
        let before = side(
            "SELECT id FROM documents WHERE prefix = $1 AND id < $2 ORDER BY id DESC LIMIT $3",
        )?;
        let after =
            side("SELECT id FROM documents WHERE prefix = $1 AND id > $2 ORDER BY id LIMIT $3")?;
        Ok(nearest_of(key, before, after, limit))
    }

    /// As SQLite's `Reader::ids_before`.
    pub fn ids_before(&self, under: &Under, before: &str, limit: usize) -> Result<Vec<String>> {
        let (low, high) = id_bounds(under);
        let rows = self.conn.borrow_mut().query(
            "SELECT id FROM documents WHERE prefix = $1 AND id < $2 AND id >= $3
             AND ($4::text IS NULL OR id < $4) ORDER BY id DESC LIMIT $5",
            &[
                &under.prefix.as_str(),
                &before,
                &low,
                &high,
                &sql_limit(limit),
            ],
        )?;
        Ok(rows.iter().map(|row| row.get(0)).collect())
    }

    /// Documents and bytes per prefix, the database's size and the index's
    /// share, and the last import, read in one snapshot; of the whole
    /// store, whatever areas its caller sees. On PostgreSQL:
    ///
    /// - `database_bytes` is `pg_database_size(current_database())`: every
    ///   relation of the database on disk (tables, TOAST, indexes, catalogs),
    ///   where SQLite counts the pages of its one file;
    /// - `index_bytes` is the size on disk of the two GIN indexes,
    ///   `documents_search` (the search vectors) and `documents_fields` (the
    ///   `where` terms), where SQLite counts its FTS5 tables; the vectors
    ///   and terms themselves are columns of `documents`, not counted;
    /// - `schema_version` is the version recorded in `orchestra_schema`,
    ///   where SQLite gives the migrations it knows (the same number on a
    ///   database this orchestra opened: a newer one is refused).
    ///
    /// The rest has SQLite's meaning and value.
    pub fn stats(&self) -> Result<StoreStats> {
        self.in_transaction(|| self.stats_in_transaction())
    }

    fn stats_in_transaction(&self) -> Result<StoreStats> {
        let mut prefixes: Vec<PrefixStats> = Prefix::ALL
            .iter()
            .map(|&prefix| PrefixStats {
                prefix,
                documents: 0,
                bytes: 0,
            })
            .collect();
        let mut conn = self.conn.borrow_mut();
        // `sum` of a bigint is a numeric: back to bigint.
        let rows = conn.query(
            "SELECT prefix, count(*), coalesce(sum(size), 0)::bigint FROM documents GROUP BY prefix",
            &[],
        )?;
        for row in rows {
            let prefix: &str = row.get(0);
            if let Some(entry) = prefixes.iter_mut().find(|p| p.prefix.as_str() == prefix) {
                entry.documents = row.get::<_, i64>(1) as u64;
                entry.bytes = row.get::<_, i64>(2) as u64;
            }
        }
        let sizes = conn
            .query_one(
                "SELECT pg_database_size(current_database()),
                        pg_relation_size('documents_search'::regclass)
                            + pg_relation_size('documents_fields'::regclass)",
                &[],
            )
            .context("cannot read the database's size")?;
        let (database_bytes, index_bytes): (i64, i64) = (sizes.get(0), sizes.get(1));
        let (project_root, last_seq): (Option<String>, i64) = conn
            .query_opt("SELECT root, seq FROM project", &[])?
            .map_or((None, 0), |row| (Some(row.get(0)), row.get(1)));
        let last_import_ms: Option<i64> = conn
            .query_opt(
                "SELECT committed_ms FROM imports WHERE seq = $1",
                &[&last_seq],
            )?
            .map(|row| row.get(0));
        let schema_version = super::schema_version(&mut conn)?;
        Ok(StoreStats {
            prefixes,
            database_bytes: database_bytes as u64,
            index_bytes: index_bytes as u64,
            project_root,
            schema_version,
            last_seq,
            last_import_ms,
        })
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::super::tests::{BothStores, Step, doc, key_of};
    use super::*;

    /// The time every test pins import `seq`'s commit at on both backends
    /// (each backend stamps its own clock): a day apart from 2023-11-14 on.
    pub(in crate::store::postgres) fn committed_ms(seq: i64) -> i64 {
        1_700_000_000_000 + seq * 86_400_000
    }

    /// Gives both backends the same commit times ([`committed_ms`]), and
    /// forgets import `forget`'s as a database made before `imports` would.
    pub(in crate::store::postgres) fn pin_times(both: &BothStores, forget: i64) {
        let (base, day) = (committed_ms(0), committed_ms(1) - committed_ms(0));
        let lite = rusqlite::Connection::open(&both.sqlite_path).unwrap();
        lite.execute(
            "UPDATE imports SET committed_ms = ?1 + seq * ?2",
            [base, day],
        )
        .unwrap();
        lite.execute("DELETE FROM imports WHERE seq = ?1", [forget])
            .unwrap();
        let mut pg = super::super::connect(&both.db.target).unwrap();
        pg.execute(
            "UPDATE imports SET committed_ms = $1 + seq * $2",
            &[&base, &day],
        )
        .unwrap();
        pg.execute("DELETE FROM imports WHERE seq = $1", &[&forget])
            .unwrap();
    }

    /// Six imports with a history: a load in folders and at the top of
    /// every prefix, then changes, removals, reverts to an earlier body, a
    /// removed document added back (once with its old bytes), unchanged
    /// bytes under a new mtime, and an import that changes nothing.
    pub(in crate::store::postgres) fn history_imports() -> Vec<Vec<Step>> {
        let big = "x".repeat(5000);
        vec![
            vec![
                Step::Put(doc("docs/adr/0001", "ADR 1", None, b"# ADR 1", 1)),
                Step::Put(doc("docs/adr/0002", "ADR 2", None, b"# ADR 2", 1)),
                Step::Put(doc("docs/adr/x/1", "X 1", None, b"# X 1", 1)),
                Step::Put(doc("docs/adr0", "Adr0", None, b"# Adr0", 1)),
                Step::Put(doc("docs/guide", "Guide", None, b"# Guide", 1)),
                Step::Put(doc("docs/zeta", "Zeta", None, b"# Zeta", 1)),
                Step::Put(doc(
                    "features/FEAT-001",
                    "Offline",
                    Some(r#"{"status":"open"}"#),
                    b"---\nstatus: open\n---\n# Offline\n",
                    1,
                )),
                Step::Put(doc("features/FEAT-002", "Photos", None, b"# Photos\n", 1)),
                Step::Put(doc("features/FEAT-004", "Four", None, b"# Four", 1)),
                Step::Put(doc("features/FEAT-005", "Five", None, b"# Five", 1)),
                Step::Put(doc("features/FEAT-010", "Board", None, big.as_bytes(), 1)),
                Step::Put(doc("notes/a", "A one", None, b"# A one", 1)),
                Step::Put(doc("notes/B", "Upper", None, b"# B", 1)),
                Step::Put(doc("notes/blob", "blob", None, b"\xff\xfe\x00 binary", 1)),
                Step::Put(doc(
                    "notes/caf\u{e9} notes",
                    "Caf\u{e9}",
                    None,
                    "# Caf\u{e9}".as_bytes(),
                    1,
                )),
            ],
            vec![
                Step::Put(doc(
                    "features/FEAT-001",
                    "Offline v2",
                    Some(r#"{"status":"done"}"#),
                    b"---\nstatus: done\n---\n# Offline v2\n",
                    2,
                )),
                Step::Put(doc("notes/a", "A two", None, b"# A two", 2)),
                Step::Put(doc("notes/blob", "blob", None, b"\xff\xfe\x00 binary 2", 2)),
                Step::Remove("docs/adr/0002"),
                Step::Touch("docs/guide", 2),
            ],
            vec![
                // Back to version 1's bytes.
                Step::Put(doc(
                    "features/FEAT-001",
                    "Offline",
                    Some(r#"{"status":"open"}"#),
                    b"---\nstatus: open\n---\n# Offline\n",
                    3,
                )),
                Step::Put(doc("notes/a", "A three", None, b"# A three", 3)),
                Step::Put(doc("docs/adr/0002", "ADR 2", None, b"# ADR 2, again", 3)),
                Step::Remove("features/FEAT-004"),
            ],
            vec![
                // Back with the bytes it had before its removal.
                Step::Put(doc("features/FEAT-004", "Four", None, b"# Four", 4)),
                Step::Put(doc(
                    "features/FEAT-001",
                    "Offline v4",
                    None,
                    b"# Offline v4",
                    4,
                )),
                Step::Put(doc("notes/a", "A four", None, b"# A four", 4)),
                Step::Remove("notes/B"),
            ],
            vec![
                Step::Put(doc("notes/a", "A two", None, b"# A two", 5)),
                Step::Put(doc(
                    "features/FEAT-001",
                    "Offline v5",
                    None,
                    b"# Offline v5",
                    5,
                )),
                Step::Remove("docs/adr/0002"),
                // The same bytes, a new mtime: no new version.
                Step::Put(doc("features/FEAT-002", "Photos", None, b"# Photos\n", 5)),
            ],
            vec![],
        ]
    }

    /// Every key the imports ever wrote, and keys they never did.
    pub(in crate::store::postgres) fn keys() -> Vec<DocKey> {
        [
            "docs/adr/0001",
            "docs/adr/0002",
            "docs/adr/x/1",
            "docs/adr0",
            "docs/guide",
            "docs/zeta",
            "features/FEAT-001",
            "features/FEAT-002",
            "features/FEAT-004",
            "features/FEAT-005",
            "features/FEAT-010",
            "notes/a",
            "notes/B",
            "notes/blob",
            "notes/caf\u{e9} notes",
            // Never written.
            "docs/",
            "docs/adr",
            "docs/adr/",
            "docs/adr/0003",
            "docs/a",
            "features/A",
            "features/FEAT-003",
            "features/FEAT-999",
            "notes/b",
            "notes/zzz",
        ]
        .into_iter()
        .map(key_of)
        .collect()
    }

    /// Asserts that `$call` gives the same value on both readers, with
    /// `$r` the reader.
    macro_rules! same {
        ($lite:expr, $pg:expr, |$r:ident| $call:expr, $($what:tt)+) => {{
            let expected = {
                let $r = &$lite;
                $call
            };
            let got = {
                let $r = &$pg;
                $call
            };
            assert_eq!(expected, got, $($what)+);
            expected
        }};
    }

    const UNDERS: [&str; 8] = [
        "docs",
        "docs/adr",
        "docs/adr/x",
        "docs/adr0",
        "docs/nope",
        "features",
        "notes",
        "notes/a",
    ];

    const LIMITS: [usize; 7] = [0, 1, 2, 3, 4, 100, usize::MAX];

    /// Every browse read, on both backends, for many inputs.
    fn assert_same_browsing(both: &BothStores, when: &str) {
        let (lite, pg) = (both.sqlite.reader().unwrap(), both.pg.reader().unwrap());
        let afters = [
            None,
            Some(""),
            Some("a"),
            Some("adr"),
            Some("adr/"),
            Some("adr/0001"),
            Some("adr/0002"),
            Some("adr/x/1"),
            Some("adr0"),
            Some("guide"),
            Some("FEAT-002"),
            Some("FEAT-003"),
            Some("caf\u{e9} notes"),
            Some("zzz"),
            Some("\u{10FFFF}"),
        ];
        for text in UNDERS {
            let under = Under::parse(text).unwrap();
            same!(
                lite,
                pg,
                |r| r.count_under(&under).unwrap(),
                "{when}: count_under {text}"
            );
            for after in afters {
                for limit in LIMITS {
                    same!(
                        lite,
                        pg,
                        |r| r.page_under(&under, after, limit).unwrap(),
                        "{when}: page_under {text} after {after:?} limit {limit}"
                    );
                }
            }
            // A walk by pages of 2 resumes where each page ended.
            let mut after: Option<String> = None;
            let mut walked = Vec::new();
            loop {
                let page = same!(
                    lite,
                    pg,
                    |r| r.page_under(&under, after.as_deref(), 2).unwrap(),
                    "{when}: walk {text} after {after:?}"
                );
                let Some(last) = page.last() else { break };
                after = Some(last.key.id.clone());
                walked.extend(page);
            }
            assert_eq!(walked, pg.page_under(&under, None, usize::MAX).unwrap());
        }
        for key in keys() {
            same!(lite, pg, |r| r.meta(&key).unwrap(), "{when}: meta {key}");
            for limit in LIMITS {
                same!(
                    lite,
                    pg,
                    |r| r.nearest(&key, limit).unwrap(),
                    "{when}: nearest {key} limit {limit}"
                );
            }
        }
        assert_same_stats(&lite.stats().unwrap(), &pg.stats().unwrap(), when);
    }

    /// Stats alike on both backends but for the sizes, which are each
    /// backend's own (and only sane on PostgreSQL).
    fn assert_same_stats(lite: &StoreStats, pg: &StoreStats, when: &str) {
        let backend_free = |s: &StoreStats| StoreStats {
            database_bytes: 0,
            index_bytes: 0,
            ..s.clone()
        };
        assert_eq!(backend_free(lite), backend_free(pg), "{when}: stats");
        assert!(
            pg.index_bytes > 0 && pg.index_bytes < pg.database_bytes,
            "{when}: {pg:?}"
        );
    }

    #[test]
    fn browsing_gives_the_answers_of_sqlite_after_every_import() {
        let both = BothStores::new();
        assert_same_browsing(&both, "before any import");
        for (n, steps) in history_imports().iter().enumerate() {
            both.import(steps);
            pin_times(&both, 2);
            assert_same_browsing(&both, &format!("after import {}", n + 1));
        }
        // The shared example's documents too (NUL in a body, `_`, upper case).
        for steps in super::super::tests::imports() {
            both.import(&steps);
        }
        pin_times(&both, 2);
        assert_same_browsing(&both, "after the shared imports");
    }

    #[test]
    fn stats_say_what_postgres_holds() {
        let both = BothStores::new();
        let pg = both.pg.reader().unwrap();
        let empty = pg.stats().unwrap();
        assert_eq!(
            (empty.project_root, empty.last_seq, empty.last_import_ms),
            (None, 0, None)
        );
        assert_eq!(empty.schema_version, super::super::MIGRATIONS.len());
        assert_eq!(
            empty.schema_version,
            both.sqlite
                .reader()
                .unwrap()
                .stats()
                .unwrap()
                .schema_version
        );
        for steps in history_imports() {
            both.import(&steps);
        }
        pin_times(&both, 2);
        let stats = pg.stats().unwrap();
        let counts: Vec<(&str, u64, u64)> = stats
            .prefixes
            .iter()
            .map(|p| (p.prefix.as_str(), p.documents, p.bytes))
            .collect();
        assert_eq!(
            counts,
            [("docs", 5, 31), ("features", 5, 5033), ("notes", 3, 26)]
        );
        // The empty sixth import consumed no number.
        assert_eq!(
            (
                stats.project_root.as_deref(),
                stats.last_seq,
                stats.last_import_ms
            ),
            (Some("/p"), 5, Some(committed_ms(5)))
        );
        // Whole pages of the two GIN indexes (a metapage and a root at least).
        assert_eq!(stats.index_bytes % 8192, 0);
        assert!(stats.index_bytes >= 4 * 8192, "{stats:?}");
        assert!(stats.database_bytes > empty.database_bytes.max(stats.index_bytes));
    }
}
