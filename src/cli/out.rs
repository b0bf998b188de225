//! What the read-only commands' output shares: stdout held for a pager on a terminal, colour, and how sizes, times, `key: value` lines and shell words are written.

use std::borrow::Cow;
use std::io::{self, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, UNIX_EPOCH};

use console::Style;

/// Where a command writes: stdout, or on a terminal a buffer that
/// [`Out::finish`] sends through the pager when it is taller than the screen.
pub struct Out {
    sink: Sink,
}

enum Sink {
    /// Stdout as it is: a pipe, a file, or bytes no pager should see.
    Stdout(io::BufWriter<io::Stdout>),
    /// A terminal of `rows` × `columns`: held until `finish`.
    Held {
        bytes: Vec<u8>,
        rows: usize,
        columns: usize,
    },
}

impl Out {
    /// Output that is paged on a terminal when it is taller than the screen.
    pub fn pageable() -> Out {
        let term = console::Term::stdout();
        let sink = match term.is_term().then(|| term.size_checked()).flatten() {
            Some((rows, columns)) => Sink::Held {
                bytes: Vec::new(),
                rows: usize::from(rows),
                columns: usize::from(columns).max(1),
            },
            None => Out::stdout().sink,
        };
        Out { sink }
    }

    /// Output written straight to stdout, never paged.
    pub fn stdout() -> Out {
        Out {
            sink: Sink::Stdout(io::BufWriter::new(io::stdout())),
        }
    }

    /// Writes what is held: through the pager when it needs more rows than
    /// the screen has (one is kept for the prompt), else to stdout.
    pub fn finish(self) -> io::Result<()> {
        match self.sink {
            Sink::Stdout(mut out) => out.flush(),
            Sink::Held {
                bytes,
                rows,
                columns,
            } => {
                if fits(&bytes, rows.saturating_sub(1), columns) {
                    write_stdout(&bytes)
                } else {
                    page(&bytes)
                }
            }
        }
    }
}

impl Write for Out {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &mut self.sink {
            Sink::Stdout(out) => out.write(buf),
            Sink::Held { bytes, .. } => {
                bytes.extend_from_slice(buf);
                Ok(buf.len())
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.sink {
            Sink::Stdout(out) => out.flush(),
            Sink::Held { .. } => Ok(()),
        }
    }
}

/// Whether `bytes` take at most `rows` rows of a screen `columns` wide
/// (long lines wrap). Stops measuring once they do not.
fn fits(bytes: &[u8], rows: usize, columns: usize) -> bool {
    if bytes.is_empty() {
        return true;
    }
    let mut used = 0;
    for line in bytes
        .strip_suffix(b"\n")
        .unwrap_or(bytes)
        .split(|&b| b == b'\n')
    {
        let width = console::measure_text_width(&String::from_utf8_lossy(line));
        used += width.div_ceil(columns).max(1);
        if used > rows {
            return false;
        }
    }
    true
}

fn write_stdout(bytes: &[u8]) -> io::Result<()> {
    let mut out = io::stdout().lock();
    out.write_all(bytes)?;
    out.flush()
}

/// The pager's command line: `$PAGER` split on whitespace, else `less -FRX`;
/// `None` when `$PAGER` is set but blank (no pager, as git takes it).
fn pager() -> Option<Vec<String>> {
    match std::env::var("PAGER") {
        Ok(pager) => {
            let argv: Vec<String> = pager.split_whitespace().map(String::from).collect();
            (!argv.is_empty()).then_some(argv)
        }
        Err(_) => Some(vec!["less".to_string(), "-FRX".to_string()]),
    }
}

/// Shows `bytes` through the pager; writes them to stdout when there is
/// none, it cannot start, or it fails.
fn page(bytes: &[u8]) -> io::Result<()> {
    let Some(argv) = pager() else {
        return write_stdout(bytes);
    };
    let mut command = Command::new(&argv[0]);
    command.args(&argv[1..]).stdin(Stdio::piped());
    if std::env::var_os("LESS").is_none() {
        // For a bare `PAGER=less`: colour, and no pager for one screen.
        command.env("LESS", "FRX");
    }
    let Ok(mut child) = command.spawn() else {
        return write_stdout(bytes);
    };
    let interrupts = catch_interrupts();
    let written = child.stdin.take().expect("piped stdin").write_all(bytes);
    let status = child.wait()?;
    drop(interrupts);
    match written {
        _ if !status.success() => write_stdout(bytes),
        // The reader quit before the end: that is what a pager is for.
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        written => written,
    }
}

/// While the pager runs, Ctrl-C is the pager's: orchestra must not die and
/// hand the terminal to the shell under a pager that still draws (git waits
/// for its pager the same way). Catching SIGINT takes a handler; tokio's,
/// already linked for `serve`, is registered here and stays for the rest of
/// the process. `None` when it cannot be (then Ctrl-C ends orchestra).
fn catch_interrupts() -> Option<(tokio::runtime::Runtime, tokio::signal::unix::Signal)> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .ok()?;
    let signal = {
        let _inside = runtime.enter();
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt()).ok()?
    };
    Some((runtime, signal))
}

