//! Reading a document in parts: its lines numbered as the file has them, and a window of them under a cap of characters that says exactly where it stopped, so that the parts concatenate to the exact text (`outline`: its headings and sections).
//!
//! Lines are the file's own: each ends after its `\n` (a `\r\n` stays
//! whole), and the last one may have no end. They are numbered from 1; a
//! file that ends with a newline has no empty line after it (`a\nb\n` has
//! two lines), and an empty file has none.
//!
//! A window runs from a line (and a character of it, to continue a line
//! that a cap cut) to the end of a range of lines, and holds at most a
//! number of characters. It ends at a line's end when at least one whole
//! line fits; a single line longer than the cap is cut at a character
//! boundary, and the window says where to go on: the same line, at the
//! character where it stopped.

pub mod outline;

/// The most characters a `read` returns, and the least its caller may ask
/// for as its own cap (`maxChars`).
pub const MAX_CHARS: usize = 40_000;
pub const MIN_CHARS: usize = 1_000;

/// The byte offset where each line of `text` starts.
#[derive(Debug, Clone)]
pub struct Lines {
    starts: Vec<usize>,
    len: usize,
}

impl Lines {
    pub fn of(text: &str) -> Lines {
        let mut starts = Vec::with_capacity(text.len() / 40 + 1);
        if !text.is_empty() {
            starts.push(0);
        }
        starts.extend(
            text.bytes()
                .enumerate()
                .filter(|&(i, b)| b == b'\n' && i + 1 < text.len())
                .map(|(i, _)| i + 1),
        );
        Lines {
            starts,
            len: text.len(),
        }
    }

    /// How many lines there are.
    pub fn count(&self) -> usize {
        self.starts.len()
    }

    /// The line (from 1) that holds byte `offset`.
    pub fn line_of(&self, offset: usize) -> usize {
        self.starts.partition_point(|&start| start <= offset).max(1)
    }

    /// Where line `line` (from 1) starts; the text's end past the last.
    pub fn start(&self, line: usize) -> usize {
        match line.checked_sub(1).and_then(|i| self.starts.get(i)) {
            Some(&start) => start,
            None => self.len,
        }
    }

    /// Where line `line` ends, its newline included.
    pub fn end(&self, line: usize) -> usize {
        self.start(line + 1)
    }
}

/// Where a window starts: a line, and the character of that line (from 0,
/// past what an earlier part held of it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    pub line: usize,
    pub column: usize,
}

/// What to read: lines `from` to `to` (inclusive) of a text, at most
/// `max_chars` characters of them.
#[derive(Debug, Clone, Copy)]
pub struct Range {
    pub from: Position,
    pub to: usize,
    pub max_chars: usize,
}

/// One part of a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Window<'a> {
    pub text: &'a str,
    /// The first line it holds (in part when `from.column > 0`), and the
    /// last (in part when `next` continues it).
    pub from: Position,
    pub to: usize,
    /// Where the rest of the range starts, when the cap cut it.
    pub next: Option<Position>,
}

impl Window<'_> {
    /// Whether the cap left some of the range out.
    pub fn truncated(&self) -> bool {
        self.next.is_some()
    }
}

/// The part of `text` that `range` asks for. `range.from.line` must be a
/// line of the text (from 1), and `range.to` at least it; a column past the
/// line's end starts at its end.
pub fn window<'a>(text: &'a str, lines: &Lines, range: Range) -> Window<'a> {
    let Range {
        from,
        to,
        max_chars,
    } = range;
    let to = to.min(lines.count()).max(from.line);
    let line_start = lines.start(from.line);
    let line_end = lines.end(from.line);
    let start = line_start + byte_of_char(&text[line_start..line_end], from.column);
    let end = lines.end(to);
    let cut = start + byte_of_char(&text[start..end], max_chars);
    if cut >= end {
        return Window {
            text: &text[start..end],
            from,
            to,
            next: None,
        };
    }
    // The last line that ends within the cap, or a cut inside the first.
    let last_whole = lines.line_of(cut) - 1;
    if last_whole >= from.line && lines.end(last_whole) > start {
        let stop = lines.end(last_whole);
        return Window {
            text: &text[start..stop],
            from,
            to: last_whole,
            next: Some(Position {
                line: last_whole + 1,
                column: 0,
            }),
        };
    }
    let column = text[line_start..cut].chars().count();
    Window {
        text: &text[start..cut],
        from,
        to: from.line,
        next: Some(Position {
            line: from.line,
            column,
        }),
    }
}

