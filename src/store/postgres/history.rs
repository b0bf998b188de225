//! Document history on PostgreSQL: a document's versions, reading a version's bytes back, version completion and counts, and `prune`, with the answers of the SQLite store.
//!
//! `PgImportTx` writes the history as SQLite's `ImportTx` does: a row in
//! `versions` per version, the current one included (a removal has no
//! hash); the current bytes in `documents.body`; past bytes once per
//! distinct body, zstd-compressed, in `bodies`.

use anyhow::{Context, Result, bail};
use postgres::Row;

use super::browse::sql_limit;
use super::import_tx::IMPORT_LOCK;
use super::{PgReader, PgStore};
use crate::doc::DocKey;
use crate::store::bodies::decompress;
use crate::store::{HistoryStats, PruneReport, PruneRules, Version, VersionBody, VersionBytes};

/// The columns [`version_from_row`] reads, of `versions v` left-joined
/// with `imports i`.
const VERSION_COLUMNS: &str =
    "v.version, v.hash, v.size, v.title, v.is_text, v.seq, i.committed_ms,
     v.version = (SELECT max(version) FROM versions m WHERE m.prefix = v.prefix AND m.id = v.id)
     AND EXISTS (SELECT 1 FROM documents d WHERE d.prefix = v.prefix AND d.id = v.id)";

fn version_from_row(key: &DocKey, row: &Row) -> Version {
    let hash: Option<Vec<u8>> = row.get(1);
    Version {
        key: key.clone(),
        number: row.get::<_, i32>(0) as u32,
        // As SQLite: a hash of another length (never written) reads as zeros.
        hash: hash.map(|h| h.try_into().unwrap_or([0; 32])),
        size: row.get::<_, i64>(2) as u64,
        title: row.get(3),
        is_text: row.get(4),
        seq: row.get(5),
        committed_ms: row.get(6),
        current: row.get(7),
        moved: None,
    }
}

impl PgReader {
    /// Up to `limit` versions of `key`, newest first, those below `before`
    /// when given (a keyset page). Empty when the key never existed.
    pub fn history(&self, key: &DocKey, before: Option<u32>, limit: usize) -> Result<Vec<Version>> {
        // A `u32` may pass `integer`: compared as a bigint.
        let before = before.map_or(i64::MAX, i64::from);
        let sql = format!(
            "SELECT {VERSION_COLUMNS} FROM versions v LEFT JOIN imports i ON i.seq = v.seq
             WHERE v.prefix = $1 AND v.id = $2 AND v.version < $3::bigint
             ORDER BY v.version DESC LIMIT $4"
        );
        let rows = self.conn.borrow_mut().query(
            &sql,
            &[&key.prefix.as_str(), &key.id, &before, &sql_limit(limit)],
        )?;
        let mut versions: Vec<Version> =
            rows.iter().map(|row| version_from_row(key, row)).collect();
        super::moves::attach(&mut self.conn.borrow_mut(), key, &mut versions)?;
        Ok(versions)
    }

    /// Version `number` of `key` and its bytes; `None` when there is no such
    /// version or it is a removal (nothing to read).
    /// Version `number`'s bytes: [`PgReader::version`]'s, which finds them
    /// by key and hash as directly as they can be found here.
    pub fn version_bytes(&self, key: &DocKey, number: u32) -> Result<Option<VersionBytes>> {
        Ok(self.version(key, number)?.map(VersionBytes::from))
    }

    pub fn version(&self, key: &DocKey, number: u32) -> Result<Option<VersionBody>> {
        self.in_transaction(|| {
            let mut conn = self.conn.borrow_mut();
            let (prefix, id) = (key.prefix.as_str(), &key.id);
            let sql = format!(
                "SELECT {VERSION_COLUMNS} FROM versions v LEFT JOIN imports i ON i.seq = v.seq
                 WHERE v.prefix = $1 AND v.id = $2 AND v.version = $3::bigint"
            );
            let row = conn.query_opt(&sql, &[&prefix, id, &i64::from(number)])?;
            let Some(version) = row.map(|row| version_from_row(key, &row)) else {
                return Ok(None);
            };
            let Some(hash) = version.hash else {
                return Ok(None);
            };
            // The current bytes stay in `documents`; past ones are in `bodies`.
            let current: Option<Vec<u8>> = conn
                .query_opt(
                    "SELECT body FROM documents WHERE prefix = $1 AND id = $2 AND hash = $3",
                    &[&prefix, id, &&hash[..]],
                )?
                .map(|row| row.get(0));
            let body = match current {
                Some(body) => body,
                None => {
                    let stored = conn
                        .query_opt(
                            "SELECT size, zstd FROM bodies WHERE hash = $1",
                            &[&&hash[..]],
                        )?
                        .map(|row| (row.get::<_, i64>(0), row.get::<_, Vec<u8>>(1)));
                    let Some((size, compressed)) = stored else {
                        bail!("the history of {key} lacks the bytes of version {number}");
                    };
                    decompress(&compressed, size as usize)
                        .with_context(|| format!("cannot read version {number} of {key}"))?
                }
            };
            Ok(Some(VersionBody { version, body }))
        })
    }

