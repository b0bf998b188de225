//! The comparison of the walk with the store: two streams in key order, merged.
//!
//! A file whose size and mtime equal the stored document's is unchanged and
//! never read; any other file goes to the readers; a stored document that
//! the walk passed without meeting is gone, unless it sits in a folder that
//! could not be listed this time. Neither side is held whole: memory does
//! not grow with the number of documents. The stored side is
//! `store::StoredStats`; any iterator in key order will do.

use std::cmp::Ordering;
use std::iter::Peekable;
use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use crossbeam_channel::{Receiver, Sender};

use super::Warning;
use super::read::{Candidate, Outcome};
use super::walk::{Found, Walked};
use crate::doc::DocKey;
use crate::store::FileStat;

/// What the comparison decided by itself; the rest went to the readers and
/// the writer.
#[derive(Default)]
pub(super) struct Merged {
    pub unchanged: u64,
    pub skipped: u64,
    pub warnings: Vec<Warning>,
}

/// Where the comparison sends its decisions.
pub(super) struct Decisions<'a> {
    /// Files to read.
    pub read: Sender<Candidate>,
    /// Removals, straight to the writer.
    pub write: Sender<Outcome>,
    pub max_file_size: u64,
    /// A path as the user named it (the walk sees canonical ones).
    pub shown: &'a (dyn Fn(&Path) -> PathBuf + Sync),
}

/// Merges the walk with the stored stats. Returns early, with what it
/// counted, when the readers or the writer stopped (the writer has the
/// error to report).
pub(super) fn merge<S>(walked: Receiver<Walked>, stored: S, to: Decisions<'_>) -> Result<Merged>
where
    S: Iterator<Item = Result<(DocKey, FileStat)>>,
{
    let mut merge = Merge {
        stored: stored.peekable(),
        unreadable: Vec::new(),
        last: None,
        merged: Merged::default(),
        to,
    };
    for walked in walked {
        match walked {
            Walked::Unreadable(dir) => merge.unreadable.push(dir),
            Walked::Files(batch) => {
                let Ok(batch) = batch.recv() else {
                    bail!("the walk failed: a stat thread stopped");
                };
                for found in batch {
                    if !merge.file(found)? {
                        return Ok(merge.merged);
                    }
                }
            }
        }
    }
    // What is left of the store, the walk never met.
    merge.stored_before(None)?;
    Ok(merge.merged)
}

struct Merge<'a, S: Iterator> {
    stored: Peekable<S>,
    /// Folders the walk could not list: stored documents under them stay.
    unreadable: Vec<DocKey>,
    last: Option<DocKey>,
    merged: Merged,
    to: Decisions<'a>,
}

