//! The SQL of `orchestra check` on PostgreSQL: the same answers as SQLite's (`store::sqlite::check`).

use anyhow::Result;

use super::import_tx::PgImportTx;
use super::reader::{PgReader, key};
use crate::doc::DocKey;
use crate::store::{CheckRow, SkippedFile};

impl PgImportTx {
    /// Replaces the last import's list of the files it left out (written
    /// at the commit: a load's COPY thread may hold the connection now).
    pub fn record_skipped(&self, files: Vec<SkippedFile>) -> Result<()> {
        *self.skipped.borrow_mut() = Some(files);
        Ok(())
    }
}

/// Writes the list [`PgImportTx::record_skipped`] kept, in the import's
/// transaction.
pub(super) fn write_skipped(
    client: &mut impl postgres::GenericClient,
    files: &[SkippedFile],
) -> Result<()> {
    client.execute("DELETE FROM skipped", &[])?;
    if files.is_empty() {
        return Ok(());
    }
    let paths: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
    let reasons: Vec<&str> = files.iter().map(|f| f.reason.as_str()).collect();
    client.execute(
        "INSERT INTO skipped (path, reason) SELECT * FROM unnest($1::text[], $2::text[])
         ON CONFLICT (path) DO UPDATE SET reason = excluded.reason",
        &[&paths, &reasons],
    )?;
    Ok(())
}

impl PgReader {
    /// As SQLite's `Reader::check_page`.
    pub fn check_page(&self, after: Option<&DocKey>, limit: usize) -> Result<Vec<CheckRow>> {
        let (prefix, id) = match after {
            Some(key) => (key.prefix.as_str(), key.id.as_str()),
            None => ("", ""),
        };
        let mut conn = self.conn.borrow_mut();
        let statement = conn.prepared(
            "SELECT prefix, id, title, is_text,
                    CASE WHEN NOT is_text
                           OR (frontmatter IS NULL
                               AND (substring(body FROM 1 FOR 3) = '\\x2d2d2d'::bytea
                                    OR substring(body FROM 1 FOR 6) = '\\xefbbbf2d2d2d'::bytea))
                         THEN body END
             FROM documents
             WHERE (prefix, id) > ($1, $2) ORDER BY prefix, id LIMIT $3",
        )?;
        let rows = conn.query(&statement, &[&prefix, &id, &(limit as i64)])?;
        rows.iter()
            .map(|r| {
                Ok(CheckRow {
                    key: key(r.get(0), r.get(1))?,
                    title: r.get(2),
                    is_text: r.get(3),
                    body: r.get(4),
                })
            })
            .collect()
    }

    /// As SQLite's `Reader::skipped_files`.
    pub fn skipped_files(&self) -> Result<Vec<SkippedFile>> {
        let mut conn = self.conn.borrow_mut();
        let statement = conn.prepared("SELECT path, reason FROM skipped ORDER BY path")?;
        let rows = conn.query(&statement, &[])?;
        Ok(rows
            .iter()
            .map(|r| SkippedFile {
                path: r.get(0),
                reason: r.get(1),
            })
            .collect())
    }
}
