//! A load into an empty PostgreSQL database: the documents, with the search vectors import made, go in batches through binary COPY into `documents`, and at the commit into `versions` in one statement.
//!
//! Row by row, a document costs several round trips (about 2.5 ms each on
//! loopback with TLS: 25 s for 10k documents); a batch costs one COPY.

use anyhow::{Context, Result};
use postgres::Client;
use postgres::binary_copy::BinaryCopyInWriter;
use postgres::types::{ToSql, Type};

use super::import_tx::{text, vector};
use super::words::TsVector;
use crate::doc::{ChangeKind, DocKey};
use crate::store::{NewDocument, kind_code};

/// Bytes of documents held before they are sent: the import's memory does
/// not grow with the number of documents.
const BATCH_BYTES: usize = 8 << 20;

/// What a load holds until its next batch is sent.
#[derive(Default)]
pub(super) struct Load {
    documents: Vec<Row>,
    bytes: usize,
    changes: Vec<(&'static str, String, i16)>,
}

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
}

impl Load {
    /// Holds `doc`; whether the batch is full and must be sent.
    pub(super) fn put(&mut self, doc: &NewDocument) -> bool {
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
        });
        self.bytes >= BATCH_BYTES
    }

    /// Holds a feed row.
    pub(super) fn record(&mut self, kind: ChangeKind, key: &DocKey) {
        self.changes
            .push((key.prefix.as_str(), key.id.clone(), kind_code(kind) as i16));
    }

    /// Sends what is held: the documents to `documents`, the feed rows to
    /// `changes`, each as one binary COPY.
    pub(super) fn send(&mut self, client: &mut Client, seq: i64) -> Result<()> {
        if !self.documents.is_empty() {
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
            for row in self.documents.drain(..) {
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
            self.bytes = 0;
        }
        if !self.changes.is_empty() {
            let sink = client.copy_in("COPY changes (seq, prefix, id, kind) FROM STDIN BINARY")?;
            let mut writer =
                BinaryCopyInWriter::new(sink, &[Type::INT8, Type::TEXT, Type::TEXT, Type::INT2]);
            for (prefix, id, kind) in self.changes.drain(..) {
                writer.write(&[&seq, &prefix, &id, &kind])?;
            }
            writer.finish()?;
        }
        Ok(())
    }

    /// Sends the last batch, then gives each document of the load its
    /// version: 1, or the next after those of a document removed before.
    pub(super) fn finish(&mut self, client: &mut Client, seq: i64) -> Result<()> {
        self.send(client, seq)?;
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
