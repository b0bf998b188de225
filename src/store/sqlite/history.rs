//! Document history in SQL: the versions an import records as it writes, the bytes of past versions (once per distinct body, zstd-compressed), reading a version back, and pruning.
//!
//! Every version of a document has a row in `versions` (migration 0006),
//! the current one included; a removal is a version without a body. Rows
//! are keyed by the import that wrote them (migration 0011), so an import
//! appends its versions together; a document's versions are a chain from
//! its newest, which is under `documents.seq` (a removed document's, in
//! `removed`), each naming the sequence of the one before it (listings walk
//! those) and of up to 16 before it, with the `bodies` rows of their bytes
//! (migration 0013: a version read jumps, two seeks of `versions`). The
//! current version's bytes live in `documents.body` as always, so reads of
//! the current document cost what they cost without history; when an import
//! replaces or removes a document, its old bytes move to `bodies` (unless
//! the same bytes are there already: found through `recent_body_hashes`
//! and `body_hashes`), before they are overwritten, and the new version's row
//! names that `bodies` row (`previous_body`, migration 0012). A version's
//! bytes are therefore in `documents` (the current version) or in the
//! `bodies` row that the versions after it name. The document's row also
//! holds its newest version's number and `earlier_bodies` (migration
//! 0014), so a read of only the bytes of a recent version goes from the
//! document straight to them.

use anyhow::{Context, Result, bail};
use rusqlite::{Connection, OptionalExtension, params};

use super::import_tx::StoredDoc;
use super::{NewDocument, Reader, Store};
use crate::doc::DocKey;
use crate::store::bodies::{compress, decompress};

/// One version of a document.
#[derive(Debug, Clone, PartialEq)]
pub struct Version {
    pub key: DocKey,
    pub number: u32,
    /// `None` for a removal.
    pub hash: Option<[u8; 32]>,
    pub size: u64,
    pub title: String,
    pub is_text: bool,
    /// The import that made it, and when it committed (if recorded).
    pub seq: i64,
    pub committed_ms: Option<i64>,
    /// The document as it is now (the newest version of a document that exists).
    pub current: bool,
    /// Where it went (on a removal) or came from (on a first version), when
    /// a write moved it. Filled by `history` only.
    pub moved: Option<crate::store::Moved>,
}

impl Version {
    pub fn removed(&self) -> bool {
        self.hash.is_none()
    }
}

/// A version and its bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct VersionBody {
    pub version: Version,
    pub body: Vec<u8>,
}

/// A version's bytes, with what a read of them needs.
#[derive(Debug, Clone, PartialEq)]
pub struct VersionBytes {
    pub size: u64,
    pub is_text: bool,
    pub body: Vec<u8>,
}

impl From<VersionBody> for VersionBytes {
    fn from(found: VersionBody) -> VersionBytes {
        VersionBytes {
            size: found.version.size,
            is_text: found.version.is_text,
            body: found.body,
        }
    }
}

/// What the history holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HistoryStats {
    /// Version rows, current ones and removals included.
    pub versions: u64,
    /// Documents with more than one version.
    pub documents_with_history: u64,
    /// Distinct past bodies stored, their bytes as stored and uncompressed.
    pub bodies: u64,
    pub stored_bytes: u64,
    pub raw_bytes: u64,
}

/// Which past versions `prune` removes: those that every given rule lets
/// go. The current version of a document is always kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PruneRules {
    /// Keep this many newest versions of each document (the current one
    /// counts).
    pub keep: Option<u32>,
    /// Keep versions made by an import at or after this time (ms since the
    /// epoch).
    pub keep_since_ms: Option<i64>,
}

/// What a prune removed (or, dry, would remove).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PruneReport {
    pub versions: u64,
    pub bodies: u64,
    /// Bytes of the removed bodies as stored.
    pub stored_bytes: u64,
}

fn key_args(key: &DocKey) -> (&'static str, &str) {
    (key.prefix.as_str(), key.id.as_str())
}

/// How many earlier versions a version row names (`versions.earlier`,
/// newest first): a read of one of those is two key seeks, and one further
/// back takes a seek per this many versions.
const EARLIER: usize = 16;

/// The version of `key` made by import `seq` as its successor needs it: its
/// number, the sequences of the versions before it that its row names, and
/// the `bodies` rows of their bytes (`None` for a removal), in the same order.
struct Predecessor {
    number: i64,
    earlier: Vec<i64>,
    earlier_bodies: Vec<Option<i64>>,
}