    /// The version numbers of `key` whose decimal form begins with `typed`,
    /// newest first, at most `limit`, and how many there are in all.
    pub fn complete_versions(
        &self,
        key: &DocKey,
        typed: &str,
        limit: usize,
    ) -> Result<(Vec<u32>, u64)> {
        // Only digits can begin a version number (and none is a LIKE wildcard).
        if !typed.bytes().all(|b| b.is_ascii_digit()) {
            return Ok((Vec::new(), 0));
        }
        let rows = self.conn.borrow_mut().query(
            "SELECT version FROM versions WHERE prefix = $1 AND id = $2 AND hash IS NOT NULL
             AND version::text LIKE $3 || '%'
             ORDER BY version DESC",
            &[&key.prefix.as_str(), &key.id, &typed],
        )?;
        let total = rows.len() as u64;
        let numbers = rows
            .iter()
            .take(limit)
            .map(|row| row.get::<_, i32>(0) as u32)
            .collect();
        Ok((numbers, total))
    }

    /// How many versions of `key` there are, removals included (0 when the
    /// key never existed): the length of its whole history.
    pub fn count_versions(&self, key: &DocKey) -> Result<u64> {
        let n: i64 = self
            .conn
            .borrow_mut()
            .query_one(
                "SELECT count(*) FROM versions WHERE prefix = $1 AND id = $2",
                &[&key.prefix.as_str(), &key.id],
            )?
            .get(0);
        Ok(n as u64)
    }

    /// How many versions and stored bodies the history holds, and their size.
    pub fn history_stats(&self) -> Result<HistoryStats> {
        self.in_transaction(|| {
            let mut conn = self.conn.borrow_mut();
            let row = conn.query_one(
                "SELECT count(*), (SELECT count(*) FROM (SELECT 1 FROM versions
                                          GROUP BY prefix, id HAVING count(*) > 1) AS h)
                 FROM versions",
                &[],
            )?;
            let (versions, documents_with_history): (i64, i64) = (row.get(0), row.get(1));
            // `sum` of a bigint is a numeric: back to bigint.
            let row = conn.query_one(
                "SELECT count(*), coalesce(sum(octet_length(zstd)), 0)::bigint,
                        coalesce(sum(size), 0)::bigint
                 FROM bodies",
                &[],
            )?;
            let (bodies, stored, raw): (i64, i64, i64) = (row.get(0), row.get(1), row.get(2));
            Ok(HistoryStats {
                versions: versions as u64,
                documents_with_history: documents_with_history as u64,
                bodies: bodies as u64,
                stored_bytes: stored as u64,
                raw_bytes: raw as u64,
            })
        })
    }
}

impl PgStore {
    /// Removes the past versions `rules` let go, and the stored bodies no
    /// version needs any more, in one transaction; with `dry_run`, only
    /// says what it would remove. Waits for a running import, and an
    /// import waits for it (the imports' advisory lock).
    pub fn prune(&self, rules: &PruneRules, dry_run: bool) -> Result<PruneReport> {
        if rules.keep.is_none() && rules.keep_since_ms.is_none() {
            bail!("prune needs a rule: --keep N, --older-than DURATION, or both");
        }
        let mut conn = self.connection()?;
        // Dropped before its commit (an error, a dry run), it rolls back.
        let mut tx = conn
            .transaction()
            .with_context(|| format!("cannot write to the database {}", self.target))?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&IMPORT_LOCK])?;
        let report = prune_in_transaction(&mut tx, rules)?;
        if dry_run {
            tx.rollback()?;
        } else {
            tx.commit().context("cannot commit the prune")?;
        }
        Ok(report)
    }
}