/// Whether to colour stdout: only on a terminal, never with `NO_COLOR`
/// set, else as `console` decides (`CLICOLOR`, `CLICOLOR_FORCE`, `TERM=dumb`).
pub fn colour() -> bool {
    console::Term::stdout().is_term()
        && std::env::var_os("NO_COLOR").is_none()
        && console::colors_enabled()
}

/// `text` painted in `style` when `colour`, else as it is.
pub fn paint(text: &str, style: &Style, colour: bool) -> String {
    if colour {
        style.clone().force_styling(true).apply_to(text).to_string()
    } else {
        text.to_string()
    }
}

/// `text` on one line, with nothing a terminal would obey: whitespace
/// controls (newline, tab) become spaces, other control characters `?`, as
/// `ls` shows them.
pub fn printable(text: &str) -> Cow<'_, str> {
    if !text.chars().any(char::is_control) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(
        text.chars()
            .map(|c| match c {
                c if c.is_whitespace() && c.is_control() => ' ',
                c if c.is_control() => '?',
                c => c,
            })
            .collect(),
    )
}

/// `key: value` lines, the values aligned after the longest key; with
/// colour the keys dimmed. Values are made [`printable`].
pub fn fields(pairs: &[(impl AsRef<str>, String)], colour: bool) -> Vec<String> {
    let width = pairs
        .iter()
        .map(|(key, _)| key.as_ref().len())
        .max()
        .unwrap_or(0);
    pairs
        .iter()
        .map(|(key, value)| {
            let key = format!("{}:", key.as_ref());
            format!(
                "{}{:pad$} {}",
                paint(&key, &Style::new().dim(), colour),
                "",
                printable(value),
                pad = width + 1 - key.len()
            )
        })
        .collect()
}