fn version_at(conn: &Connection, key: &DocKey, seq: i64) -> Result<Predecessor> {
    let (prefix, id) = key_args(key);
    let (number, earlier, earlier_bodies): (i64, String, String) = conn
        .prepare_cached(
            "SELECT version, earlier, earlier_bodies FROM versions
             WHERE seq = ?1 AND prefix = ?2 AND id = ?3",
        )?
        .query_row(params![seq, prefix, id], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .optional()?
        .with_context(|| format!("the history of {key} lacks its newest version (import {seq})"))?;
    let named =
        || format!("the history of {key}: version {number} names {earlier:?}, {earlier_bodies:?}");
    Ok(Predecessor {
        number,
        earlier: serde_json::from_str(&earlier).with_context(named)?,
        earlier_bodies: serde_json::from_str(&earlier_bodies).with_context(named)?,
    })
}

/// The removal that ends the history of `key`, a document coming back, if
/// it was removed: taken out of `removed`, since its newest version will
/// be the one written now.
fn take_removal(conn: &Connection, key: &DocKey) -> Result<Option<i64>> {
    let (prefix, id) = key_args(key);
    let seq: Option<i64> = conn
        .prepare_cached("SELECT seq FROM removed WHERE prefix = ?1 AND id = ?2")?
        .query_row(params![prefix, id], |r| r.get(0))
        .optional()?;
    if seq.is_some() {
        conn.prepare_cached("DELETE FROM removed WHERE prefix = ?1 AND id = ?2")?
            .execute(params![prefix, id])?;
    }
    Ok(seq)
}

/// What a document's row holds of its newest version (migration 0014): its
/// number, and the `bodies` rows of the versions its row names (a JSON
/// array, as `versions.earlier_bodies`).
pub(super) struct Head {
    pub(super) number: i64,
    pub(super) earlier_bodies: String,
}

/// Appends a version of `key` under import `seq`, after the one under
/// `previous` (none for a document never seen before), whose bytes are in
/// the `bodies` row `previous_body` (none for a removal); returns it as
/// the document's row holds it.
#[allow(clippy::too_many_arguments)]
fn append(
    conn: &Connection,
    key: &DocKey,
    seq: i64,
    previous: Option<i64>,
    previous_body: Option<i64>,
    hash: Option<&[u8]>,
    size: u64,
    title: &str,
    is_text: bool,
) -> Result<Head> {
    let (number, earlier, earlier_bodies) = match previous {
        Some(previous) => {
            let before = version_at(conn, key, previous)?;
            let earlier: Vec<i64> = std::iter::once(previous)
                .chain(before.earlier)
                .take(EARLIER)
                .collect();
            let earlier_bodies: Vec<Option<i64>> = std::iter::once(previous_body)
                .chain(before.earlier_bodies)
                .take(EARLIER)
                .collect();
            (before.number + 1, earlier, earlier_bodies)
        }
        None => (1, Vec::new(), Vec::new()),
    };
    let (prefix, id) = key_args(key);
    let earlier_bodies = serde_json::to_string(&earlier_bodies)?;
    conn.prepare_cached(
        "INSERT INTO versions
            (seq, prefix, id, version, previous, earlier, hash, size, title, is_text,
             previous_body, earlier_bodies)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
    )?
    .execute(params![
        seq,
        prefix,
        id,
        number,
        previous,
        serde_json::to_string(&earlier)?,
        hash,
        size as i64,
        title,
        is_text,
        previous_body,
        earlier_bodies
    ])?;
    Ok(Head {
        number,
        earlier_bodies,
    })
}

/// The key under which `body_hashes` and `recent_body_hashes` find a
/// body: the first 8 bytes of its hash (candidates are checked against
/// `bodies.hash`).
fn hash8(hash: &[u8]) -> i64 {
    let mut first = [0u8; 8];
    let n = hash.len().min(8);
    first[..n].copy_from_slice(&hash[..n]);
    i64::from_be_bytes(first)
}

/// How many entries `recent_body_hashes` takes before they move into
/// `body_hashes`, in bulk (migration 0012).
const RECENT_HASHES: i64 = 32_768;

/// The `bodies` row that holds bytes with `hash`, if one does.
fn stored_body(conn: &Connection, hash: &[u8]) -> Result<Option<i64>> {
    let rowid = conn
        .prepare_cached(
            "SELECT b.rowid FROM bodies b
             WHERE b.rowid IN (SELECT body FROM recent_body_hashes WHERE hash8 = ?1
                               UNION ALL
                               SELECT body FROM body_hashes WHERE hash8 = ?1)
               AND b.hash = ?2",
        )?
        .query_row(params![hash8(hash), hash], |r| r.get(0))
        .optional()?;
    Ok(rowid)
}

/// Keeps `body`, whose hash is `hash`, in `bodies`, unless the same bytes
/// are there already: the row that holds them.
fn keep_body(conn: &Connection, hash: &[u8], body: &[u8]) -> Result<i64> {
    if let Some(rowid) = stored_body(conn, hash)? {
        return Ok(rowid);
    }
    let compressed = compress(body).context("cannot compress a body")?;
    conn.prepare_cached("INSERT INTO bodies (hash, size, zstd) VALUES (?1, ?2, ?3)")?
        .execute(params![hash, body.len() as i64, compressed])?;
    let rowid = conn.last_insert_rowid();
    // Two hashes that share their first 8 bytes: the second is stored but
    // not found again (a copy the next time it is kept, not a wrong body).
    conn.prepare_cached("INSERT OR IGNORE INTO recent_body_hashes (hash8, body) VALUES (?1, ?2)")?
        .execute(params![hash8(hash), rowid])?;
    Ok(rowid)
}

/// Moves the entries of `recent_body_hashes` into `body_hashes` once it
/// holds [`RECENT_HASHES`]: called as an import commits.
pub(super) fn settle(conn: &Connection) -> Result<()> {
    let recent: i64 = conn
        .prepare_cached("SELECT count(*) FROM recent_body_hashes")?
        .query_row([], |r| r.get(0))?;
    if recent >= RECENT_HASHES {
        conn.execute_batch(
            "INSERT OR IGNORE INTO body_hashes (hash8, body)
                 SELECT hash8, body FROM recent_body_hashes;
             DELETE FROM recent_body_hashes;",
        )?;
    }
    Ok(())
}

/// Records `doc` as a new version of its document (new, or its bytes
/// changed), before the document row is written: the bytes of `old`, the
/// stored document it replaces, are kept first. Returns the new version as
/// the document's row is to hold it; `None` when the bytes are the same.
pub(super) fn record_put(
    conn: &Connection,
    doc: &NewDocument,
    old: Option<&StoredDoc>,
    seq: i64,
) -> Result<Option<Head>> {
    let (key, hash) = (&doc.key, &doc.stat.hash);
    let (previous, previous_body) = match old {
        // The same bytes again (metadata only): not a new version.
        Some(old) if old.hash == hash => return Ok(None),
        Some(old) => (Some(old.seq), Some(keep_body(conn, &old.hash, &old.body)?)),
        // A document that has no row may have versions: it was removed
        // before, and its newest is a removal, without bytes.
        None => (take_removal(conn, key)?, None),
    };
    append(
        conn,
        key,
        seq,
        previous,
        previous_body,
        Some(&hash[..]),
        doc.stat.size,
        &doc.title,
        doc.is_text,
    )
    .map(Some)
}

/// Records the removal of `key`, whose stored document is `old`, before its
/// row is deleted: its bytes are kept, and a version without a body says
/// when it went.
pub(super) fn record_remove(
    conn: &Connection,
    key: &DocKey,
    old: &StoredDoc,
    seq: i64,
) -> Result<()> {
    let previous_body = keep_body(conn, &old.hash, &old.body)?;
    append(
        conn,
        key,
        seq,
        Some(old.seq),
        Some(previous_body),
        None,
        0,
        &old.title,
        false,
    )?;
    let (prefix, id) = key_args(key);
    conn.prepare_cached("INSERT INTO removed (prefix, id, seq) VALUES (?1, ?2, ?3)")?
        .execute(params![prefix, id, seq])?;
    Ok(())
}

/// Migration 0012's step in Rust: `body_hashes` filled from `bodies`; and
/// a past version whose bytes are not in `bodies` had them pruned as its
/// document's current ones (prune then kept only what the documents
/// lacked): they are kept from the document now, so that the version after
/// it can name them.
pub(super) fn fill_0012(conn: &Connection) -> Result<()> {
    {
        let mut insert =
            conn.prepare("INSERT OR IGNORE INTO body_hashes (hash8, body) VALUES (?1, ?2)")?;
        let mut bodies = conn.prepare("SELECT rowid, hash FROM bodies")?;
        let mut rows = bodies.query([])?;
        while let Some(row) = rows.next()? {
            let (rowid, hash): (i64, Vec<u8>) = (row.get(0)?, row.get(1)?);
            insert.execute(params![hash8(&hash), rowid])?;
        }
    }
    // The rows to fill, and the document that has their bytes.
    let missing: Vec<(i64, String, String, i64)> = conn
        .prepare(
            "SELECT v.seq, v.prefix, v.id, d.rowid
             FROM versions v
             JOIN versions p ON p.seq = v.previous AND p.prefix = v.prefix AND p.id = v.id
             JOIN documents d ON d.prefix = v.prefix AND d.id = v.id AND d.hash = p.hash
             WHERE v.previous_body IS NULL",
        )?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
        .collect::<rusqlite::Result<_>>()?;
    for (seq, prefix, id, doc) in missing {
        let (hash, body): (Vec<u8>, Vec<u8>) = conn.query_row(
            "SELECT hash, body FROM documents WHERE rowid = ?1",
            [doc],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        let rowid = keep_body(conn, &hash, &body)?;
        conn.execute(
            "UPDATE versions SET previous_body = ?1 WHERE seq = ?2 AND prefix = ?3 AND id = ?4",
            params![rowid, seq, prefix, id],
        )?;
    }
    Ok(())
}

/// The versions of the document `?1`/`?2`, newest first, as the table
/// `chain`: from the newest (under `documents.seq`, or the removal in
/// `removed`), each row names the sequence of the one before it.
const CHAIN: &str = "WITH RECURSIVE
    head(seq, live) AS (
        SELECT seq, 1 FROM documents WHERE prefix = ?1 AND id = ?2
        UNION ALL
        SELECT seq, 0 FROM removed WHERE prefix = ?1 AND id = ?2
    ),
    chain(seq, version, previous, hash, size, title, is_text, current) AS (
        SELECT v.seq, v.version, v.previous, v.hash, v.size, v.title, v.is_text, h.live
        FROM head h JOIN versions v ON v.seq = h.seq AND v.prefix = ?1 AND v.id = ?2
        UNION ALL
        SELECT v.seq, v.version, v.previous, v.hash, v.size, v.title, v.is_text, 0
        FROM chain c JOIN versions v ON v.seq = c.previous AND v.prefix = ?1 AND v.id = ?2
    )";

/// The rows of the document `?1`/`?2` on the way to version `?3`, as the
/// table `chain`: from the newest, a jump to the row `earlier` names for
/// it, or, when it is further back than that, to the oldest `earlier`
/// names, and so on. The jumps never pass `?3`: the chain holds it if it
/// exists, and no version older than it. The newest row carries its
/// document's rowid (`doc`; NULL for a removal and for the others), each
/// row jumped to the `bodies` row of its bytes that the row it was reached
/// from names (`body`, from `earlier_bodies`).
const JUMP: &str = "WITH RECURSIVE
    head(seq, live, doc) AS (
        SELECT seq, 1, rowid FROM documents WHERE prefix = ?1 AND id = ?2
        UNION ALL
        SELECT seq, 0, NULL FROM removed WHERE prefix = ?1 AND id = ?2
    ),
    chain(seq, version, earlier, earlier_bodies, hash, size, title, is_text, current, doc, body)
    AS (
        SELECT v.seq, v.version, v.earlier, v.earlier_bodies, v.hash, v.size, v.title,
               v.is_text, h.live, h.doc, NULL
        FROM head h JOIN versions v ON v.seq = h.seq AND v.prefix = ?1 AND v.id = ?2
        UNION ALL
        SELECT v.seq, v.version, v.earlier, v.earlier_bodies, v.hash, v.size, v.title,
               v.is_text, 0, NULL,
               c.earlier_bodies ->> ('$[' || (min(c.version - ?3, json_array_length(c.earlier)) - 1) || ']')
        FROM chain c JOIN versions v
            ON v.seq = c.earlier ->> ('$[' || (min(c.version - ?3, json_array_length(c.earlier)) - 1) || ']')
            AND v.prefix = ?1 AND v.id = ?2
        WHERE c.version > ?3 AND json_array_length(c.earlier) > 0
    )";

/// The columns [`version_from_row`] reads, from `chain c`.
const VERSION_COLUMNS: &str = "c.version, c.hash, c.size, c.title, c.is_text, c.seq,
    (SELECT committed_ms FROM imports i WHERE i.seq = c.seq), c.current";

fn version_from_row(key: &DocKey, r: &rusqlite::Row) -> rusqlite::Result<Version> {
    let hash: Option<Vec<u8>> = r.get(1)?;
    Ok(Version {
        key: key.clone(),
        number: r.get(0)?,
        hash: hash.map(|h| h.try_into().unwrap_or([0; 32])),
        size: r.get::<_, i64>(2)? as u64,
        title: r.get(3)?,
        is_text: r.get(4)?,
        seq: r.get(5)?,
        committed_ms: r.get(6)?,
        current: r.get(7)?,
        moved: None,
    })
}

impl Reader {
    /// Up to `limit` versions of `key`, newest first, those below `before`
    /// when given (a keyset page). Empty when the key never existed.
    pub fn history(&self, key: &DocKey, before: Option<u32>, limit: usize) -> Result<Vec<Version>> {
        let (prefix, id) = key_args(key);
        let sql = format!(
            "{CHAIN} SELECT {VERSION_COLUMNS} FROM chain c WHERE c.version < ?3
             ORDER BY c.version DESC LIMIT ?4"
        );
        let mut stmt = self.conn.prepare_cached(&sql)?;
        let before = before.map_or(i64::MAX, i64::from);
        let mut versions: Vec<Version> = stmt
            .query_map(params![prefix, id, before, limit as i64], |r| {
                version_from_row(key, r)
            })?
            .collect::<rusqlite::Result<_>>()?;
        super::moves::attach(&self.conn, key, &mut versions)?;
        Ok(versions)
    }

    /// Version `number` of `key` and its bytes; `None` when there is no such
    /// version or it is a removal (nothing to read).
    pub fn version(&self, key: &DocKey, number: u32) -> Result<Option<VersionBody>> {
        if number == 0 {
            return Ok(None);
        }
        self.in_transaction(|| {
            let (prefix, id) = key_args(key);
            // The chain to the version asked for: the newest row, then (for
            // a past version) one jump to it, which names its bytes as well.
            let sql = format!(
                "{JUMP} SELECT {VERSION_COLUMNS}, c.doc, c.body FROM chain c WHERE c.version = ?3"
            );
            let found = self
                .conn
                .prepare_cached(&sql)?
                .query_row(params![prefix, id, i64::from(number)], |r| {
                    Ok((
                        version_from_row(key, r)?,
                        r.get::<_, Option<i64>>(8)?,
                        r.get(9)?,
                    ))
                })
                .optional()?;
            let Some((version, doc, bytes_at)) = found else {
                return Ok(None);
            };
            let Some(hash) = version.hash else {
                return Ok(None);
            };
            // A `documents` rowid for the current version, a `bodies` one
            // for a past one.
            let body = match (version.current, doc) {
                (true, Some(doc)) => self
                    .conn
                    .prepare_cached("SELECT body FROM documents WHERE rowid = ?1")?
                    .query_row([doc], |r| r.get(0))?,
                _ => self.past_body(key, &version, &hash, bytes_at)?,
            };
            Ok(Some(VersionBody { version, body }))
        })
    }

    /// The bytes of version `number` of `key`, for a read of them, as
    /// [`Reader::version`] finds them but without what else it records: the
    /// current one, or one of the 16 before it, from the document's row
    /// and the `bodies` row it names (migration 0014), a random page fewer
    /// than the version's row, and fewer than the chain to it. A removed
    /// document, a version further back, or a row without these takes the
    /// chain. Whether the bytes are text is whether they are UTF-8, as the
    /// import decided it.
    pub fn version_bytes(&self, key: &DocKey, number: u32) -> Result<Option<VersionBytes>> {
        if number == 0 {
            return Ok(None);
        }
        let wanted = i64::from(number);
        self.in_transaction(|| {
            let (prefix, id) = key_args(key);
            type Head = (Option<i64>, Option<String>, i64, bool, Option<Vec<u8>>);
            let head: Option<Head> = self
                .conn
                .prepare_cached(
                    "SELECT version, earlier_bodies, size, is_text,
                            CASE WHEN version = ?3 THEN body END
                     FROM documents WHERE prefix = ?1 AND id = ?2",
                )?
                .query_row(params![prefix, id, wanted], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
                })
                .optional()?;
            if let Some((Some(current), Some(earlier_bodies), size, is_text, body)) = head {
                if wanted > current {
                    return Ok(None);
                }
                if let Some(body) = body {
                    let size = size as u64;
                    return Ok(Some(VersionBytes {
                        size,
                        is_text,
                        body,
                    }));
                }
                let bodies: Vec<Option<i64>> = serde_json::from_str(&earlier_bodies)
                    .with_context(|| format!("the row of {key} names {earlier_bodies:?}"))?;
                match bodies.get((current - 1 - wanted) as usize) {
                    // A removal: nothing to read.
                    Some(None) => return Ok(None),
                    Some(Some(rowid)) => {
                        let body = self.bytes_at(key, number, *rowid)?;
                        let is_text = std::str::from_utf8(&body).is_ok();
                        return Ok(Some(VersionBytes {
                            size: body.len() as u64,
                            is_text,
                            body,
                        }));
                    }
                    None => {}
                }
            }
            Ok(self.version(key, number)?.map(VersionBytes::from))
        })
    }

    /// Version `number` of `key`, kept in the `bodies` row `rowid`.
    fn bytes_at(&self, key: &DocKey, number: u32, rowid: i64) -> Result<Vec<u8>> {
        let stored: Option<(i64, Vec<u8>)> = self
            .conn
            .prepare_cached("SELECT size, zstd FROM bodies WHERE rowid = ?1")?
            .query_row([rowid], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?;
        let Some((size, compressed)) = stored else {
            bail!("the history of {key} lacks the bytes of version {number}");
        };
        decompress(&compressed, size as usize)
            .with_context(|| format!("cannot read version {number} of {key}"))
    }

    /// The bytes of `version`, a past version of `key`, from the `bodies`
    /// row that the versions after it name.
    fn past_body(
        &self,
        key: &DocKey,
        version: &Version,
        hash: &[u8; 32],
        body_row: Option<i64>,
    ) -> Result<Vec<u8>> {
        let number = version.number;
        let stored: Option<(Vec<u8>, i64, Vec<u8>)> = match body_row {
            Some(rowid) => self
                .conn
                .prepare_cached("SELECT hash, size, zstd FROM bodies WHERE rowid = ?1")?
                .query_row([rowid], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                .optional()?,
            None => None,
        };
        let Some((stored_hash, size, compressed)) = stored else {
            bail!("the history of {key} lacks the bytes of version {number}");
        };
        if stored_hash != hash {
            bail!("the history of {key} names the wrong bytes for version {number}");
        }
        decompress(&compressed, size as usize)
            .with_context(|| format!("cannot read version {number} of {key}"))
    }

    /// The version numbers of `key` whose decimal form begins with `typed`,
    /// newest first, at most `limit`, and how many there are in all.
    pub fn complete_versions(
        &self,
        key: &DocKey,
        typed: &str,
        limit: usize,
    ) -> Result<(Vec<u32>, u64)> {
        let (prefix, id) = key_args(key);
        let mut stmt = self.conn.prepare_cached(&format!(
            "{CHAIN} SELECT version FROM chain WHERE hash IS NOT NULL
             AND CAST(version AS TEXT) LIKE ?3 || '%' ESCAPE '\\'
             ORDER BY version DESC"
        ))?;
        // Only digits can begin a version number.
        if !typed.bytes().all(|b| b.is_ascii_digit()) {
            return Ok((Vec::new(), 0));
        }
        let all: Vec<u32> = stmt
            .query_map(params![prefix, id, typed], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        let total = all.len() as u64;
        Ok((all.into_iter().take(limit).collect(), total))
    }

    /// How many versions of `key` there are, removals included (0 when the
    /// key never existed): the length of its whole history.
    pub fn count_versions(&self, key: &DocKey) -> Result<u64> {
        let (prefix, id) = key_args(key);
        let n: i64 = self
            .conn
            .prepare_cached(&format!("{CHAIN} SELECT count(*) FROM chain"))?
            .query_row(params![prefix, id], |r| r.get(0))?;
        Ok(n as u64)
    }

    /// How many versions and stored bodies the history holds, and their size.
    pub fn history_stats(&self) -> Result<HistoryStats> {
        self.in_transaction(|| {
            let (versions, documents_with_history): (i64, i64) = self.conn.query_row(
                "SELECT count(*), (SELECT count(*) FROM (SELECT 1 FROM versions
                                          GROUP BY prefix, id HAVING count(*) > 1))
                 FROM versions",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?;
            let (bodies, stored, raw): (i64, i64, i64) = self.conn.query_row(
                "SELECT count(*), coalesce(sum(length(zstd)), 0), coalesce(sum(size), 0) FROM bodies",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )?;
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

impl Store {
    /// Removes the past versions `rules` let go, and the stored bodies no
    /// version needs any more, in one transaction; with `dry_run`, only
    /// says what it would remove.
    pub fn prune(&self, rules: &PruneRules, dry_run: bool) -> Result<PruneReport> {
        if rules.keep.is_none() && rules.keep_since_ms.is_none() {
            bail!("prune needs a rule: --keep N, --older-than DURATION, or both");
        }
        let conn = self.begin_write()?;
        let report = prune_in_transaction(&conn, rules);
        let finish = match (&report, dry_run) {
            (Ok(_), false) => "COMMIT",
            _ => "ROLLBACK",
        };
        conn.execute_batch(finish)?;
        report
    }
}

fn prune_in_transaction(conn: &Connection, rules: &PruneRules) -> Result<PruneReport> {
    // A version goes when every rule lets it go, and never the newest of a
    // key: the current version, or a removed document's removal, which
    // keeps its numbers from being given again if it comes back. `newer`
    // counts a version's newer versions.
    let mut conditions = vec!["newer > 0".to_string()];
    if rules.keep.is_some() {
        conditions.push("newer >= :keep".to_string());
    }
    if rules.keep_since_ms.is_some() {
        conditions.push(
            "coalesce((SELECT committed_ms FROM imports i WHERE i.seq = r.seq), 0) < :since"
                .to_string(),
        );
    }
    let doomed = format!(
        "SELECT seq, prefix, id FROM (
             SELECT seq, prefix, id,
                    row_number() OVER (PARTITION BY prefix, id ORDER BY version DESC) - 1 AS newer
             FROM versions) AS r
         WHERE {}",
        conditions.join(" AND ")
    );
    conn.execute_batch(
        "CREATE TEMP TABLE IF NOT EXISTS prune_doomed (seq INTEGER, prefix TEXT, id TEXT);
         DELETE FROM temp.prune_doomed;",
    )?;
    let mut args: Vec<(&str, &dyn rusqlite::ToSql)> = Vec::new();
    if let Some(keep) = &rules.keep {
        args.push((":keep", keep));
    }
    if let Some(since) = &rules.keep_since_ms {
        args.push((":since", since));
    }
    conn.execute(
        &format!("INSERT INTO temp.prune_doomed {doomed}"),
        &args[..],
    )?;
    let versions: i64 =
        conn.query_row("SELECT count(*) FROM temp.prune_doomed", [], |r| r.get(0))?;
    // The chains of the documents that lost versions are linked again over
    // those left (the rules take the oldest, so this mostly ends a chain);
    // 16 is `EARLIER`. Each row names the `bodies` row of the bytes of the
    // one before it: first noted for every version of those documents as
    // its own (`prune_own`, from the row after it), then given to the row
    // that is now after it.
    // A document's row holds its newest version's `earlier_bodies` too.
    conn.execute_batch(
        "CREATE TEMP TABLE IF NOT EXISTS prune_own
             (seq INTEGER, prefix TEXT, id TEXT, body INTEGER, PRIMARY KEY (seq, prefix, id))
             WITHOUT ROWID;
         DELETE FROM temp.prune_own;
         INSERT INTO temp.prune_own
             SELECT seq, prefix, id,
                    lag(previous_body) OVER (PARTITION BY prefix, id ORDER BY version DESC)
             FROM versions
             WHERE (prefix, id) IN (SELECT prefix, id FROM temp.prune_doomed);
         DELETE FROM versions WHERE (seq, prefix, id) IN
             (SELECT seq, prefix, id FROM temp.prune_doomed);
         UPDATE versions SET previous = relinked.previous, earlier = relinked.earlier,
                             previous_body = relinked.previous_body,
                             earlier_bodies = relinked.earlier_bodies
         FROM (SELECT v.seq, v.prefix, v.id,
                      lead(v.seq) OVER newest_first AS previous,
                      coalesce(json_group_array(v.seq) OVER (newest_first ROWS BETWEEN 1 FOLLOWING
                                                             AND 16 FOLLOWING), '[]') AS earlier,
                      lead(o.body) OVER newest_first AS previous_body,
                      coalesce(json_group_array(o.body) OVER (newest_first ROWS BETWEEN 1 FOLLOWING
                                                              AND 16 FOLLOWING), '[]')
                          AS earlier_bodies
               FROM versions v JOIN temp.prune_own o
                   ON o.seq = v.seq AND o.prefix = v.prefix AND o.id = v.id
               WINDOW newest_first AS (PARTITION BY v.prefix, v.id ORDER BY v.version DESC))
              AS relinked
         WHERE versions.seq = relinked.seq AND versions.prefix = relinked.prefix
           AND versions.id = relinked.id
           AND (versions.previous IS NOT relinked.previous
                OR versions.earlier IS NOT relinked.earlier
                OR versions.previous_body IS NOT relinked.previous_body
                OR versions.earlier_bodies IS NOT relinked.earlier_bodies);
         UPDATE documents SET earlier_bodies = v.earlier_bodies
         FROM versions v
         WHERE v.seq = documents.seq AND v.prefix = documents.prefix AND v.id = documents.id
           AND (documents.prefix, documents.id) IN (SELECT prefix, id FROM temp.prune_doomed)
           AND documents.earlier_bodies IS NOT v.earlier_bodies;
         DELETE FROM temp.prune_doomed;
         DELETE FROM temp.prune_own;",
    )?;
    // Bodies that no remaining version names.
    conn.execute_batch(
        "CREATE TEMP TABLE IF NOT EXISTS prune_needed (body INTEGER PRIMARY KEY);
         DELETE FROM temp.prune_needed;
         INSERT OR IGNORE INTO temp.prune_needed
             SELECT previous_body FROM versions WHERE previous_body IS NOT NULL;",
    )?;
    let unneeded =
        "SELECT rowid FROM bodies WHERE rowid NOT IN (SELECT body FROM temp.prune_needed)";
    let (bodies, stored): (i64, i64) = conn.query_row(
        &format!("SELECT count(*), coalesce(sum(length(zstd)), 0) FROM bodies WHERE rowid IN ({unneeded})"),
        [],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    conn.execute_batch(&format!(
        "DELETE FROM body_hashes WHERE body IN ({unneeded});
         DELETE FROM recent_body_hashes WHERE body IN ({unneeded});
         DELETE FROM bodies WHERE rowid IN ({unneeded});
         DELETE FROM temp.prune_needed;"
    ))?;
    Ok(PruneReport {
        versions: versions as u64,
        bodies: bodies as u64,
        stored_bytes: stored as u64,
    })
}

#[cfg(test)]
mod tests {
    use super::super::{FileStat, NewDocument};
    use super::*;
    use crate::doc::Prefix;

    fn import(store: &Store, docs: &[(&str, Option<&str>)]) {
        let tx = store.begin_import("/project", false).unwrap();
        for (id, body) in docs {
            let key = DocKey::new(Prefix::Notes, *id);
            match body {
                Some(body) => tx
                    .put(&NewDocument::new(
                        key,
                        FileStat {
                            size: body.len() as u64,
                            mtime_ns: 1,
                            hash: *blake3::hash(body.as_bytes()).as_bytes(),
                        },
                        true,
                        body.lines().next().unwrap_or_default().to_string(),
                        None,
                        None,
                        body.as_bytes().to_vec(),
                    ))
                    .unwrap(),
                None => tx.remove(&key).unwrap(),
            }
        }
        tx.commit(true).unwrap();
    }

    #[test]
    fn every_version_reads_back_and_reverts_share_their_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_or_create(&dir.path().join("o.db")).unwrap();
        let key = DocKey::new(Prefix::Notes, "a");
        let (one, two) = ("# One\nfirst", "# Two\nsecond");
        import(&store, &[("a", Some(one)), ("b", Some(one))]);
        import(&store, &[("a", Some(two))]);
        import(&store, &[("a", Some(one))]);
        import(&store, &[("a", None)]);
        let r = store.reader().unwrap();
        let history = r.history(&key, None, 10).unwrap();
        let numbers: Vec<(u32, bool, bool)> = history
            .iter()
            .map(|v| (v.number, v.removed(), v.current))
            .collect();
        assert_eq!(
            numbers,
            [
                (4, true, false),
                (3, false, false),
                (2, false, false),
                (1, false, false)
            ]
        );
        assert_eq!(history[2].title, "# Two");
        for (number, expected) in [(1, one), (2, two), (3, one)] {
            let read = r.version(&key, number).unwrap().unwrap();
            assert_eq!(read.body, expected.as_bytes(), "version {number}");
        }
        assert!(
            r.version(&key, 4).unwrap().is_none(),
            "a removal has no bytes"
        );
        assert!(r.version(&key, 5).unwrap().is_none());
        assert_bytes_as_versions(&r, &key, 4);
        // `one` is stored once for a, b and the revert; `two` once.
        let stats = r.history_stats().unwrap();
        assert_eq!((stats.versions, stats.bodies), (5, 2));
        // Keyset pages of the history.
        let older: Vec<u32> = r
            .history(&key, Some(3), 10)
            .unwrap()
            .iter()
            .map(|v| v.number)
            .collect();
        assert_eq!(older, [2, 1]);
        let (numbers, total) = r.complete_versions(&key, "", 10).unwrap();
        assert_eq!((numbers, total), (vec![3, 2, 1], 3));
        assert_eq!(r.complete_versions(&key, "2", 10).unwrap().0, [2]);
        assert_eq!(r.complete_versions(&key, "x", 10).unwrap().1, 0);
        // The same bytes again are not a new version.
        import(&store, &[("b", Some(one))]);
        let b = DocKey::new(Prefix::Notes, "b");
        assert_eq!(r.history(&b, None, 10).unwrap().len(), 1);
        assert!(r.history(&b, None, 10).unwrap()[0].current);
    }

    #[test]
    fn versions_further_back_than_a_row_names_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_or_create(&dir.path().join("o.db")).unwrap();
        let key = DocKey::new(Prefix::Notes, "a");
        let body = |i: usize| format!("# V{i}\nbody {i}");
        let count = 3 * EARLIER + 5;
        for i in 1..=count {
            import(&store, &[("a", Some(&body(i)))]);
        }
        let r = store.reader().unwrap();
        for number in 1..=count {
            let read = r.version(&key, number as u32).unwrap().unwrap();
            assert_eq!(read.body, body(number).as_bytes(), "version {number}");
            assert_eq!(read.version.number, number as u32);
            assert_eq!(read.version.current, number == count);
        }
        assert!(r.version(&key, 0).unwrap().is_none());
        assert!(r.version(&key, count as u32 + 1).unwrap().is_none());
        assert_eq!(r.count_versions(&key).unwrap(), count as u64);
        assert_bytes_as_versions(&r, &key, count as u32);
    }

    /// [`Reader::version_bytes`] reads what [`Reader::version`] reads, for
    /// every number from 0 to one past `last`.
    fn assert_bytes_as_versions(r: &Reader, key: &DocKey, last: u32) {
        for number in 0..=last + 1 {
            let expected = r.version(key, number).unwrap().map(VersionBytes::from);
            let got = r.version_bytes(key, number).unwrap();
            assert_eq!(got, expected, "{key} version {number}");
        }
    }

    #[test]
    fn recent_versions_read_from_the_documents_row_and_others_through_the_chain() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("o.db");
        let store = Store::open_or_create(&path).unwrap();
        let body = |i: usize| format!("# V{i}\nbody {i}");
        for i in 1..=EARLIER + 3 {
            import(&store, &[("a", Some(&body(i))), ("b", Some(&body(i % 2)))]);
        }
        import(&store, &[("b", None)]);
        let (a, b) = (
            DocKey::new(Prefix::Notes, "a"),
            DocKey::new(Prefix::Notes, "b"),
        );
        let last = (EARLIER + 3) as u32;
        let sql = |sql: &str| {
            rusqlite::Connection::open(&path)
                .unwrap()
                .execute_batch(sql)
                .unwrap()
        };
        let r = store.reader().unwrap();
        assert_bytes_as_versions(&r, &a, last);
        // b was removed: its versions come through the chain.
        assert_bytes_as_versions(&r, &b, 3);
        // A row that holds none of it (NULL: not filled) takes the chain.
        sql("UPDATE documents SET version = NULL, earlier_bodies = NULL");
        assert_bytes_as_versions(&r, &a, last);
        let migration = include_str!("../../../migrations/sqlite/0014_document_heads.sql");
        sql(&migration[migration.find("UPDATE").unwrap()..]);
        // The current version and the 16 before it are read without
        // `versions` (here made to name nothing before them); the versions
        // further back take it.
        sql(
            "UPDATE versions SET earlier = '[]', previous = NULL WHERE prefix = 'notes' AND id = 'a'",
        );
        for number in (last - EARLIER as u32)..=last {
            let read = r.version_bytes(&a, number).unwrap().unwrap();
            assert_eq!(
                read.body,
                body(number as usize).as_bytes(),
                "version {number}"
            );
            assert!(read.is_text);
        }
        assert_eq!(
            r.version_bytes(&a, last - EARLIER as u32 - 1).unwrap(),
            None
        );
    }

    #[test]
    fn prune_keeps_the_bodies_that_versions_name_and_only_those() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_or_create(&dir.path().join("o.db")).unwrap();
        let key = DocKey::new(Prefix::Notes, "a");
        let (one, two, three) = ("# One\nfirst", "# Two\nsecond", "# Three\nthird");
        for body in [one, two, one] {
            import(&store, &[("a", Some(body))]);
        }
        // Nothing to let go: `one`, the document's bytes now, stays stored
        // too, since version 2 names it for version 1.
        let keep_all = PruneRules {
            keep: Some(10),
            keep_since_ms: None,
        };
        let pruned = store.prune(&keep_all, false).unwrap();
        assert_eq!((pruned.versions, pruned.bodies), (0, 0));
        let r = store.reader().unwrap();
        assert_eq!(r.history_stats().unwrap().bodies, 2);
        // The document moves on: versions 1 and 3 read `one` from the same
        // stored body, which is not stored twice.
        import(&store, &[("a", Some(three))]);
        assert_eq!(r.history_stats().unwrap().bodies, 2);
        for (number, expected) in [(1, one), (2, two), (3, one), (4, three)] {
            let read = r.version(&key, number).unwrap().unwrap();
            assert_eq!(read.body, expected.as_bytes(), "version {number}");
        }
        // Keep 2: version 3 stays, and the body of `one` that version 4
        // names; `two` goes.
        let keep2 = PruneRules {
            keep: Some(2),
            keep_since_ms: None,
        };
        let pruned = store.prune(&keep2, false).unwrap();
        assert_eq!((pruned.versions, pruned.bodies), (2, 1));
        assert_eq!(r.version(&key, 3).unwrap().unwrap().body, one.as_bytes());
        assert!(r.version(&key, 2).unwrap().is_none());
        // A body pruned is found no more: `two` again is stored again.
        import(&store, &[("a", Some(two))]);
        assert_eq!(r.history_stats().unwrap().bodies, 2);
        assert_eq!(r.version(&key, 4).unwrap().unwrap().body, three.as_bytes());
    }

    #[test]
    fn recent_hashes_move_in_bulk_and_are_found_where_they_went() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_or_create(&dir.path().join("o.db")).unwrap();
        let key = DocKey::new(Prefix::Notes, "a");
        let (one, two, three) = ("# One\nfirst", "# Two\nsecond", "# Three\nthird");
        import(&store, &[("a", Some(one))]);
        import(&store, &[("a", Some(two))]);
        let count = |table: &str| -> i64 {
            let r = store.reader().unwrap();
            r.conn
                .query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))
                .unwrap()
        };
        assert_eq!((count("recent_body_hashes"), count("body_hashes")), (1, 0));
        // One short of the bound: an import's commit leaves them.
        let fill = |n: i64| {
            let conn = store.begin_write().unwrap();
            conn.execute(
                "INSERT INTO recent_body_hashes (hash8, body)
                 WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?1)
                 SELECT -i, -i FROM n",
                [n],
            )
            .unwrap();
            settle(&conn).unwrap();
            conn.execute_batch("COMMIT").unwrap();
        };
        fill(RECENT_HASHES - 2);
        assert_eq!(count("recent_body_hashes"), RECENT_HASHES - 1);
        // At the bound they move, all of them.
        import(&store, &[("a", Some(one))]);
        assert_eq!(
            (count("recent_body_hashes"), count("body_hashes")),
            (0, RECENT_HASHES)
        );
        // `one`, kept again, is found in `body_hashes`: not stored twice.
        import(&store, &[("a", Some(three))]);
        let r = store.reader().unwrap();
        assert_eq!(r.history_stats().unwrap().bodies, 2);
        for (number, expected) in [(1, one), (2, two), (3, one), (4, three)] {
            let read = r.version(&key, number).unwrap().unwrap();
            assert_eq!(read.body, expected.as_bytes(), "version {number}");
        }
    }

    #[test]
    fn reads_with_a_transaction_of_their_own_join_an_open_one() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_or_create(&dir.path().join("o.db")).unwrap();
        let key = DocKey::new(Prefix::Notes, "a");
        import(&store, &[("a", Some("# One\n"))]);
        let r = store.reader().unwrap();
        r.in_transaction(|| {
            assert_eq!(r.version(&key, 1)?.unwrap().body, b"# One\n");
            // An import commits meanwhile: the open transaction does not see it.
            import(&store, &[("a", Some("# Two\n"))]);
            assert_eq!(r.count_versions(&key)?, 1);
            assert!(r.version(&key, 2)?.is_none());
            assert_eq!(r.history_stats()?.versions, 1);
            assert_eq!(r.stats()?.last_seq, 1);
            assert_eq!(r.history(&key, None, 10)?.len(), 1);
            Ok(())
        })
        .unwrap();
        assert_eq!(r.count_versions(&key).unwrap(), 2);
        assert_eq!(r.version(&key, 2).unwrap().unwrap().body, b"# Two\n");
        assert_eq!(
            r.count_versions(&DocKey::new(Prefix::Notes, "never"))
                .unwrap(),
            0
        );
    }

    #[test]
    fn prune_keeps_the_current_version_and_what_the_rules_protect() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_or_create(&dir.path().join("o.db")).unwrap();
        let key = DocKey::new(Prefix::Notes, "a");
        for i in 1..=5 {
            import(&store, &[("a", Some(&format!("# V{i}\nbody {i}")))]);
        }
        let keep2 = PruneRules {
            keep: Some(2),
            keep_since_ms: None,
        };
        let dry = store.prune(&keep2, true).unwrap();
        assert_eq!(dry.versions, 3);
        let r = store.reader().unwrap();
        assert_eq!(
            r.history(&key, None, 10).unwrap().len(),
            5,
            "a dry run writes nothing"
        );
        let done = store.prune(&keep2, false).unwrap();
        assert_eq!(done, dry);
        let left: Vec<u32> = r
            .history(&key, None, 10)
            .unwrap()
            .iter()
            .map(|v| v.number)
            .collect();
        assert_eq!(left, [5, 4]);
        assert_eq!(r.version(&key, 4).unwrap().unwrap().body, b"# V4\nbody 4");
        assert!(r.version(&key, 3).unwrap().is_none());
        assert_eq!(
            r.history_stats().unwrap().bodies,
            1,
            "only version 4's bytes"
        );
        // Everything is recent: a time rule alone removes nothing.
        let recent = PruneRules {
            keep: None,
            keep_since_ms: Some(0),
        };
        assert_eq!(store.prune(&recent, false).unwrap().versions, 0);
        // Keep 1: the current version stays.
        let keep1 = PruneRules {
            keep: Some(1),
            keep_since_ms: None,
        };
        assert_eq!(store.prune(&keep1, false).unwrap().versions, 1);
        assert_eq!(r.version(&key, 5).unwrap().unwrap().body, b"# V5\nbody 5");
        assert_eq!(r.history_stats().unwrap().bodies, 0);
        assert!(store.prune(&PruneRules::default(), true).is_err());
        // No version names one that is gone.
        let dangling: i64 = r
            .conn
            .query_row(
                "SELECT count(*) FROM versions v, json_each(v.earlier) e
                 WHERE NOT EXISTS (SELECT 1 FROM versions p WHERE p.seq = e.value
                                   AND p.prefix = v.prefix AND p.id = v.id)
                    OR v.earlier ->> 0 IS NOT v.previous",
                [],
                |row| row.get(0),
            )
            .unwrap();
        assert_eq!(dangling, 0);
        // A removed document keeps its removal: when it comes back, its
        // numbers go on instead of naming other bytes again.
        import(&store, &[("a", None)]);
        let everything = PruneRules {
            keep: None,
            keep_since_ms: Some(i64::MAX),
        };
        store.prune(&everything, false).unwrap();
        let left: Vec<(u32, bool)> = r
            .history(&key, None, 10)
            .unwrap()
            .iter()
            .map(|v| (v.number, v.removed()))
            .collect();
        assert_eq!(left, [(6, true)]);
        import(&store, &[("a", Some("# Back\nagain"))]);
        assert_eq!(r.history(&key, None, 1).unwrap()[0].number, 7);
        assert!(r.version(&key, 5).unwrap().is_none());
    }
}