impl<S> Merge<'_, S>
where
    S: Iterator<Item = Result<(DocKey, FileStat)>>,
{
    /// Decides one file; false when nobody listens any more.
    fn file(&mut self, Found { key, path, stat }: Found) -> Result<bool> {
        match self.last.as_ref().map(|last| key.cmp(last)) {
            None | Some(Ordering::Greater) => {}
            // Two paths, one key: the first wins.
            Some(Ordering::Equal) => return Ok(true),
            // The merge would remove and re-add documents: never go on.
            Some(Ordering::Less) => bail!("the walk left key order at {key}: a bug in orchestra"),
        }
        self.last = Some(key.clone());
        let Some(old) = self.stored_before(Some(&key))? else {
            return Ok(false);
        };
        let max = self.to.max_file_size;
        let (size, mtime_ns) = match stat {
            Ok(stat) => stat,
            Err(e) => {
                // The stored copy is kept.
                self.skip(&path, format!("cannot read: {e}"));
                return Ok(true);
            }
        };
        if size > max {
            // Like an unreadable file: the stored copy is kept.
            self.skip(
                &path,
                format!("{size} bytes is over the limit of {max}: skipped"),
            );
            return Ok(true);
        }
        match old {
            Some(old) if old.size == size && old.mtime_ns == mtime_ns => {
                self.merged.unchanged += 1;
                Ok(true)
            }
            _ => Ok(self
                .to
                .read
                .send(Candidate {
                    key,
                    path,
                    mtime_ns,
                    old,
                })
                .is_ok()),
        }
    }

    fn skip(&mut self, path: &Path, reason: String) {
        self.merged.warnings.push(Warning {
            path: (self.to.shown)(path),
            reason,
            skipped: true,
        });
        self.merged.skipped += 1;
    }

    /// Passes the stored documents before `key` (all that are left, with
    /// `None`), each gone unless under an unreadable folder, and returns the
    /// stored stat of `key` itself; `None` when nobody listens any more.
    fn stored_before(&mut self, key: Option<&DocKey>) -> Result<Option<Option<FileStat>>> {
        loop {
            let order = match self.stored.peek() {
                None => return Ok(Some(None)),
                Some(Err(_)) => match self.stored.next() {
                    Some(Err(e)) => return Err(e),
                    _ => unreachable!("peeked an error"),
                },
                Some(Ok((stored, _))) => key.map_or(Ordering::Less, |key| stored.cmp(key)),
            };
            match order {
                Ordering::Greater => return Ok(Some(None)),
                Ordering::Equal => {
                    let stat = self
                        .stored
                        .next()
                        .and_then(Result::ok)
                        .map(|(_, stat)| stat);
                    return Ok(Some(stat));
                }
                Ordering::Less => {
                    let Some(Ok((gone, _))) = self.stored.next() else {
                        unreachable!("peeked a row");
                    };
                    if !self.unreadable.iter().any(|dir| is_under(&gone, dir))
                        && self.to.write.send(Outcome::Removed(gone)).is_err()
                    {
                        return Ok(None);
                    }
                }
            }
        }
    }
}

