//! Rows of text columns for the command line: aligned, clipped to the terminal's width and optionally styled on a terminal, plain (two spaces between columns) elsewhere.

use console::Style;
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
pub const MAX_COLUMN: usize = 48;

/// The lines of `rows`. On a terminal, every column but the last is padded
/// to the widest cell (at most [`MAX_COLUMN`], longer cells clipped), and
/// the line is clipped to the width, with `…` where text was cut.
pub fn render(rows: &[Vec<String>], layout: Layout) -> Vec<String> {
    render_styled(rows, layout, &[])
}

/// As [`render`], and on a terminal each cell's visible text (not its
/// padding) drawn in the style of its column, when `styles` has one. Plain
/// lines are never styled. Styles are applied as given, whatever
/// `console::colors_enabled` says: the caller decides whether to colour.
pub fn render_styled(rows: &[Vec<String>], layout: Layout, styles: &[Style]) -> Vec<String> {
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
            // The line as pieces: each cell's text (with its column) and
            // the padding after it (with none).
            let mut pieces: Vec<(Option<usize>, String)> = Vec::new();
            for (c, cell) in row.iter().enumerate() {
                match widths.get(c) {
                    Some(&w) if c + 1 < row.len() => {
                        let cell = clip(cell, w);
                        let pad = w - text_width(&cell) + 2;
                        pieces.push((Some(c), cell));
                        pieces.push((None, " ".repeat(pad)));
                    }
                    _ => pieces.push((Some(c), cell.clone())),
                }
            }
            trim_end(&mut pieces);
            clip_pieces(&mut pieces, width);
            pieces
                .into_iter()
                .map(|(column, text)| match column.and_then(|c| styles.get(c)) {
                    Some(style) if !text.is_empty() => {
                        style.clone().force_styling(true).apply_to(text).to_string()
                    }
                    _ => text,
                })
                .collect()
        })
        .collect()
}

/// Removes the whitespace at the end of the line the pieces make.
fn trim_end(pieces: &mut Vec<(Option<usize>, String)>) {
    while let Some((_, text)) = pieces.last_mut() {
        let kept = text.trim_end().len();
        text.truncate(kept);
        if kept > 0 {
            break;
        }
        pieces.pop();
    }
}

/// Clips the line the pieces make to `width` columns, as [`clip`] does a
/// string: the `…` goes into the piece that was cut.
fn clip_pieces(pieces: &mut Vec<(Option<usize>, String)>, width: usize) {
    if pieces
        .iter()
        .map(|(_, text)| text_width(text))
        .sum::<usize>()
        <= width
    {
        return;
    }
    let mut used = 0;
    for i in 0..pieces.len() {
        let text = &mut pieces[i].1;
        let mut kept = 0;
        for c in text.chars() {
            let w = c.width().unwrap_or(0);
            if used + w + 1 > width {
                break;
            }
            used += w;
            kept += c.len_utf8();
        }
        if kept < text.len() {
            text.truncate(kept);
            text.push('…');
            pieces.truncate(i + 1);
            return;
        }
    }
}

/// Columns the text takes on a terminal (control characters count as none).
pub fn text_width(text: &str) -> usize {
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

    #[test]
    fn styles_paint_the_visible_text_of_their_columns() {
        let table = rows(&[&["a", "bb", "long snippet text"], &["ddd", "", ""]]);
        let styles = [Style::new().bold(), Style::new(), Style::new().dim()];
        let cases: &[(usize, &[&str])] = &[
            (
                40,
                &[
                    "\u{1b}[1ma\u{1b}[0m    bb  \u{1b}[2mlong snippet text\u{1b}[0m",
                    "\u{1b}[1mddd\u{1b}[0m",
                ],
            ),
            // Cut in the last cell: the `…` is drawn with it.
            (
                16,
                &[
                    "\u{1b}[1ma\u{1b}[0m    bb  \u{1b}[2mlong s…\u{1b}[0m",
                    "\u{1b}[1mddd\u{1b}[0m",
                ],
            ),
            // Cut where an unstyled column starts: its `…` is plain.
            (6, &["\u{1b}[1ma\u{1b}[0m    …", "\u{1b}[1mddd\u{1b}[0m"]),
        ];
        for &(width, expected) in cases {
            let layout = Layout::Terminal { width };
            let styled = render_styled(&table, layout, &styles);
            assert_eq!(styled, expected, "width {width}");
            // Without the styles, the same text as `render`.
            let stripped: Vec<String> = styled
                .iter()
                .map(|line| console::strip_ansi_codes(line).into_owned())
                .collect();
            assert_eq!(stripped, render(&table, layout), "width {width}");
        }
        // Plain lines never are.
        assert_eq!(
            render_styled(&table, Layout::Plain, &styles),
            ["a  bb  long snippet text", "ddd    "]
        );
    }
}
