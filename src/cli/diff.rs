//! `orchestra diff REF [FROM] [TO]`: what changed in a document between two versions, as a unified diff (`history::diff`): exact in a pipe, coloured and with control characters shown as `?` on a terminal, paged like `show`.

use std::borrow::Cow;
use std::io::Write;

use anyhow::Result;
use clap::Args;
use console::Style;

use orchestra::history::{self, Diff, DiffError};
use orchestra::store::Version;
use orchestra::uri;

use super::DbArg;
use super::out::{self, Out};

#[derive(Args)]
pub struct DiffArgs {
    /// The document: its URI (orchestra://features/FEAT-001) or prefix/id
    /// (features/FEAT-001).
    #[arg(value_name = "REF")]
    reference: String,
    /// The older version [default: the one with bytes before TO].
    #[arg(value_name = "FROM", value_parser = clap::value_parser!(u32).range(1..))]
    from: Option<u32>,
    /// The newer version [default: the newest with bytes].
    #[arg(value_name = "TO", value_parser = clap::value_parser!(u32).range(1..))]
    to: Option<u32>,
    #[command(flatten)]
    db: DbArg,
}

/// What one transaction found.
enum Found {
    /// FROM or TO names no version with bytes; the whole history (empty
    /// when the key never existed).
    NoVersion(u32, Vec<Version>),
    Compared(Result<Diff, DiffError>),
}

/// Prints the diff, or says the versions are identical (on stderr); false
/// (after saying why) when there is nothing to compare: no such document or
/// version, a removal, a binary version.
pub fn run(args: &DiffArgs) -> Result<bool> {
    let key = super::parse_ref(&args.reference)?;
    let reader = super::open(&args.db)?;
    let found = reader.in_transaction(|| {
        let versions = reader.history(&key, None, usize::MAX >> 1)?;
        let with_bytes = |n: u32| versions.iter().any(|v| v.number == n && !v.removed());
        let asked = [args.from, args.to].into_iter().flatten();
        if let Some(n) = asked.clone().find(|&n| !with_bytes(n)) {
            return Ok(Found::NoVersion(n, versions));
        }
        if versions.is_empty() {
            return Ok(Found::NoVersion(0, versions));
        }
        Ok(Found::Compared(history::diff(
            &reader, &key, args.from, args.to,
        )?))
    })?;
    let diff = match found {
        Found::NoVersion(number, versions) => {
            return Ok(super::no_version(&key, number, &versions));
        }
        Found::Compared(Err(DiffError(message))) => {
            eprintln!("orchestra: {}", out::printable(&message));
            return Ok(false);
        }
        Found::Compared(Ok(diff)) => diff,
    };
    if diff.text.is_empty() {
        eprintln!(
            "orchestra: versions {} and {} of {} are identical",
            diff.from,
            diff.to,
            uri::format(&key)
        );
        return Ok(true);
    }
    let mut out = Out::pageable();
    if console::Term::stdout().is_term() {
        let colour = out::colour();
        for (i, line) in diff.text.split_inclusive('\n').enumerate() {
            let line = line.strip_suffix('\n').unwrap_or(line);
            // The `---` and `+++` lines of the header are the first two; a
            // removed line may begin `---` too.
            let style = style(line, i < 2);
            writeln!(out, "{}", out::paint(&shown(line), &style, colour))?;
        }
    } else {
        out.write_all(diff.text.as_bytes())?;
    }
    out.finish()?;
    Ok(true)
}

/// A line of the diff as a terminal shows it: control characters but tab
/// as `?`, so a document's escape codes are shown, not obeyed.
fn shown(line: &str) -> Cow<'_, str> {
    let control = |c: char| c.is_control() && c != '\t';
    if !line.chars().any(control) {
        return Cow::Borrowed(line);
    }
    Cow::Owned(
        line.chars()
            .map(|c| if control(c) { '?' } else { c })
            .collect(),
    )
}

/// The colour of a line of a unified diff: the header bold, hunk lines
/// cyan, removed lines red, added lines green.
fn style(line: &str, header: bool) -> Style {
    match line.as_bytes().first() {
        _ if header => Style::new().bold(),
        Some(b'@') => Style::new().cyan(),
        Some(b'-') => Style::new().red(),
        Some(b'+') => Style::new().green(),
        _ => Style::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_on_a_terminal() {
        let cases = [
            ("+added", "+added"),
            (" tab\there", " tab\there"),
            ("-\u{1b}[2Jclear\r", "-?[2Jclear?"),
        ];
        for (line, expected) in cases {
            assert_eq!(shown(line), expected, "{line:?}");
        }
        let styled = |line: &str, header: bool| out::paint("x", &style(line, header), true);
        let cases = [
            ("--- orchestra://a/b?version=1", true, "\u{1b}[1mx\u{1b}[0m"),
            ("+++ orchestra://a/b?version=2", true, "\u{1b}[1mx\u{1b}[0m"),
            ("@@ -1 +1 @@", false, "\u{1b}[36mx\u{1b}[0m"),
            // A removed line `-- x`.
            ("--- x", false, "\u{1b}[31mx\u{1b}[0m"),
            ("+x", false, "\u{1b}[32mx\u{1b}[0m"),
            (" x", false, "x"),
            ("\\ No newline at end of file", false, "x"),
        ];
        for (line, header, expected) in cases {
            assert_eq!(styled(line, header), expected, "{line:?}");
        }
    }
}
