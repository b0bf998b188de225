//! Rows of text columns for the command line: aligned and clipped to the terminal's width on a terminal, plain (two spaces between columns) elsewhere.

use unicode_width::UnicodeWidthChar;

/// How rows are laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Columns padded to a common width, each line clipped to `width` columns.
    Terminal { width: usize },
    /// Columns as they are, two spaces apart: for pipes and files.
    Plain,
}

impl Layout {
    /// `Terminal` when stdout is one, with its width.
    pub fn of_stdout() -> Layout {
        let term = console::Term::stdout();
        match term.is_term().then(|| term.size_checked()).flatten() {
            Some((_, width)) => Layout::Terminal {
                width: usize::from(width).max(20),
            },
            None => Layout::Plain,
        }
    }
}

/// The most a padded (non-last) column takes on a terminal.
const MAX_COLUMN: usize = 48;

/// The lines of `rows`. On a terminal, every column but the last is padded
/// to the widest cell (at most [`MAX_COLUMN`], longer cells clipped), and
/// the line is clipped to the width, with `…` where text was cut.
pub fn render(rows: &[Vec<String>], layout: Layout) -> Vec<String> {
    let Layout::Terminal { width } = layout else {
        return rows.iter().map(|row| row.join("  ")).collect();
    };
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns.saturating_sub(1))
        .map(|c| {
            rows.iter()
                .filter_map(|row| row.get(c))
                .map(|cell| text_width(cell))
                .max()
                .unwrap_or(0)
                .min(MAX_COLUMN)
        })
        .collect();
    rows.iter()
        .map(|row| {
            let mut line = String::new();
            for (c, cell) in row.iter().enumerate() {
                match widths.get(c) {
                    Some(&w) if c + 1 < row.len() => {
                        let cell = clip(cell, w);
                        let pad = w - text_width(&cell);
                        line.push_str(&cell);
                        line.extend(std::iter::repeat_n(' ', pad + 2));
                    }
                    _ => line.push_str(cell),
                }
            }
            clip(line.trim_end(), width)
        })
        .collect()
}

/// Columns the text takes on a terminal (control characters count as none).
fn text_width(text: &str) -> usize {
    text.chars().map(|c| c.width().unwrap_or(0)).sum()
}

/// `text` in at most `width` columns, ending in `…` when it was cut.
pub fn clip(text: &str, width: usize) -> String {
    if text_width(text) <= width {
        return text.to_string();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = c.width().unwrap_or(0);
        if used + w + 1 > width {
            break;
        }
        out.push(c);
        used += w;
    }
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(rows: &[&[&str]]) -> Vec<Vec<String>> {
        rows.iter()
            .map(|r| r.iter().map(|c| c.to_string()).collect())
            .collect()
    }

    #[test]
    fn plain_rows_are_two_spaces_apart() {
        let lines = render(
            &rows(&[&["a", "bb", "c c"], &["ddd", "e", "f"]]),
            Layout::Plain,
        );
        assert_eq!(lines, ["a  bb  c c", "ddd  e  f"]);
    }

    #[test]
    fn terminal_rows_are_aligned_and_clipped() {
        let lines = render(
            &rows(&[&["a", "bb", "long snippet text"], &["ddd", "e", "f"]]),
            Layout::Terminal { width: 16 },
        );
        assert_eq!(lines, ["a    bb  long s…", "ddd  e   f"]);
        // Wide characters count twice.
        assert_eq!(clip("日本語テキスト", 7), "日本語…");
        assert_eq!(clip("short", 10), "short");
    }
}
