//! What a snippet shows: one short line around the first match, the marks FTS5 puts around matches made `**`; for both stores.

/// Characters a snippet keeps around the best match.
pub const SNIPPET_CHARS: usize = 200;

/// Where FTS5 marks a match in a snippet, before the marks become `**`:
/// control characters, so that a document's own `**` is never taken for one.
pub(in crate::store) const OPEN: char = '\u{2}';
pub(in crate::store) const CLOSE: char = '\u{3}';
/// Characters of context a snippet keeps before its first match.
const CONTEXT_BEFORE: usize = 60;

/// One line of at most about [`SNIPPET_CHARS`] characters, whitespace runs
/// made one space. When `text` holds marked matches, the line starts a few
/// words before the first one, so the match is always shown; a cut never
/// leaves a mark open. The marks become `**`.
pub(in crate::store) fn clip(text: &str) -> String {
    let words: Vec<&str> = text.split_whitespace().collect();
    let first = words.iter().position(|w| w.contains(OPEN)).unwrap_or(0);
    let mut start = first;
    let mut before = 0;
    while start > 0 && before + words[start - 1].chars().count() < CONTEXT_BEFORE {
        start -= 1;
        before += words[start].chars().count() + 1;
    }
    let mut line = String::with_capacity(SNIPPET_CHARS * 2);
    if start > 0 && !words[start].starts_with('…') {
        line.push('…');
    }
    // Characters as shown: a mark becomes `**`, and a cut may add one.
    let shown = |c: char| if c == OPEN || c == CLOSE { 2 } else { 1 };
    let budget = SNIPPET_CHARS - 2;
    let mut chars = 0;
    let mut clipped = false;
    for (i, word) in words.iter().enumerate().skip(start) {
        let len: usize = word.chars().map(shown).sum();
        // The word of the first match is shown, cut if it must be.
        if chars > 0 && chars + 1 + len > budget && i != first {
            clipped = true;
            break;
        }
        if chars > 0 {
            line.push(' ');
            chars += 1;
        }
        if chars + len > budget {
            for c in word.chars() {
                if chars + shown(c) > budget {
                    break;
                }
                line.push(c);
                chars += shown(c);
            }
            clipped = true;
            break;
        }
        line.push_str(word);
        chars += len;
    }
    if line.matches(OPEN).count() > line.matches(CLOSE).count() {
        line.push(CLOSE);
    }
    if clipped && !line.ends_with('…') {
        line.push('…');
    }
    line.replace([OPEN, CLOSE], "**")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clips_to_one_short_line() {
        assert_eq!(clip("  a\n\n b\tc "), "a b c");
        let long = "word ".repeat(100);
        let clipped = clip(&long);
        assert!(clipped.chars().count() <= SNIPPET_CHARS + 1, "{clipped}");
        // Marks count as the `**` they become.
        let marked = "\u{2}word\u{3} ".repeat(100);
        let clipped = clip(&marked);
        assert!(clipped.chars().count() <= SNIPPET_CHARS + 1, "{clipped}");
        assert!(clipped.ends_with('…'));
        // The match is kept, with some context before it, however late.
        let late = format!("{} \u{2}needle\u{3} tail", "hay ".repeat(100));
        let clipped = clip(&late);
        assert!(clipped.starts_with("…hay hay"), "{clipped}");
        assert!(clipped.ends_with("**needle** tail"), "{clipped}");
        assert!(clipped.chars().count() < 90, "{clipped}");
        // A cut never leaves a match open; a document's own ** is text.
        let open = format!("**bold** {} \u{2}{}\u{3}", "x".repeat(50), "y".repeat(300));
        let clipped = clip(&open);
        assert_eq!(clipped.matches("**").count(), 4, "{clipped}");
        assert!(clipped.contains("**yyy"), "{clipped}");
        assert!(clipped.chars().count() <= SNIPPET_CHARS + 4, "{clipped}");
        assert_eq!(clip("a \u{2}b\u{3} c"), "a **b** c");
        let word = clip(&"é".repeat(300));
        assert!(word.ends_with("é…"), "{word}");
        assert!(word.chars().count() <= SNIPPET_CHARS + 1, "{word}");
    }
}
