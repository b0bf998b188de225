//! Reads for people browsing the backlog: listings under a prefix or folder, a document's metadata, the nearest ids to a missing one, and the database's statistics.

use anyhow::Result;
use rusqlite::{OptionalExtension, params};

use super::{DocSummary, MIGRATIONS, Reader, key_from_row, successor};
use crate::doc::{DocKey, Prefix};
use crate::search::Under;
use crate::store::nearest_of;

/// Everything stored about a document but its bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct DocMeta {
    pub key: DocKey,
    pub title: String,
    pub description: Option<String>,
    /// The frontmatter as JSON text, when the file had a well-formed block.
    pub frontmatter: Option<String>,
    pub size: u64,
    pub hash: [u8; 32],
    pub mtime_ns: i64,
    pub is_text: bool,
    /// The sequence number of the import that last changed it.
    pub seq: i64,
    /// When that import committed (ms since the epoch), if recorded.
    pub changed_ms: Option<i64>,
}

/// Documents and bytes under one prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrefixStats {
    pub prefix: Prefix,
    pub documents: u64,
    pub bytes: u64,
}

/// What `orchestra stats` shows.
#[derive(Debug, Clone, PartialEq)]
pub struct StoreStats {
    /// Every prefix, in order, also those without documents.
    pub prefixes: Vec<PrefixStats>,
    /// Bytes of the database file's pages.
    pub database_bytes: u64,
    /// Bytes of the search index and the frontmatter fields.
    pub index_bytes: u64,
    pub project_root: Option<String>,
    pub schema_version: usize,
    /// The last import that changed anything: its sequence number (0 before
    /// any) and when it committed, if recorded.
    pub last_seq: i64,
    pub last_import_ms: Option<i64>,
}

/// The id range of a listing: every id under `under`, or every key.
fn id_bounds(under: &Under) -> (String, Option<String>) {
    match &under.folder {
        Some(folder) => (folder.clone(), successor(folder)),
        None => (String::new(), None),
    }
}

impl Reader {
    /// Up to `limit` documents under `under`, after the id `after` (from the
    /// start when `None`), in id order: a keyset page of the (prefix, id) index.
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
        let high_clause = if high.is_some() { "AND id < ?3" } else { "" };
        let sql = format!(
            "SELECT prefix, id, title, description, size, mtime_ns FROM documents
             WHERE prefix = ?1 AND id {op} ?2 {high_clause} ORDER BY id LIMIT ?4"
        );
        let mut stmt = self.conn.prepare_cached(&sql)?;
        let rows = stmt.query_map(
            params![
                under.prefix.as_str(),
                from,
                high.unwrap_or_default(),
                limit as i64
            ],
            |r| {
                Ok(DocSummary {
                    key: key_from_row(r.get_ref(0)?.as_str()?, r.get(1)?)?,
                    title: r.get(2)?,
                    description: r.get(3)?,
                    size: r.get::<_, i64>(4)? as u64,
                    mtime_ns: r.get(5)?,
                })
            },
        )?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// The number of documents under `under`: a count over the index range.
    pub fn count_under(&self, under: &Under) -> Result<u64> {
        let (low, high) = id_bounds(under);
        let n: i64 = match high {
            Some(high) => self
                .conn
                .prepare_cached(
                    "SELECT count(*) FROM documents WHERE prefix = ?1 AND id >= ?2 AND id < ?3",
                )?
                .query_row(params![under.prefix.as_str(), low, high], |r| r.get(0))?,
            None => self
                .conn
                .prepare_cached("SELECT count(*) FROM documents WHERE prefix = ?1 AND id >= ?2")?
                .query_row(params![under.prefix.as_str(), low], |r| r.get(0))?,
        };
        Ok(n as u64)
    }

