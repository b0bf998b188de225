//! Reading a changed file on a reader thread: its bytes, hash, frontmatter, title and description.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use super::Warning;
use crate::doc::DocKey;
use crate::frontmatter;
use crate::store::{FileStat, NewDocument};

/// A Markdown file found by the walk that must be read.
pub(super) struct Candidate {
    pub key: DocKey,
    pub path: PathBuf,
    pub mtime_ns: i64,
    pub old: Option<FileStat>,
}

/// What became of a file or a stored document, for the writer.
pub(super) enum Outcome {
    /// New bytes; `updated` when a stored document had the key.
    Put {
        doc: Box<NewDocument>,
        updated: bool,
        warning: Option<Warning>,
    },
    /// Same bytes as stored, new mtime.
    Touch(DocKey, i64),
    /// Unreadable now, or grown past the limit since the walk: the store
    /// keeps what it has.
    Skipped(Warning),
    /// Stored, and no longer in the project.
    Removed(DocKey),
}

pub(super) fn read_candidate(
    candidate: Candidate,
    max: u64,
    shown: &dyn Fn(&Path) -> PathBuf,
) -> Outcome {
    let warning = |reason: String, skipped: bool| Warning {
        path: shown(&candidate.path),
        reason,
        skipped,
    };
    let mut body = Vec::new();
    // Read at most one byte past the limit: a file that grew since the walk
    // cannot make us hold more than that.
    let read = File::open(&candidate.path)
        .and_then(|file| file.take(max.saturating_add(1)).read_to_end(&mut body));
    if let Err(e) = read {
        return Outcome::Skipped(warning(format!("cannot read: {e}: skipped"), true));
    }
    if body.len() as u64 > max {
        return Outcome::Skipped(warning(
            format!("over the limit of {max} bytes: skipped"),
            true,
        ));
    }
    let stat = FileStat {
        size: body.len() as u64,
        mtime_ns: candidate.mtime_ns,
        hash: *blake3::hash(&body).as_bytes(),
    };
    let updated = candidate.old.is_some();
    if candidate.old.is_some_and(|old| old.hash == stat.hash) {
        return Outcome::Touch(candidate.key, candidate.mtime_ns);
    }
    let (is_text, extracted, note) = match std::str::from_utf8(&body) {
        Ok(text) => {
            let extracted = frontmatter::extract(text);
            let note = if body.is_empty() {
                Some("empty file: imported".to_string())
            } else {
                extracted.warning.clone()
            };
            (true, extracted, note)
        }
        Err(e) => (
            false,
            frontmatter::Extracted::default(),
            Some(format!("not UTF-8 ({e}): imported as binary")),
        ),
    };
    let title = clip(extracted.title.unwrap_or_else(|| candidate.key.id.clone()));
    let doc = NewDocument::new(
        candidate.key,
        stat,
        is_text,
        title,
        extracted.description.map(clip),
        extracted.frontmatter.map(|v| v.to_string()),
        body,
    );
    Outcome::Put {
        doc: Box::new(doc),
        updated,
        warning: note.map(|note| warning(note, false)),
    }
}

/// Titles and descriptions are listed on every page: a frontmatter that
/// holds a book in its `title` must not make pages huge. The document's own
/// bytes are never cut.
const MAX_LABEL: usize = 1024;

fn clip(mut label: String) -> String {
    if label.len() > MAX_LABEL {
        let mut end = MAX_LABEL;
        while !label.is_char_boundary(end) {
            end -= 1;
        }
        label.truncate(end);
    }
    label
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_clipped_on_a_char_boundary() {
        assert_eq!(clip("short".into()), "short");
        let long = "é".repeat(MAX_LABEL);
        let clipped = clip(long);
        assert_eq!(clipped.len(), MAX_LABEL);
        assert!(clipped.chars().all(|c| c == 'é'));
    }
}