/// Whether `key` lies in the folder `dir` of its prefix.
fn is_under(key: &DocKey, dir: &DocKey) -> bool {
    key.prefix == dir.prefix
        && (dir.id.is_empty()
            || key
                .id
                .strip_prefix(&dir.id)
                .is_some_and(|rest| rest.starts_with('/')))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::Prefix;

    fn key(text: &str) -> DocKey {
        let (prefix, id) = text.split_once('/').unwrap();
        DocKey::new(Prefix::parse(prefix).unwrap(), id)
    }

    fn stat(size: u64) -> FileStat {
        FileStat {
            size,
            mtime_ns: 1,
            hash: [0; 32],
        }
    }

    /// What the walk meets, in its order: `"notes/a 5"` a file of 5 bytes
    /// (mtime 1), `"notes/a !"` a file that cannot be statted, `"notes/d/"`
    /// a folder that cannot be listed.
    fn walked(events: &[&str]) -> Receiver<Walked> {
        let (tx, rx) = crossbeam_channel::unbounded();
        for event in events {
            if let Some(dir) = event.strip_suffix('/') {
                tx.send(Walked::Unreadable(key(dir))).unwrap();
                continue;
            }
            let (name, size) = event.split_once(' ').unwrap();
            let stat = match size {
                "!" => Err(std::io::Error::other("gone")),
                size => Ok((size.parse().unwrap(), 1)),
            };
            let (reply, batch) = crossbeam_channel::bounded(1);
            reply
                .send(vec![Found {
                    key: key(name),
                    path: PathBuf::from(name),
                    stat,
                }])
                .unwrap();
            tx.send(Walked::Files(batch)).unwrap();
        }
        rx
    }

    /// (files to read, documents removed, unchanged, skipped)
    fn run(stored: &[(&str, u64)], events: &[&str]) -> (Vec<String>, Vec<String>, u64, u64) {
        let (read, read_rx) = crossbeam_channel::unbounded();
        let (write, write_rx) = crossbeam_channel::unbounded();
        let shown = |path: &Path| path.to_path_buf();
        let stored = stored.iter().map(|&(k, size)| Ok((key(k), stat(size))));
        let merged = merge(
            walked(events),
            stored,
            Decisions {
                read,
                write,
                max_file_size: 100,
                shown: &shown,
            },
        )
        .unwrap();
        let read = read_rx.try_iter().map(|c| c.key.to_string()).collect();
        let removed = write_rx
            .try_iter()
            .map(|outcome| match outcome {
                Outcome::Removed(key) => key.to_string(),
                _ => panic!("the comparison only removes"),
            })
            .collect();
        (read, removed, merged.unchanged, merged.skipped)
    }

    #[test]
    fn the_walk_and_the_store_merge_into_the_changes() {
        // (stored, walked, (read, removed, unchanged, skipped))
        type Case<'a> = (&'a [(&'a str, u64)], &'a [&'a str], Expected<'a>);
        type Expected<'a> = (&'a [&'a str], &'a [&'a str], u64, u64);
        let cases: &[Case] = &[
            // Nothing stored: every file is read.
            (
                &[],
                &["docs/a 1", "notes/b 2"],
                (&["docs/a", "notes/b"], &[], 0, 0),
            ),
            // Nothing walked: everything stored is gone.
            (
                &[("docs/a", 1), ("notes/b", 2)],
                &[],
                (&[], &["docs/a", "notes/b"], 0, 0),
            ),
            // Same size and mtime: unchanged; another size: read.
            (
                &[("docs/a", 1), ("docs/b", 2), ("docs/c", 3)],
                &["docs/a 1", "docs/b 9", "docs/c 3"],
                (&["docs/b"], &[], 2, 0),
            ),
            // New, gone and kept interleaved, across prefixes.
            (
                &[("docs/b", 1), ("features/x", 1), ("notes/z", 1)],
                &["docs/a 1", "docs/b 1", "docs/c 1", "notes/y 1"],
                (
                    &["docs/a", "docs/c", "notes/y"],
                    &["features/x", "notes/z"],
                    1,
                    0,
                ),
            ),
            // A file that cannot be statted, or is over the limit: skipped, kept.
            (
                &[("docs/a", 1), ("docs/b", 1)],
                &["docs/a !", "docs/b 101"],
                (&[], &[], 0, 2),
            ),
            // An unreadable folder keeps what is stored under it, and only that.
            (
                &[
                    ("docs/d", 1),
                    ("docs/d/x", 1),
                    ("docs/d/y/z", 1),
                    ("docs/d0", 1),
                    ("docs/e", 1),
                ],
                &["docs/d/", "docs/e 1"],
                (&[], &["docs/d", "docs/d0"], 1, 0),
            ),
            // An unreadable prefix folder keeps the whole prefix.
            (
                &[("docs/a", 1), ("notes/b", 1)],
                &["docs//", "notes/c 1"],
                (&["notes/c"], &["notes/b"], 0, 0),
            ),
            // Two paths, one key: the first wins.
            (
                &[("docs/a", 1)],
                &["docs/a 1", "docs/a 2"],
                (&[], &[], 1, 0),
            ),
        ];
        for (stored, events, (read, removed, unchanged, skipped)) in cases {
            let got = run(stored, events);
            let want = (
                read.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
                removed.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
                *unchanged,
                *skipped,
            );
            assert_eq!(got, want, "stored {stored:?}, walked {events:?}");
        }
    }

    #[test]
    fn a_walk_out_of_key_order_fails_the_import() {
        let (read, _read_rx) = crossbeam_channel::unbounded();
        let (write, _write_rx) = crossbeam_channel::unbounded();
        let shown = |path: &Path| path.to_path_buf();
        let err = merge(
            walked(&["docs/b 1", "docs/a 1"]),
            std::iter::empty(),
            Decisions {
                read,
                write,
                max_file_size: 100,
                shown: &shown,
            },
        )
        .err()
        .unwrap();
        assert!(err.to_string().contains("key order"), "{err}");
    }

    #[test]
    fn under_a_folder() {
        let dir = DocKey::new(Prefix::Docs, "adr");
        assert!(is_under(&DocKey::new(Prefix::Docs, "adr/0001"), &dir));
        assert!(!is_under(&DocKey::new(Prefix::Docs, "adr2/0001"), &dir));
        assert!(!is_under(&DocKey::new(Prefix::Notes, "adr/0001"), &dir));
        assert!(is_under(
            &DocKey::new(Prefix::Docs, "x"),
            &DocKey::new(Prefix::Docs, "")
        ));
    }
}