fn prune_in_transaction(
    tx: &mut postgres::Transaction<'_>,
    rules: &PruneRules,
) -> Result<PruneReport> {
    // A version goes when every rule lets it go, and never the newest of a
    // key: the current version, or a removed document's removal, which
    // keeps its numbers from being given again if it comes back. The
    // subqueries see the table as the statement began: a rule counts the
    // newer versions there were, not those left.
    let mut conditions = vec![
        "v.version < (SELECT max(version) FROM versions m WHERE m.prefix = v.prefix AND m.id = v.id)"
            .to_string(),
    ];
    let keep = rules.keep.map(i64::from);
    let mut args: Vec<&(dyn postgres::types::ToSql + Sync)> = Vec::new();
    if let Some(keep) = &keep {
        args.push(keep);
        conditions.push(format!(
            "(SELECT count(*) FROM versions n WHERE n.prefix = v.prefix AND n.id = v.id
              AND n.version > v.version) >= ${}",
            args.len()
        ));
    }
    if let Some(since) = &rules.keep_since_ms {
        args.push(since);
        conditions.push(format!(
            "coalesce((SELECT committed_ms FROM imports i WHERE i.seq = v.seq), 0) < ${}",
            args.len()
        ));
    }
    let versions = tx.execute(
        &format!("DELETE FROM versions v WHERE {}", conditions.join(" AND ")),
        &args,
    )?;
    // Bodies that no remaining version needs: needed are the hashes of the
    // past versions, even those whose bytes are their document's current
    // ones again (a revert), as on SQLite, where the version after each
    // names its body (SQLite's migration 0012).
    let row = tx.query_one(
        "WITH gone AS (
             DELETE FROM bodies b WHERE NOT EXISTS (
                 SELECT 1 FROM versions v WHERE v.hash = b.hash AND v.version < (
                     SELECT max(version) FROM versions m
                     WHERE m.prefix = v.prefix AND m.id = v.id))
             RETURNING octet_length(b.zstd) AS stored)
         SELECT count(*), coalesce(sum(stored), 0)::bigint FROM gone",
        &[],
    )?;
    let (bodies, stored): (i64, i64) = (row.get(0), row.get(1));
    Ok(PruneReport {
        versions,
        bodies: bodies as u64,
        stored_bytes: stored as u64,
    })
}

#[cfg(test)]
mod tests {
    use super::super::browse::tests::{committed_ms, history_imports, keys, pin_times};
    use super::super::tests::{BothStores, TestDatabase, doc, key_of};
    use super::*;
    use crate::doc::ChangeKind;

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

    /// The whole history, alike on both backends: every key's versions,
    /// each version's bytes, the counts, the stats. Returns PostgreSQL's, as
    /// text, to compare with a later one.
    fn assert_same_whole_history(both: &BothStores, when: &str) -> Vec<String> {
        let (lite, pg) = (both.sqlite.reader().unwrap(), both.pg.reader().unwrap());
        let mut whole = Vec::new();
        for key in keys() {
            let versions = same!(
                lite,
                pg,
                |r| r.history(&key, None, usize::MAX).unwrap(),
                "{when}: history {key}"
            );
            let count = same!(
                lite,
                pg,
                |r| r.count_versions(&key).unwrap(),
                "{when}: count_versions {key}"
            );
            assert_eq!(versions.len() as u64, count, "{when}: {key}");
            // One past the newest, and none.
            for number in 0..=versions.first().map_or(0, |v| v.number) + 1 {
                let read = same!(
                    lite,
                    pg,
                    |r| r.version(&key, number).unwrap(),
                    "{when}: version {number} of {key}"
                );
                whole.push(format!("{key} {number}: {read:?}"));
            }
            whole.push(format!("{key}: {versions:?}"));
        }
        let stats = same!(
            lite,
            pg,
            |r| r.history_stats().unwrap(),
            "{when}: history_stats"
        );
        whole.push(format!("{stats:?}"));
        whole
    }

