//! `orchestra log REF`: a document's versions, newest first (a removed document's too): aligned rows and a footer on a terminal, plain rows in a pipe, or JSON Lines; keyset pages with `--before`.

use std::io::Write;

use anyhow::Result;
use clap::Args;
use console::Style;

use orchestra::doc::DocKey;
use orchestra::history;
use orchestra::store::{Moved, Reader, Version};
use orchestra::table::{self, Layout};
use orchestra::uri;

use super::DbArg;
use super::out::{self, Out};

#[derive(Args)]
pub struct LogArgs {
    /// The document: its URI (orchestra://features/FEAT-001) or prefix/id
    /// (features/FEAT-001). A document removed since has a log too.
    #[arg(value_name = "REF")]
    reference: String,
    /// Versions to show [default: all].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    limit: Option<u32>,
    /// Only the versions before (older than) version N. On a terminal the
    /// footer gives the next page's command.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    before: Option<u32>,
    /// Print JSON Lines: one version per line.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    db: DbArg,
}

/// What one page shows, read from one commit.
struct Page {
    versions: Vec<Version>,
    /// Whether older versions follow the page.
    more: bool,
    /// All the versions of the document.
    total: u64,
}

/// Prints a page of the document's versions; false (after saying so) when
/// there is none. `db_given`: `--db` was on the command line, so the next
/// page's command repeats it.
pub fn run(args: &LogArgs, db_given: bool) -> Result<bool> {
    let key = super::parse_ref(&args.reference)?;
    let reader = super::open(&args.db)?;
    let page = reader.in_transaction(|| read_page(&reader, &key, args.limit, args.before))?;
    let name = uri::format(&key);
    if page.versions.is_empty() {
        match args.before {
            Some(before) if page.total > 0 => {
                eprintln!("orchestra: no versions of {name} before {before}")
            }
            _ => eprintln!("orchestra: no history for {name}"),
        }
        return Ok(false);
    }
    let mut out = Out::pageable();
    if args.json {
        for version in &page.versions {
            writeln!(out, "{}", history::version_json(version))?;
        }
        out.finish()?;
        return Ok(true);
    }
    let layout = Layout::of_stdout();
    let colour = out::colour();
    let rows: Vec<Vec<String>> = page.versions.iter().map(row).collect();
    let styles = if colour {
        vec![
            Style::new(),
            Style::new().dim(),
            Style::new().dim(),
            Style::new().bold(),
        ]
    } else {
        Vec::new()
    };
    for line in table::render_styled(&rows, layout, &styles) {
        writeln!(out, "{line}")?;
    }
    if matches!(layout, Layout::Terminal { .. }) {
        let shown = page.versions.len() as u64;
        let noun = if page.total == 1 {
            "version"
        } else {
            "versions"
        };
        let mut footer = if shown == page.total {
            format!("{} {noun} of {name}", page.total)
        } else {
            format!("{shown} of {} {noun} of {name}", page.total)
        };
        if page.more {
            let last = page.versions[page.versions.len() - 1].number;
            footer.push_str(" · next: ");
            footer.push_str(&next_command(args, &key, last, db_given));
        }
        let footer = out::printable(&footer);
        writeln!(out, "{}", out::paint(&footer, &Style::new().dim(), colour))?;
    }
    out.finish()?;
    Ok(true)
}

fn read_page(r: &Reader, key: &DocKey, limit: Option<u32>, before: Option<u32>) -> Result<Page> {
    // One more than the page: whether another follows.
    let wanted = limit.map_or(usize::MAX >> 1, |n| n as usize + 1);
    let mut versions = r.history(key, before, wanted)?;
    let more = limit.is_some_and(|n| versions.len() > n as usize);
    if let Some(n) = limit {
        versions.truncate(n as usize);
    }
    let total = r.count_versions(key)?;
    Ok(Page {
        versions,
        more,
        total,
    })
}

/// `VERSION  TIME  SIZE  TITLE`: the current version marked, a removal
/// in place of the size.
fn row(v: &Version) -> Vec<String> {
    let number = match v.current {
        true => format!("{} (current)", v.number),
        false => v.number.to_string(),
    };
    let size = match (&v.moved, v.removed()) {
        (Some(Moved::To(to)), _) => format!("moved to {to}"),
        (_, true) => "removed".to_string(),
        (Some(Moved::From(from)), false) => format!("{} (moved from {from})", out::size(v.size)),
        (None, false) => out::size(v.size),
    };
    vec![
        number,
        v.committed_ms
            .map(history::time_text)
            .unwrap_or_else(|| "-".to_string()),
        size,
        out::printable(&v.title).into_owned(),
    ]
}

/// The command line of the page after the one ending at version `last`.
fn next_command(args: &LogArgs, key: &DocKey, last: u32, db_given: bool) -> String {
    let mut words = vec![
        "orchestra log".to_string(),
        out::shell_word(&key.to_string()).into_owned(),
    ];
    if let Some(limit) = args.limit {
        words.push(format!("--limit {limit}"));
    }
    if db_given {
        words.push(format!("--db {}", out::shell_word(&args.db.shown())));
    }
    words.push(format!("--before {last}"));
    words.join(" ")
}