/// The byte offset of character `n` of `text`, or its length when it has
/// fewer.
fn byte_of_char(text: &str, n: usize) -> usize {
    text.char_indices().nth(n).map_or(text.len(), |(i, _)| i)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_the_files_own() {
        let check = |text: &str, starts: &[usize]| {
            let lines = Lines::of(text);
            assert_eq!(lines.starts, starts, "{text:?}");
            assert_eq!(lines.count(), starts.len());
        };
        check("", &[]);
        check("a", &[0]);
        check("a\n", &[0]);
        check("a\nb", &[0, 2]);
        check("a\r\nb\r\n", &[0, 3]);
        check("\n\n", &[0, 1]);
        let lines = Lines::of("ab\ncd\n");
        assert_eq!(
            (lines.line_of(0), lines.line_of(2), lines.line_of(3)),
            (1, 1, 2)
        );
        assert_eq!((lines.start(2), lines.end(2), lines.end(9)), (3, 6, 6));
    }

    fn read(text: &str, line: usize, column: usize, to: usize, max_chars: usize) -> Window<'_> {
        let from = Position { line, column };
        window(
            text,
            &Lines::of(text),
            Range {
                from,
                to,
                max_chars,
            },
        )
    }

    #[test]
    fn a_window_ends_at_a_line_end_or_inside_a_line_too_long_for_it() {
        let text = "one\ntwo\nthree\n";
        // Everything fits.
        let w = read(text, 1, 0, 3, 100);
        assert_eq!((w.text, w.to, w.next), (text, 3, None));
        // A range of lines.
        let w = read(text, 2, 0, 2, 100);
        assert_eq!((w.text, w.to, w.next), ("two\n", 2, None));
        // The cap keeps whole lines when one fits: 9 characters hold two.
        let w = read(text, 1, 0, 3, 9);
        assert_eq!(w.text, "one\ntwo\n");
        assert_eq!(w.next, Some(Position { line: 3, column: 0 }));
        // A line longer than the cap is cut, and continues at its column.
        let w = read("ééééé\nx\n", 1, 0, 2, 3);
        assert_eq!(w.text, "ééé");
        assert_eq!(w.next, Some(Position { line: 1, column: 3 }));
        let w = read("ééééé\nx\n", 1, 3, 2, 3);
        assert_eq!(w.text, "éé\n");
        assert_eq!(w.next, Some(Position { line: 2, column: 0 }));
        // No final newline.
        let w = read("a\nb", 2, 0, 2, 10);
        assert_eq!((w.text, w.next), ("b", None));
    }

    #[test]
    fn parts_concatenate_to_the_text() {
        let text = "---\ntitle: x\n---\r\n# Head\n\nwörds wörds wörds\nlong ".to_string()
            + &"ß".repeat(50)
            + "\n\nend";
        let lines = Lines::of(&text);
        for max_chars in [1, 2, 3, 7, 20, 1000] {
            let mut whole = String::new();
            let mut from = Position { line: 1, column: 0 };
            loop {
                let w = window(
                    &text,
                    &lines,
                    Range {
                        from,
                        to: lines.count(),
                        max_chars,
                    },
                );
                assert!(
                    w.text.chars().count() <= max_chars,
                    "{max_chars}: {:?}",
                    w.text
                );
                assert!(!w.text.is_empty());
                whole.push_str(w.text);
                match w.next {
                    Some(next) => from = next,
                    None => break,
                }
            }
            assert_eq!(whole, text, "{max_chars}");
        }
    }
}