    /// Every history read, on both backends, for many inputs: pages before
    /// many versions with many limits, numbers past the newest and past
    /// `integer`, completions of many prefixes.
    fn assert_same_history(both: &BothStores, when: &str) {
        assert_same_whole_history(both, when);
        let (lite, pg) = (both.sqlite.reader().unwrap(), both.pg.reader().unwrap());
        let befores = [
            None,
            Some(0),
            Some(1),
            Some(2),
            Some(3),
            Some(5),
            Some(7),
            Some(i32::MAX as u32 + 1),
            Some(u32::MAX),
        ];
        let typed = ["", "1", "2", "5", "10", "01", "x", "1x", "%", "_", "-1"];
        for key in keys() {
            for before in befores {
                for limit in [0, 1, 2, usize::MAX] {
                    same!(
                        lite,
                        pg,
                        |r| r.history(&key, before, limit).unwrap(),
                        "{when}: history {key} before {before:?} limit {limit}"
                    );
                }
            }
            for number in [100, i32::MAX as u32, i32::MAX as u32 + 1, u32::MAX] {
                same!(
                    lite,
                    pg,
                    |r| r.version(&key, number).unwrap(),
                    "{when}: version {number} of {key}"
                );
            }
            for typed in typed {
                for limit in [0, 1, 10] {
                    same!(
                        lite,
                        pg,
                        |r| r.complete_versions(&key, typed, limit).unwrap(),
                        "{when}: complete_versions {key} {typed:?} limit {limit}"
                    );
                }
            }
        }
    }

    #[test]
    fn history_gives_the_answers_of_sqlite_after_every_import() {
        let both = BothStores::new();
        assert_same_history(&both, "before any import");
        for (n, steps) in history_imports().iter().enumerate() {
            both.import(steps);
            pin_times(&both, 2);
            assert_same_history(&both, &format!("after import {}", n + 1));
        }
        // What the imports made, as a check on the comparison itself: a
        // revert and a document back with old bytes share a body.
        let pg = both.pg.reader().unwrap();
        let a = key_of("notes/a");
        let numbers: Vec<(u32, bool, Option<i64>)> = pg
            .history(&a, None, 10)
            .unwrap()
            .iter()
            .map(|v| (v.number, v.current, v.committed_ms))
            .collect();
        assert_eq!(
            numbers,
            [
                (5, true, Some(committed_ms(5))),
                (4, false, Some(committed_ms(4))),
                (3, false, Some(committed_ms(3))),
                (2, false, None),
                (1, false, Some(committed_ms(1))),
            ]
        );
        assert_eq!(pg.version(&a, 2).unwrap().unwrap().body, b"# A two");
        assert_eq!(pg.version(&a, 5).unwrap().unwrap().body, b"# A two");
        let removed = key_of("docs/adr/0002");
        let numbers: Vec<(u32, bool)> = pg
            .history(&removed, None, 10)
            .unwrap()
            .iter()
            .map(|v| (v.number, v.removed()))
            .collect();
        assert_eq!(numbers, [(4, true), (3, false), (2, true), (1, false)]);
        assert_eq!(
            pg.complete_versions(&removed, "", 10).unwrap(),
            (vec![3, 1], 2)
        );
        assert!(pg.version(&removed, 4).unwrap().is_none());
    }

    #[test]
    fn prune_removes_what_sqlite_removes() {
        let both = BothStores::new();
        for steps in history_imports() {
            both.import(&steps);
        }
        pin_times(&both, 2);
        let (lite, pg) = (&both.sqlite, &both.pg);
        let none = PruneRules::default();
        let (lite_err, pg_err) = (
            lite.prune(&none, true).unwrap_err(),
            pg.prune(&none, false).unwrap_err(),
        );
        assert_eq!(format!("{lite_err:#}"), format!("{pg_err:#}"));
        let rules = [
            PruneRules {
                keep: Some(3),
                keep_since_ms: None,
            },
            // Imports 1 and 2 (whose time is unknown: older than any).
            PruneRules {
                keep: None,
                keep_since_ms: Some(committed_ms(3)),
            },
            // Both rules must let a version go.
            PruneRules {
                keep: Some(2),
                keep_since_ms: Some(committed_ms(4)),
            },
            // Nothing is older than 0.
            PruneRules {
                keep: None,
                keep_since_ms: Some(0),
            },
            PruneRules {
                keep: Some(1),
                keep_since_ms: Some(i64::MAX),
            },
            PruneRules {
                keep: Some(0),
                keep_since_ms: None,
            },
        ];
        let mut before = assert_same_whole_history(&both, "before pruning");
        let mut removed = Vec::new();
        for rules in rules {
            let when = format!("{rules:?}");
            let dry = same!(lite, pg, |s| s.prune(&rules, true).unwrap(), "{when} dry");
            assert_eq!(
                assert_same_whole_history(&both, &format!("{when} dry")),
                before,
                "{when}: a dry run writes nothing"
            );
            let done = same!(lite, pg, |s| s.prune(&rules, false).unwrap(), "{when}");
            assert_eq!(done, dry, "{when}");
            removed.push(done.versions);
            let after = assert_same_whole_history(&both, &format!("after {when}"));
            assert_eq!(after == before, done == PruneReport::default(), "{when}");
            before = after;
        }
        assert_eq!(removed, [5, 4, 2, 0, 4, 0]);
        let stats = both.pg.reader().unwrap().history_stats().unwrap();
        assert_eq!((stats.bodies, stats.documents_with_history), (0, 0));
        // Documents come back and change after a prune: their numbers go on.
        both.import(&[
            super::super::tests::Step::Put(doc("docs/adr/0002", "ADR 2", None, b"# ADR 2", 7)),
            super::super::tests::Step::Put(doc("notes/a", "A six", None, b"# A six", 7)),
        ]);
        pin_times(&both, 2);
        assert_same_history(&both, "after an import after pruning");
        let numbers: Vec<u32> = both
            .pg
            .reader()
            .unwrap()
            .history(&key_of("docs/adr/0002"), None, 10)
            .unwrap()
            .iter()
            .map(|v| v.number)
            .collect();
        assert_eq!(numbers, [5, 4]);
    }

