//! A load into an empty PostgreSQL database: the documents, with the search vectors import made, go in batches through binary COPY into `documents` (and, into a database without history, into `versions` as version 1; their links and the outlines of large ones beside), sent by a thread of their own while import reads on.
//!
//! Row by row, a document costs several round trips (about 2.5 ms each on
//! loopback with TLS: 25 s for 10k documents); a batch costs one COPY. The
//! COPY thread holds the import's connection for the length of the load,
//! so that PostgreSQL writes one batch while orchestra reads, parses and
//! indexes the next: sent from the writer, each batch stopped both.

use std::thread::JoinHandle;

use anyhow::{Context, Result, anyhow};
use crossbeam_channel::Sender;
use postgres::Client;
use postgres::binary_copy::BinaryCopyInWriter;
use postgres::types::{ToSql, Type};

use super::import_tx::{text, vector};
use super::pool::Pooled;
use super::words::TsVector;
use crate::doc::{ChangeKind, DocKey};
use crate::store::{NewDocument, kind_code};

/// Bytes of documents in a batch.
const BATCH_BYTES: usize = 2 << 20;
/// Batches waiting for the COPY thread: the import's memory does not grow
/// with the number of documents.
const BATCHES_WAITING: usize = 2;

/// A load: the batch being filled, the feed rows, and the COPY thread with
/// the import's connection (given back by [`Load::finish`] or
/// [`Load::stop`]).
pub(super) struct Load {
    documents: Vec<Row>,
    bytes: usize,
    changes: Vec<(&'static str, String, i16)>,
    batches: Option<Sender<Vec<Row>>>,
    copier: Option<JoinHandle<(Pooled, Result<()>)>>,
    /// Whether the COPY thread writes each document's version 1; else
    /// [`Load::write_rest`] numbers them after the versions already kept.
    first_versions: bool,
}

/// The COPY thread has stopped on an error, which [`Load::stop`] gives.
pub(super) struct Stopped;

/// A document as a batch holds it.
struct Row {
    prefix: &'static str,
    id: String,
    size: i64,
    mtime_ns: i64,
    hash: Vec<u8>,
    is_text: bool,
    title: String,
    description: Option<String>,
    frontmatter: Option<String>,
    body: Vec<u8>,
    body_start: i32,
    search: TsVector,
    fields: Vec<String>,
    links: Vec<super::links::Row>,
    outline: Option<Vec<u8>>,
}

impl Load {
    /// Starts the COPY thread of a load on `conn`, the import's connection
    /// inside its transaction, for documents under sequence `seq`.
    /// `first_versions` when `versions` is empty: the thread copies each
    /// document's version 1 too, rather than the commit reading every
    /// document back to number them.
    pub(super) fn start(conn: Pooled, seq: i64, first_versions: bool) -> Load {
        let (batches, received) = crossbeam_channel::bounded::<Vec<Row>>(BATCHES_WAITING);
        let copier = std::thread::spawn(move || {
            let mut conn = conn;
            for batch in received {
                let copied = match first_versions {
                    true => copy_versions(&mut conn, &batch, seq),
                    false => Ok(()),
                }
                .and_then(|()| copy_links(&mut conn, &batch))
                .and_then(|()| copy_outlines(&mut conn, &batch))
                .and_then(|()| copy_documents(&mut conn, batch, seq));
                if let Err(e) = copied {
                    return (conn, Err(e));
                }
            }
            (conn, Ok(()))
        });
        Load {
            documents: Vec::new(),
            bytes: 0,
            changes: Vec::new(),
            batches: Some(batches),
            copier: Some(copier),
            first_versions,
        }
    }

    /// Holds `doc`, and hands the batch to the COPY thread when it is full.
    pub(super) fn put(&mut self, doc: &NewDocument) -> std::result::Result<(), Stopped> {
        let search = vector(doc).into_owned();
        self.bytes += doc.body.len() + search.encoded_len() + doc.key.id.len() + 256;
        self.documents.push(Row {
            prefix: doc.key.prefix.as_str(),
            id: doc.key.id.clone(),
            size: doc.stat.size as i64,
            mtime_ns: doc.stat.mtime_ns,
            hash: doc.stat.hash.to_vec(),
            is_text: doc.is_text,
            title: text(&doc.title).into_owned(),
            description: doc.description.as_deref().map(|d| text(d).into_owned()),
            frontmatter: doc.frontmatter.clone(),
            body: doc.body.clone(),
            body_start: doc.body_start as i32,
            search,
            fields: doc
                .field_terms
                .split(' ')
                .filter(|t| !t.is_empty())
                .map(str::to_string)
                .collect(),
            links: super::links::rows_of(&doc.links),
            outline: doc.outline.clone(),
        });
        if self.bytes >= BATCH_BYTES {
            self.send()?;
        }
        Ok(())
    }

    fn send(&mut self) -> std::result::Result<(), Stopped> {
        self.bytes = 0;
        let batch = std::mem::take(&mut self.documents);
        match &self.batches {
            // The thread has ended: only after an error.
            Some(batches) => batches.send(batch).map_err(|_| Stopped),
            None => Err(Stopped),
        }
    }

    /// Ends the COPY thread after the batches it has, and gives back the
    /// connection with what the thread met; `None` once given.
    pub(super) fn stop(&mut self) -> Option<(Pooled, Result<()>)> {
        self.batches = None;
        let copier = self.copier.take()?;
        // A panic on the thread loses the connection: the server rolls the
        // transaction back when it closes.
        copier.join().ok()
    }

