//! A load into an empty PostgreSQL database: the documents go in batches through binary COPY into a staging table, and at the commit into `documents` with their search vectors, and into `versions`, in two statements.
//!
//! Row by row, a document costs several round trips (about 2.5 ms each on
//! loopback with TLS: 25 s for 10k documents); a batch costs one COPY.

use anyhow::{Context, Result};
use postgres::Client;
use postgres::binary_copy::BinaryCopyInWriter;
use postgres::types::{ToSql, Type};

use super::import_tx::{search_vector, text};
use crate::doc::{ChangeKind, DocKey};
use crate::store::{NewDocument, kind_code};

/// Bytes of documents held before they are sent: the import's memory does
/// not grow with the number of documents.
const BATCH_BYTES: usize = 8 << 20;

/// The staging table of a load, gone at its commit.
pub(super) const STAGING: &str = "CREATE TEMP TABLE load_documents (
    prefix text NOT NULL, id text NOT NULL, size bigint NOT NULL, mtime_ns bigint NOT NULL,
    hash bytea NOT NULL, is_text boolean NOT NULL, title text NOT NULL, description text,
    frontmatter text, seq bigint NOT NULL, body bytea NOT NULL, body_start integer NOT NULL,
    indexed text NOT NULL, fields text[] NOT NULL
) ON COMMIT DROP;
ALTER TABLE load_documents ALTER COLUMN body SET STORAGE EXTERNAL,
    ALTER COLUMN indexed SET STORAGE EXTERNAL";

/// What a load holds until its next batch is sent.
#[derive(Default)]
pub(super) struct Load {
    documents: Vec<Row>,
    bytes: usize,
    changes: Vec<(&'static str, String, i16)>,
}

/// A document as the staging table holds it.
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
    indexed: String,
    fields: Vec<String>,
}

impl Load {
    /// Holds `doc`, whose searched text is `indexed`; whether the batch is
    /// full and must be sent.
    pub(super) fn put(&mut self, doc: &NewDocument, indexed: String) -> bool {
        self.bytes += doc.body.len() + indexed.len() + doc.key.id.len() + 256;
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
            indexed,
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

    /// Sends what is held: the documents to the staging table, the feed rows
    /// to `changes`, each as one binary COPY.
    pub(super) fn send(&mut self, client: &mut Client, seq: i64) -> Result<()> {
        if !self.documents.is_empty() {
            let sink = client.copy_in(
                "COPY load_documents (prefix, id, size, mtime_ns, hash, is_text, title,
                     description, frontmatter, seq, body, body_start, indexed, fields)
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
                Type::TEXT,
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
                    &row.indexed,
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

    /// Sends the last batch, then moves the staged documents into
    /// `documents` with their search vectors, and gives each its next
    /// version (1, or after the versions of a document removed before).
    pub(super) fn finish(&mut self, client: &mut Client, seq: i64) -> Result<()> {
        self.send(client, seq)?;
        let vector = search_vector("prefix || '/' || id", "title", "description", "indexed");
        client.batch_execute(&format!(
            "INSERT INTO documents (prefix, id, size, mtime_ns, hash, is_text, title,
                 description, frontmatter, seq, body, body_start, search, fields)
             SELECT prefix, id, size, mtime_ns, hash, is_text, title, description,
                 frontmatter, seq, body, body_start, {vector}, fields
             FROM load_documents;
             INSERT INTO versions (prefix, id, version, hash, size, title, is_text, seq)
             SELECT l.prefix, l.id, coalesce(v.last, 0) + 1, l.hash, l.size, l.title,
                 l.is_text, l.seq
             FROM load_documents l
             LEFT JOIN (SELECT prefix, id, max(version) AS last FROM versions
                        GROUP BY prefix, id) v
                 ON v.prefix = l.prefix AND v.id = l.id;"
        ))?;
        Ok(())
    }
}