    /// Runs `reads` in one read transaction: every read in it sees the
    /// same commit. Nested calls join the outer transaction.
    pub fn in_transaction<T>(&self, reads: impl FnOnce() -> Result<T>) -> Result<T> {
        // Inside another's transaction: part of it.
        if !self.conn.is_autocommit() {
            return reads();
        }
        /// Ends the read transaction however `reads` ends, a panic
        /// included: the pooled connection must not go back to the pool
        /// inside it (every later read on it would see that old commit).
        struct End<'c>(&'c rusqlite::Connection);
        impl Drop for End<'_> {
            fn drop(&mut self) {
                // A read transaction has nothing to keep: ending it cannot lose data.
                let _ = self.0.execute_batch("COMMIT");
            }
        }
        self.conn.execute_batch("BEGIN")?;
        let _end = End(&self.conn);
        reads()
    }

    /// Whether a document with `key` is stored: one index seek.
    pub fn exists(&self, key: &DocKey) -> Result<bool> {
        Ok(self
            .conn
            .prepare_cached("SELECT 1 FROM documents WHERE prefix = ?1 AND id = ?2")?
            .exists(params![key.prefix.as_str(), key.id])?)
    }

    /// The sequence number of the last import that changed anything (0
    /// before any): what a page was rendered at.
    pub fn seq(&self) -> Result<i64> {
        Ok(self
            .conn
            .prepare_cached("SELECT seq FROM project")?
            .query_row([], |r| r.get(0))
            .optional()?
            .unwrap_or(0))
    }

    /// Everything stored about `key` but its bytes; `None` when absent.
    pub fn meta(&self, key: &DocKey) -> Result<Option<DocMeta>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT d.title, d.description, d.frontmatter, d.size, d.hash, d.mtime_ns, d.is_text,
                    d.seq, i.committed_ms
             FROM documents d LEFT JOIN imports i ON i.seq = d.seq
             WHERE d.prefix = ?1 AND d.id = ?2",
        )?;
        let meta = stmt
            .query_row(params![key.prefix.as_str(), key.id], |r| {
                let hash: Vec<u8> = r.get(4)?;
                Ok(DocMeta {
                    key: key.clone(),
                    title: r.get(0)?,
                    description: r.get(1)?,
                    frontmatter: r.get(2)?,
                    size: r.get::<_, i64>(3)? as u64,
                    hash: hash.try_into().unwrap_or([0; 32]),
                    mtime_ns: r.get(5)?,
                    is_text: r.get(6)?,
                    seq: r.get(7)?,
                    changed_ms: r.get(8)?,
                })
            })
            .optional()?;
        Ok(meta)
    }

    /// Up to `limit` ids of `key`'s prefix nearest to it in key order: half
    /// before, half after (more of one side when the other runs out).
    pub fn nearest(&self, key: &DocKey, limit: usize) -> Result<Vec<DocKey>> {
        let side = |sql: &str| -> Result<Vec<String>> {
            let mut stmt = self.conn.prepare_cached(sql)?;
            let ids = stmt
                .query_map(params![key.prefix.as_str(), key.id, limit as i64], |r| {
                    r.get(0)
                })?
                .collect::<rusqlite::Result<Vec<String>>>()?;
            Ok(ids)
        };
        let before = side(
            "SELECT id FROM documents WHERE prefix = ?1 AND id < ?2 ORDER BY id DESC LIMIT ?3",
        )?;
        let after =
            side("SELECT id FROM documents WHERE prefix = ?1 AND id > ?2 ORDER BY id LIMIT ?3")?;
        Ok(nearest_of(key, before, after, limit))
    }

    /// Up to `limit` ids under `under` below `before`, nearest first: the
    /// lower side of [`Reader::nearest`] within an area.
    pub fn ids_before(&self, under: &Under, before: &str, limit: usize) -> Result<Vec<String>> {
        let (low, high) = id_bounds(under);
        let mut stmt = self.conn.prepare_cached(
            "SELECT id FROM documents WHERE prefix = ?1 AND id < ?2 AND id >= ?3
             AND (?4 IS NULL OR id < ?4) ORDER BY id DESC LIMIT ?5",
        )?;
        let ids = stmt
            .query_map(
                params![under.prefix.as_str(), before, low, high, limit as i64],
                |r| r.get(0),
            )?
            .collect::<rusqlite::Result<Vec<String>>>()?;
        Ok(ids)
    }

    /// Documents and bytes per prefix, the database's size and the index's
    /// share, and the last import. Statistics of the whole store, whatever
    /// areas its caller sees (`store::Reader::seeing`): for `orchestra
    /// stats`, never a request. Reads every document's size (an index scan)
    /// and every page's size (`dbstat`): for a command, not for a request.
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
        let mut stmt = self.conn.prepare_cached(
            "SELECT prefix, count(*), coalesce(sum(size), 0) FROM documents GROUP BY prefix",
        )?;
        let mut rows = stmt.query([])?;
        while let Some(row) = rows.next()? {
            let prefix: String = row.get(0)?;
            if let Some(entry) = prefixes.iter_mut().find(|p| p.prefix.as_str() == prefix) {
                entry.documents = row.get::<_, i64>(1)? as u64;
                entry.bytes = row.get::<_, i64>(2)? as u64;
            }
        }
        let database_bytes: i64 = self.conn.query_row(
            "SELECT page_count * page_size FROM pragma_page_count, pragma_page_size",
            [],
            |r| r.get(0),
        )?;
        // One row per table and index (`aggregate`), not one per page.
        let index_bytes: i64 = self.conn.query_row(
            "SELECT coalesce(sum(pgsize), 0) FROM dbstat WHERE aggregate = TRUE
             AND (name LIKE 'search%' OR name LIKE 'fields%')",
            [],
            |r| r.get(0),
        )?;
        let (project_root, last_seq): (Option<String>, i64) = self
            .conn
            .query_row("SELECT root, seq FROM project", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .optional()?
            .map_or((None, 0), |(root, seq)| (Some(root), seq));
        let last_import_ms: Option<i64> = self
            .conn
            .query_row(
                "SELECT committed_ms FROM imports WHERE seq = ?1",
                [last_seq],
                |r| r.get(0),
            )
            .optional()?;
        Ok(StoreStats {
            prefixes,
            database_bytes: database_bytes as u64,
            index_bytes: index_bytes as u64,
            project_root,
            schema_version: MIGRATIONS.len(),
            last_seq,
            last_import_ms,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::{FileStat, NewDocument, Store};
    use super::*;

    fn store_with(ids: &[(&str, &str)]) -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_or_create(&dir.path().join("o.db")).unwrap();
        let tx = store.begin_import("/project", false).unwrap();
        for (prefix, id) in ids {
            let body = format!("# {id}\n");
            tx.put(&NewDocument::new(
                DocKey::new(Prefix::parse(prefix).unwrap(), *id),
                FileStat {
                    size: body.len() as u64,
                    mtime_ns: 1,
                    hash: *blake3::hash(body.as_bytes()).as_bytes(),
                },
                true,
                id.to_string(),
                None,
                None,
                body.into_bytes(),
            ))
            .unwrap();
        }
        tx.commit(true).unwrap();
        (dir, store)
    }

    fn ids(page: &[DocSummary]) -> Vec<&str> {
        page.iter().map(|d| d.key.id.as_str()).collect()
    }

    #[test]
    fn pages_under_a_prefix_and_a_folder() {
        let (_dir, store) = store_with(&[
            ("docs", "adr/0001"),
            ("docs", "adr/0002"),
            ("docs", "adr0"),
            ("docs", "guide"),
            ("docs", "adr/x/1"),
            ("notes", "n"),
        ]);
        let r = store.reader().unwrap();
        let docs = Under::parse("docs").unwrap();
        let adr = Under::parse("docs/adr").unwrap();
        assert_eq!(
            ids(&r.page_under(&docs, None, 10).unwrap()),
            ["adr/0001", "adr/0002", "adr/x/1", "adr0", "guide"]
        );
        assert_eq!(
            ids(&r.page_under(&adr, None, 10).unwrap()),
            ["adr/0001", "adr/0002", "adr/x/1"]
        );
        assert_eq!(
            ids(&r.page_under(&adr, Some("adr/0001"), 1).unwrap()),
            ["adr/0002"]
        );
        // A resume point before the folder starts it from its beginning.
        assert_eq!(
            ids(&r.page_under(&adr, Some("a"), 1).unwrap()),
            ["adr/0001"]
        );
        assert_eq!(r.count_under(&docs).unwrap(), 5);
        assert_eq!(r.count_under(&adr).unwrap(), 3);
        assert_eq!(
            r.count_under(&Under::parse("features").unwrap()).unwrap(),
            0
        );
    }

    #[test]
    fn nearest_ids_surround_the_missing_one() {
        let (_dir, store) = store_with(&[
            ("features", "FEAT-001"),
            ("features", "FEAT-002"),
            ("features", "FEAT-004"),
            ("features", "FEAT-005"),
            ("notes", "FEAT-003"),
        ]);
        let r = store.reader().unwrap();
        let near = |id: &str, n: usize| -> Vec<String> {
            r.nearest(&DocKey::new(Prefix::Features, id), n)
                .unwrap()
                .into_iter()
                .map(|k| k.id)
                .collect()
        };
        assert_eq!(near("FEAT-003", 2), ["FEAT-002", "FEAT-004"]);
        assert_eq!(near("FEAT-003", 3), ["FEAT-001", "FEAT-002", "FEAT-004"]);
        assert_eq!(near("FEAT-009", 3), ["FEAT-002", "FEAT-004", "FEAT-005"]);
        assert_eq!(near("A", 2), ["FEAT-001", "FEAT-002"]);
    }

    #[test]
    fn meta_and_stats() {
        let (_dir, store) = store_with(&[("features", "F-1"), ("features", "F-2"), ("docs", "d")]);
        let r = store.reader().unwrap();
        let meta = r
            .meta(&DocKey::new(Prefix::Features, "F-1"))
            .unwrap()
            .unwrap();
        assert_eq!(meta.seq, 1);
        assert!(meta.changed_ms.is_some_and(|ms| ms > 1_700_000_000_000));
        assert_eq!(meta.hash, *blake3::hash(b"# F-1\n").as_bytes());
        assert!(
            r.meta(&DocKey::new(Prefix::Features, "F-9"))
                .unwrap()
                .is_none()
        );
        let stats = r.stats().unwrap();
        let counts: Vec<(&str, u64, u64)> = stats
            .prefixes
            .iter()
            .map(|p| (p.prefix.as_str(), p.documents, p.bytes))
            .collect();
        assert_eq!(
            counts,
            [("docs", 1, 4), ("features", 2, 12), ("notes", 0, 0)]
        );
        assert_eq!(stats.last_seq, 1);
        assert_eq!(stats.last_import_ms, meta.changed_ms);
        assert_eq!(stats.project_root.as_deref(), Some("/project"));
        assert!(stats.index_bytes > 0 && stats.index_bytes < stats.database_bytes);
    }
}
