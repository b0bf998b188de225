//! The SQL of `orchestra check` on SQLite: the files the last import left out (written in its transaction, read back), and a pass over the documents that loads a body only where check must read it.

use anyhow::Result;
use rusqlite::params;

use super::import_tx::ImportTx;
use super::{Reader, key_from_row};
use crate::doc::DocKey;
use crate::store::{CheckRow, SkippedFile};

impl ImportTx {
    /// Replaces the last import's list of the files it left out.
    pub fn record_skipped(&self, files: Vec<SkippedFile>) -> Result<()> {
        let conn = &self.conn;
        conn.prepare_cached("DELETE FROM skipped")?.execute([])?;
        let mut insert =
            conn.prepare_cached("INSERT OR REPLACE INTO skipped (path, reason) VALUES (?1, ?2)")?;
        for file in files {
            insert.execute(params![file.path, file.reason])?;
        }
        Ok(())
    }
}

impl Reader {
    /// As `store::Reader::check_page`. A body is loaded only for a document
    /// that is not UTF-8, or that opens with `---` (after a BOM or not) and
    /// has no frontmatter stored: its block did not parse.
    pub fn check_page(&self, after: Option<&DocKey>, limit: usize) -> Result<Vec<CheckRow>> {
        let (prefix, id) = match after {
            Some(key) => (key.prefix.as_str(), key.id.as_str()),
            None => ("", ""),
        };
        let mut stmt = self.conn.prepare_cached(
            "SELECT prefix, id, title, is_text,
                    CASE WHEN NOT is_text
                           OR (frontmatter IS NULL
                               AND (substr(body, 1, 3) = X'2D2D2D'
                                    OR substr(body, 1, 6) = X'EFBBBF2D2D2D'))
                         THEN body END
             FROM documents
             WHERE (prefix, id) > (?1, ?2) ORDER BY prefix, id LIMIT ?3",
        )?;
        let rows = stmt.query_map(params![prefix, id, limit as i64], |r| {
            Ok(CheckRow {
                key: key_from_row(r.get_ref(0)?.as_str()?, r.get(1)?)?,
                title: r.get(2)?,
                is_text: r.get(3)?,
                body: r.get(4)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// As `store::Reader::skipped_files`.
    pub fn skipped_files(&self) -> Result<Vec<SkippedFile>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT path, reason FROM skipped ORDER BY path")?;
        let rows = stmt.query_map([], |r| {
            Ok(SkippedFile {
                path: r.get(0)?,
                reason: r.get(1)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }
}