/// A byte count as people read it: `512 B`, `1.2 kB`, `34.0 MB` (powers of 1000).
pub fn size(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["kB", "MB", "GB", "TB", "PB", "EB"];
    if bytes < 1000 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1000.0;
    let mut unit = 0;
    // 999.96 kB would round to "1000.0 kB": it is 1.0 MB.
    while value >= 999.95 && unit + 1 < UNITS.len() {
        value /= 1000.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// An mtime (ns since the epoch) as RFC 3339 UTC to the second; `None`
/// before 1970, which RFC 3339 formatting does not reach.
pub fn time_ns(ns: i64) -> Option<String> {
    let ns = u64::try_from(ns).ok()?;
    Some(humantime::format_rfc3339_seconds(UNIX_EPOCH + Duration::from_nanos(ns)).to_string())
}

/// A time in ms since the epoch as RFC 3339 UTC to the second.
pub fn time_ms(ms: i64) -> Option<String> {
    time_ns(ms.checked_mul(1_000_000)?)
}

/// `text` as one word for a POSIX shell: as it is when it holds only
/// characters no shell treats specially, else in single quotes.
pub fn shell_word(text: &str) -> Cow<'_, str> {
    let plain = !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./:@%+,".contains(&b));
    if plain {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(format!("'{}'", text.replace('\'', r"'\''")))
    }
}

/// Numbers in ascending order as ranges: `1–4`, `1, 3–5`, `7`.
pub fn ranges(numbers: &[u32]) -> String {
    let mut runs: Vec<(u32, u32)> = Vec::new();
    for &n in numbers {
        match runs.last_mut() {
            Some((_, last)) if last.checked_add(1) == Some(n) => *last = n,
            _ => runs.push((n, n)),
        }
    }
    runs.iter()
        .map(|&(first, last)| match first == last {
            true => first.to_string(),
            false => format!("{first}–{last}"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Items as a list in words: `a`, `a and b`, `a, b and c`.
pub fn and_list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        let cases = [
            (0, "0 B"),
            (999, "999 B"),
            (1000, "1.0 kB"),
            (1234, "1.2 kB"),
            (999_949, "999.9 kB"),
            (999_999, "1.0 MB"),
            (1_250_000, "1.2 MB"),
            (34_000_000_000, "34.0 GB"),
            (u64::MAX, "18.4 EB"),
        ];
        for (bytes, expected) in cases {
            assert_eq!(size(bytes), expected, "{bytes}");
        }
    }

    #[test]
    fn times() {
        let cases = [
            (0, Some("1970-01-01T00:00:00Z")),
            (1_772_445_600_999_999_999, Some("2026-03-02T10:00:00Z")),
            (-1, None),
        ];
        for (ns, expected) in cases {
            assert_eq!(time_ns(ns).as_deref(), expected, "{ns}");
        }
        assert_eq!(
            time_ms(1_772_445_600_123).as_deref(),
            Some("2026-03-02T10:00:00Z")
        );
        assert_eq!(time_ms(i64::MAX), None);
    }

    #[test]
    fn shell_words() {
        let cases = [
            ("FEAT-050", "FEAT-050"),
            ("features/adr/0001", "features/adr/0001"),
            ("café notes", "'café notes'"),
            ("it's", r"'it'\''s'"),
            ("$HOME", "'$HOME'"),
            ("~x", "'~x'"),
            ("=x", "'=x'"),
            ("", "''"),
        ];
        for (text, expected) in cases {
            assert_eq!(shell_word(text), expected, "{text}");
        }
    }

    #[test]
    fn number_ranges() {
        let cases: &[(&[u32], &str)] = &[
            (&[], ""),
            (&[7], "7"),
            (&[1, 2, 3, 4], "1–4"),
            (&[1, 3, 4, 5], "1, 3–5"),
            (&[1, 3, 5, 6, 9], "1, 3, 5–6, 9"),
            (&[u32::MAX - 1, u32::MAX], "4294967294–4294967295"),
        ];
        for &(numbers, expected) in cases {
            assert_eq!(ranges(numbers), expected, "{numbers:?}");
        }
        let list =
            |items: &[&str]| and_list(&items.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(list(&[]), "");
        assert_eq!(list(&["2"]), "2");
        assert_eq!(list(&["2", "4"]), "2 and 4");
        assert_eq!(list(&["2", "4", "6"]), "2, 4 and 6");
    }

    #[test]
    fn printable_text() {
        let cases = [
            ("plain", "plain"),
            ("two\nlines\tand tab", "two lines and tab"),
            ("\u{1b}[2Jclear", "?[2Jclear"),
            ("bell\u{7}", "bell?"),
        ];
        for (text, expected) in cases {
            assert_eq!(printable(text), expected, "{text:?}");
        }
    }

    #[test]
    fn aligned_fields() {
        let lines = fields(
            &[("uri", "orchestra://a/b".into()), ("title", "T\nU".into())],
            false,
        );
        assert_eq!(lines, ["uri:   orchestra://a/b", "title: T U"]);
        let dim = fields(&[("a", "1".into())], true);
        assert_eq!(dim, ["\u{1b}[2ma:\u{1b}[0m 1"]);
    }

    #[test]
    fn fitting_on_a_screen() {
        let cases: &[(&str, usize, usize, bool)] = &[
            ("a\nb\n", 2, 80, true),
            ("a\nb\nc\n", 2, 80, false),
            // A line of 10 on a screen 4 wide takes 3 rows.
            ("0123456789\n", 3, 4, true),
            ("0123456789\n", 2, 4, false),
            // Colour takes no room.
            ("\u{1b}[1mabcd\u{1b}[0m\n", 1, 4, true),
            ("", 0, 80, true),
        ];
        for &(text, rows, columns, expected) in cases {
            assert_eq!(fits(text.as_bytes(), rows, columns), expected, "{text:?}");
        }
    }
}