    /// Sends the last batch and ends the COPY thread: the connection, and
    /// whether every batch was copied.
    pub(super) fn finish(&mut self) -> Result<(Pooled, Result<()>)> {
        let _ = self.send();
        self.stop()
            .ok_or_else(|| anyhow!("the load's COPY thread was lost"))
    }

    /// Holds a feed row.
    pub(super) fn record(&mut self, kind: ChangeKind, key: &DocKey) {
        self.changes
            .push((key.prefix.as_str(), key.id.clone(), kind_code(kind) as i16));
    }

    /// After [`Load::finish`], on the connection it gave back: the feed
    /// rows by binary COPY, then, unless the COPY thread wrote them, each
    /// document's version (1, or the next after those of a document
    /// removed before) in one statement.
    pub(super) fn write_rest(&mut self, client: &mut Client, seq: i64) -> Result<()> {
        if !self.changes.is_empty() {
            let sink = client.copy_in("COPY changes (seq, prefix, id, kind) FROM STDIN BINARY")?;
            let mut writer =
                BinaryCopyInWriter::new(sink, &[Type::INT8, Type::TEXT, Type::TEXT, Type::INT2]);
            for (prefix, id, kind) in self.changes.drain(..) {
                writer.write(&[&seq, &prefix, &id, &kind])?;
            }
            writer.finish()?;
        }
        if self.first_versions {
            return Ok(());
        }
        client.batch_execute(
            "INSERT INTO versions (prefix, id, version, hash, size, title, is_text, seq)
             SELECT d.prefix, d.id, coalesce(v.last, 0) + 1, d.hash, d.size, d.title,
                 d.is_text, d.seq
             FROM documents d
             LEFT JOIN (SELECT prefix, id, max(version) AS last FROM versions
                        GROUP BY prefix, id) v
                 ON v.prefix = d.prefix AND v.id = d.id",
        )?;
        Ok(())
    }
}

/// Version 1 of each document of a batch into `versions`, by binary COPY.
fn copy_versions(client: &mut Client, batch: &[Row], seq: i64) -> Result<()> {
    if batch.is_empty() {
        return Ok(());
    }
    let sink = client.copy_in(
        "COPY versions (prefix, id, version, hash, size, title, is_text, seq)
         FROM STDIN BINARY",
    )?;
    let types = [
        Type::TEXT,
        Type::TEXT,
        Type::INT4,
        Type::BYTEA,
        Type::INT8,
        Type::TEXT,
        Type::BOOL,
        Type::INT8,
    ];
    let mut writer = BinaryCopyInWriter::new(sink, &types);
    for row in batch {
        writer
            .write(&[
                &row.prefix,
                &row.id,
                &1i32,
                &row.hash,
                &row.size,
                &row.title,
                &row.is_text,
                &seq,
            ])
            .with_context(|| format!("cannot send the version of {}/{}", row.prefix, row.id))?;
    }
    writer.finish()?;
    Ok(())
}

/// The links and names of a batch's documents, by binary COPY.
fn copy_links(client: &mut Client, batch: &[Row]) -> Result<()> {
    let documents: Vec<(&'static str, &str, &[super::links::Row])> = batch
        .iter()
        .map(|row| (row.prefix, row.id.as_str(), row.links.as_slice()))
        .collect();
    super::links::copy(client, &documents)
}

/// The outlines of a batch's large documents, by binary COPY.
fn copy_outlines(client: &mut Client, batch: &[Row]) -> Result<()> {
    let documents: Vec<(&'static str, &str, &[u8])> = batch
        .iter()
        .filter_map(|row| Some((row.prefix, row.id.as_str(), row.outline.as_deref()?)))
        .collect();
    super::outlines::copy(client, &documents)
}

/// One batch of documents into `documents`, by binary COPY.
fn copy_documents(client: &mut Client, batch: Vec<Row>, seq: i64) -> Result<()> {
    if batch.is_empty() {
        return Ok(());
    }
    let sink = client.copy_in(
        "COPY documents (prefix, id, size, mtime_ns, hash, is_text, title,
             description, frontmatter, seq, body, body_start, search, fields)
         FROM STDIN BINARY",
    )?;
    let types = [
        Type::TEXT,
        Type::TEXT,
        Type::INT8,
        Type::INT8,
        Type::BYTEA,
        Type::BOOL,
        Type::TEXT,
        Type::TEXT,
        Type::TEXT,
        Type::INT8,
        Type::BYTEA,
        Type::INT4,
        Type::TS_VECTOR,
        Type::TEXT_ARRAY,
    ];
    let mut writer = BinaryCopyInWriter::new(sink, &types);
    for row in batch {
        let values: [&(dyn ToSql + Sync); 14] = [
            &row.prefix,
            &row.id,
            &row.size,
            &row.mtime_ns,
            &row.hash,
            &row.is_text,
            &row.title,
            &row.description,
            &row.frontmatter,
            &seq,
            &row.body,
            &row.body_start,
            &row.search,
            &row.fields,
        ];
        writer
            .write(&values)
            .with_context(|| format!("cannot send {}/{}", row.prefix, row.id))?;
    }
    writer.finish()?;
    Ok(())
}
