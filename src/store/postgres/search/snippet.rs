//! Snippets on PostgreSQL: `ts_headline`'s fragment put back in its text (the ends the headline drops, `…` where text goes on) and clipped by the SQLite store's rule, and a document's lead when no match is shown.

use super::{INDEXED_BODY, LEAD_BYTES};
use crate::store::sqlite::{CLOSE, OPEN, clip};

/// What the search vector was made from, of a body's bytes past its
/// frontmatter (as `import_tx` makes it): its first [`INDEXED_BODY`] bytes,
/// whole characters only, NUL as a space (PostgreSQL's `text` holds no NUL).
pub(super) fn indexed_text(head: &[u8]) -> String {
    let head = &head[..head.len().min(INDEXED_BODY)];
    let text = match std::str::from_utf8(head) {
        Ok(text) => text,
        Err(e) => std::str::from_utf8(&head[..e.valid_up_to()]).unwrap_or_default(),
    };
    text.replace('\0', " ")
}

/// The start of a document's Markdown, clipped like a snippet, as the
/// SQLite store's `lead`: empty for a binary document.
pub(super) fn lead(head: Option<&[u8]>) -> String {
    let Some(head) = head else {
        return String::new();
    };
    let text = String::from_utf8_lossy(&head[..head.len().min(LEAD_BYTES)]);
    // The cut may have split the last character.
    clip(text.trim_end_matches('\u{FFFD}'))
}

/// The snippet of `text` from its headline `marked`, or `None` when the
/// headline marks no match. As FTS5's snippet does, an end of the text is
/// shown as it is (`# Title`, `the end.`: `ts_headline` leaves out what is
/// not a word there), and a `…` says that the text goes on; then `clip`
/// makes it one line.
pub(super) fn placed(text: &str, marked: &str) -> Option<String> {
    if !marked.contains(OPEN) {
        return None;
    }
    // `FEAT-0012` is two tokens, so two marks side by side: one match.
    let marked = marked.replace(&format!("{CLOSE}{OPEN}"), "");
    let marked = marked.trim();
    let plain: String = marked
        .chars()
        .filter(|&c| c != OPEN && c != CLOSE)
        .collect();
    // What stands before and after the fragment: the text itself when it
    // holds no word (punctuation, a heading's `#`), else `…`.
    let end = |rest: &str| match rest.chars().any(char::is_alphanumeric) {
        true => "…".to_string(),
        false => rest.to_string(),
    };
    let (before, after) = match text.find(&plain) {
        Some(at) => (end(&text[..at]), end(&text[at + plain.len()..])),
        // The headline is not the text verbatim (`ts_headline` writes an
        // HTML tag as a space): compare the words at its ends instead.
        None => {
            let words = |s: &str| {
                s.split(|c: char| !c.is_alphanumeric())
                    .filter(|w| !w.is_empty())
                    .map(str::to_string)
                    .collect::<Vec<_>>()
            };
            let (fragment, all) = (words(&plain), words(text));
            let cut = |same: bool| {
                if same {
                    String::new()
                } else {
                    "…".to_string()
                }
            };
            (
                cut(fragment.first() == all.first()),
                cut(fragment.last() == all.last()),
            )
        }
    };
    Some(clip(&format!("{before}{marked}{after}")))
}