    #[test]
    fn prune_waits_for_a_running_import_and_sees_its_commit() {
        let db = TestDatabase::new();
        let pg = PgStore::open(db.target.clone()).unwrap();
        let key = key_of("notes/a");
        for body in [&b"# One"[..], b"# Two"] {
            let tx = pg.begin_import("/p", false).unwrap();
            tx.put(&doc("notes/a", "A", None, body, 1)).unwrap();
            tx.record(ChangeKind::Updated, &key).unwrap();
            tx.commit(true).unwrap();
        }
        let running = pg.begin_import("/p", false).unwrap();
        running
            .put(&doc("notes/a", "A", None, b"# Three", 1))
            .unwrap();
        let (done, report) = std::sync::mpsc::channel();
        let pruning = {
            let pg = pg.clone();
            std::thread::spawn(move || {
                let keep1 = PruneRules {
                    keep: Some(1),
                    keep_since_ms: None,
                };
                done.send(pg.prune(&keep1, false).unwrap()).unwrap();
            })
        };
        assert!(
            report
                .recv_timeout(std::time::Duration::from_millis(500))
                .is_err(),
            "prune waits for the import"
        );
        running.commit(true).unwrap();
        // Versions 1 and 2 go, with the bytes of both.
        let pruned = report.recv().unwrap();
        pruning.join().unwrap();
        assert_eq!((pruned.versions, pruned.bodies), (2, 2));
        let reader = pg.reader().unwrap();
        let left: Vec<u32> = reader
            .history(&key, None, 10)
            .unwrap()
            .iter()
            .map(|v| v.number)
            .collect();
        assert_eq!(left, [3]);
        assert_eq!(reader.version(&key, 3).unwrap().unwrap().body, b"# Three");
    }

    #[test]
    fn reads_in_a_transaction_see_one_commit() {
        let db = TestDatabase::new();
        let pg = PgStore::open(db.target.clone()).unwrap();
        let key = key_of("notes/a");
        let import = |body: &[u8]| {
            let tx = pg.begin_import("/p", false).unwrap();
            tx.put(&doc("notes/a", "A", None, body, 1)).unwrap();
            tx.commit(true).unwrap();
        };
        import(b"# One");
        let r = pg.reader().unwrap();
        r.in_transaction(|| {
            assert_eq!(r.version(&key, 1)?.unwrap().body, b"# One");
            // An import commits meanwhile: the open transaction does not see it.
            import(b"# Two");
            assert_eq!(r.count_versions(&key)?, 1);
            assert!(r.version(&key, 2)?.is_none());
            assert_eq!(r.history_stats()?.versions, 1);
            assert_eq!(r.stats()?.last_seq, 1);
            assert_eq!(r.history(&key, None, 10)?.len(), 1);
            Ok(())
        })
        .unwrap();
        assert_eq!(r.count_versions(&key).unwrap(), 2);
        assert_eq!(r.version(&key, 2).unwrap().unwrap().body, b"# Two");
        assert_eq!(r.version(&key, 1).unwrap().unwrap().body, b"# One");
        assert_eq!(r.stats().unwrap().last_seq, 2);
    }
}
