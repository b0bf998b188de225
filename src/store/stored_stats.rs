//! What import compares its walk with, on either backend: the stored size, mtime and hash of every document in key order, read a chunk at a time from one snapshot.
//!
//! A backend gives the chunks ([`StatChunks`]): the rows after a key, read
//! on a connection of its own in a read transaction begun after the import
//! took its lock, so the scan sees the database exactly as the import found
//! it, whatever the import writes meanwhile. This module holds one chunk at
//! a time, so the scan's memory does not grow with the number of documents.

use std::collections::VecDeque;

use anyhow::Result;

use super::FileStat;
use crate::doc::DocKey;

/// Rows read per chunk: enough to make the seek of each chunk nothing
/// beside its rows, few enough to hold (about 100 bytes each).
pub(in crate::store) const CHUNK: usize = 2048;

/// A backend's reader of stored stats, in chunks, from one snapshot.
pub(in crate::store) trait StatChunks: Send {
    /// Appends to `into` the stats of at most [`CHUNK`] documents after
    /// `after` (from the first when `None`), in key order.
    fn read_after(
        &mut self,
        after: Option<&DocKey>,
        into: &mut VecDeque<(DocKey, FileStat)>,
    ) -> Result<()>;

    /// Ends the snapshot (a read transaction: nothing to keep).
    fn finish(&mut self);
}

/// An iterator over `(key, stat)` of every stored document, in key order.
pub struct StoredStats {
    source: Option<Box<dyn StatChunks>>,
    /// After `--replace`, no stored mtime may match a file, so import reads
    /// and compares every file: equal sizes and mtimes say nothing then.
    stale: bool,
    buffer: VecDeque<(DocKey, FileStat)>,
    last: Option<DocKey>,
}

impl StoredStats {
    /// A scan of what `source` reads; with `stale`, no mtime matches.
    pub(in crate::store) fn new(source: Box<dyn StatChunks>, stale: bool) -> StoredStats {
        StoredStats {
            source: Some(source),
            stale,
            buffer: VecDeque::with_capacity(CHUNK),
            last: None,
        }
    }

    /// A scan of nothing: for a load into an empty store, or a dry run
    /// without one.
    pub fn empty() -> StoredStats {
        StoredStats {
            source: None,
            stale: false,
            buffer: VecDeque::new(),
            last: None,
        }
    }

    /// Reads the next chunk after the last key read; false at the end.
    fn fill(&mut self) -> Result<bool> {
        let Some(source) = self.source.as_mut() else {
            return Ok(false);
        };
        source.read_after(self.last.as_ref(), &mut self.buffer)?;
        if self.stale {
            for (_, stat) in &mut self.buffer {
                stat.mtime_ns = i64::MIN;
            }
        }
        self.last = self.buffer.back().map(|(key, _)| key.clone());
        if self.buffer.len() < CHUNK {
            // The last chunk: end the read transaction now rather than at drop.
            self.finish();
        }
        Ok(!self.buffer.is_empty())
    }

    fn finish(&mut self) {
        if let Some(mut source) = self.source.take() {
            source.finish();
        }
    }
}

impl Iterator for StoredStats {
    type Item = Result<(DocKey, FileStat)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.buffer.is_empty() {
            match self.fill() {
                Ok(true) => {}
                Ok(false) => return None,
                Err(e) => {
                    self.finish();
                    return Some(Err(e));
                }
            }
        }
        self.buffer.pop_front().map(Ok)
    }
}

impl Drop for StoredStats {
    fn drop(&mut self) {
        // The pooled connection must not go back to the pool inside the
        // transaction: every later read on it would see this old snapshot.
        self.finish();
    }
}
