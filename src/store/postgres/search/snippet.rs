//! Snippets on PostgreSQL, made by orchestra: the window of a text around its best match of the query's phrases, found with the words the vectors hold, clipped by the SQLite store's rule; and a document's lead when no match is shown.

use std::ops::Range;

use super::query::Phrase;
use super::{INDEXED_BODY, LEAD_BYTES};
use crate::store::postgres::words::for_each_word_at;
use crate::store::sqlite::{CLOSE, OPEN, clip};

/// Words in a snippet's window, as SQLite's (`SNIPPET_TOKENS`).
const SNIPPET_WORDS: usize = 32;

/// The text a snippet is made from, of a body's bytes past its
/// frontmatter: its first [`INDEXED_BODY`] bytes, whole characters only,
/// NUL as a space (PostgreSQL's `text` holds no NUL).
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

/// The snippet of `text` around its best match of `phrases`, or `None`
/// when none matches, made as FTS5's `snippet()` makes SQLite's: the window
/// of [`SNIPPET_WORDS`] words that holds the most distinct phrases (then the
/// most matches; the first such), each match marked whole, the text before
/// the first word shown when the window starts there (a heading's `#`) and
/// `…` where words were cut; then `clip` makes it one line.
pub(super) fn snippet(text: &str, phrases: &[Phrase]) -> Option<String> {
    let mut words: Vec<(Range<usize>, String)> = Vec::new();
    for_each_word_at(text, &mut String::new(), |range, lexeme| {
        words.push((range, lexeme.to_string()))
    });
    // Every match: (its first word, its number of words, which phrase).
    let mut matches: Vec<(usize, usize, usize)> = Vec::new();
    for (which, phrase) in phrases.iter().enumerate() {
        let n = phrase.words.len();
        for first in 0..words.len().saturating_sub(n - 1) {
            if (0..n).all(|i| phrase.matches(i, &words[first + i].1)) {
                matches.push((first, n, which));
            }
        }
    }
    if matches.is_empty() {
        return None;
    }
    matches.sort_unstable();
    // The best window starts a quarter of its words before a match. Its
    // score: the distinct phrases wholly inside, then the matches; the
    // matches are sorted, so a window looks only at its own.
    let lead_in = SNIPPET_WORDS / 4;
    let mut seen = vec![false; phrases.len()];
    let mut score = |start: usize| {
        seen.iter_mut().for_each(|s| *s = false);
        let (mut distinct, mut inside) = (0, 0);
        let from = matches.partition_point(|m| m.0 < start);
        for &(first, n, which) in &matches[from..] {
            if first >= start + SNIPPET_WORDS {
                break;
            }
            if first + n <= start + SNIPPET_WORDS {
                inside += 1;
                if !seen[which] {
                    seen[which] = true;
                    distinct += 1;
                }
            }
        }
        (distinct, inside)
    };
    let mut best = (0, (0, 0));
    let mut tried = None;
    for &(first, _, _) in &matches {
        let start = first.saturating_sub(lead_in);
        if tried == Some(start) {
            continue;
        }
        tried = Some(start);
        let scored = score(start);
        if scored > best.1 {
            best = (start, scored);
        }
    }
    let start = best.0;
    let end = (start + SNIPPET_WORDS).min(words.len());
    // Where marks open and close: one per match, overlapping ones merged.
    let (mut opens, mut closes) = (vec![0; words.len()], vec![0; words.len()]);
    for &(first, n, _) in &matches {
        if first >= start && first + n <= end {
            opens[first] += 1;
            closes[first + n - 1] += 1;
        }
    }
    let mut out = String::with_capacity(SNIPPET_WORDS * 10);
    match start {
        0 => out.push_str(&text[..words[0].0.start]),
        _ => out.push('…'),
    }
    let mut at = words[start].0.start;
    let mut depth = 0;
    for i in start..end {
        let range = &words[i].0;
        out.push_str(&text[at..range.start]);
        if depth == 0 && opens[i] > 0 {
            out.push(OPEN);
        }
        depth += opens[i];
        out.push_str(&text[range.clone()]);
        depth -= closes[i];
        if depth == 0 && closes[i] > 0 {
            out.push(CLOSE);
        }
        at = range.end;
    }
    match end == words.len() {
        true => out.push_str(&text[at..]),
        false => out.push('…'),
    }
    Some(clip(&out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn phrases(list: &[(&str, bool)]) -> Vec<Phrase> {
        list.iter()
            .map(|(text, prefix)| Phrase {
                words: crate::store::postgres::words::words(text),
                prefix: *prefix,
            })
            .collect()
    }

    #[test]
    fn a_snippet_marks_whole_matches_in_the_best_window() {
        let hay = "hay ".repeat(60);
        type Case<'a> = (&'a str, &'a [(&'a str, bool)], Option<&'a str>);
        let cases: &[Case] = &[
            ("# A needle.", &[("needle", false)], Some("# A **needle**.")),
            (
                "x y needle z",
                &[("needle", false)],
                Some("x y **needle** z"),
            ),
            (
                "See FEAT-0012 now",
                &[("FEAT-0012", false)],
                Some("See **FEAT-0012** now"),
            ),
            ("Café au lait", &[("cafe", false)], Some("**Café** au lait")),
            (
                "synchronize it",
                &[("sync", true)],
                Some("**synchronize** it"),
            ),
            ("sync it", &[("synchronize", false)], None),
            // A phrase is marked where it occurs whole, not word by word.
            (
                "lantern here, then amber lantern",
                &[("amber lantern", false)],
                Some("lantern here, then **amber lantern**"),
            ),
            ("no match here", &[("needle", false)], None),
        ];
        for (text, query, expected) in cases {
            assert_eq!(
                snippet(text, &phrases(query)).as_deref(),
                *expected,
                "{text:?}"
            );
        }
        // Far into a body: a few words before the match, `…` where cut.
        let late = format!("{hay}needle stack {hay}");
        let shown = snippet(&late, &phrases(&[("needle", false)])).unwrap();
        assert!(shown.starts_with("…hay hay"), "{shown}");
        assert!(shown.contains("hay **needle** stack"), "{shown}");
        assert!(shown.ends_with('…'), "{shown}");
        // A body full of matches: the first window.
        let many = "sync ".repeat(50_000);
        let shown = snippet(&many, &phrases(&[("sync", false)])).unwrap();
        assert!(shown.starts_with("**sync** **sync**"), "{shown}");
        // The window with both words wins over the first match.
        let both = format!("kiwi {hay}kiwi mango");
        let shown = snippet(&both, &phrases(&[("kiwi", false), ("mango", false)])).unwrap();
        assert!(shown.ends_with("**kiwi** **mango**"), "{shown}");
    }
}
