//! `orchestra ls`: the documents under a prefix or folder (or all), in key order, a keyset page at a time: aligned rows and a footer on a terminal, plain rows in a pipe, or JSON Lines.

use std::io::Write;

use anyhow::{Context, Result, bail};
use clap::Args;
use console::Style;
use serde::Serialize;

use orchestra::doc::{DocKey, is_valid_id};
use orchestra::search::Under;
use orchestra::store::{DocSummary, Reader};
use orchestra::table::{self, Layout};
use orchestra::uri;

use super::DbArg;
use super::out::{self, Out};

const DEFAULT_LIMIT: u32 = 50;
const MAX_LIMIT: u32 = 1000;
/// The fewest columns a title gets on a terminal, however narrow.
const MIN_TITLE: usize = 12;

#[derive(Args)]
pub struct LsArgs {
    /// Only the documents under this prefix or folder: features, notes,
    /// docs, docs/adr [default: all]
    #[arg(value_name = "UNDER")]
    under: Option<String>,
    /// Documents per page, 1-1000.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_LIMIT,
          value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_LIMIT)))]
    limit: u32,
    /// Start after this document: its id under UNDER (FEAT-050, adr/0002),
    /// or without UNDER its prefix/id or URI. On a terminal the footer
    /// gives the next page's command.
    #[arg(long, value_name = "ID")]
    after: Option<String>,
    /// Print JSON Lines: one document per line.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    db: DbArg,
}

/// One line of `ls --json`.
#[derive(Serialize)]
struct JsonLine<'a> {
    uri: String,
    prefix: &'static str,
    id: &'a str,
    title: &'a str,
    description: Option<&'a str>,
    size: u64,
    updated: Option<String>,
    frontmatter: serde_json::Value,
}

/// What one page shows, read from one commit.
struct Page {
    docs: Vec<DocSummary>,
    /// Each document's frontmatter as JSON text, for `--json` (else empty).
    frontmatter: Vec<Option<String>>,
    /// Whether documents follow the page.
    more: bool,
    /// The documents of the whole listing, for the terminal's footer.
    total: Option<u64>,
}

/// Prints one page; true when it held a document. `db_given`: `--db` was on
/// the command line, so the next page's command repeats it.
pub fn run(args: &LsArgs, db_given: bool) -> Result<bool> {
    let under = args.under.as_deref().map(Under::parse).transpose()?;
    let after = args
        .after
        .as_deref()
        .map(|after| resume_point(after, under.as_ref()))
        .transpose()?;
    let layout = if args.json {
        Layout::Plain
    } else {
        Layout::of_stdout()
    };
    let terminal = matches!(layout, Layout::Terminal { .. });
    let reader = super::open(&args.db)?;
    // The page and its count from one commit.
    let page = reader.in_transaction(|| {
        read_page(
            &reader,
            under.as_ref(),
            after.as_ref(),
            args.limit as usize,
            args.json,
            terminal,
        )
    })?;
    let scope = under
        .as_ref()
        .map(|u| format!(" under {u}"))
        .unwrap_or_default();
    if page.docs.is_empty() {
        let after = args
            .after
            .as_deref()
            .map(|a| format!(" after {a}"))
            .unwrap_or_default();
        eprintln!("orchestra: no documents{scope}{after}");
        return Ok(false);
    }
    let mut out = Out::pageable();
    if args.json {
        for (doc, frontmatter) in page.docs.iter().zip(&page.frontmatter) {
            let line = JsonLine {
                uri: uri::format(&doc.key),
                prefix: doc.key.prefix.as_str(),
                id: &doc.key.id,
                title: &doc.title,
                description: doc.description.as_deref(),
                size: doc.size,
                updated: out::time_ns(doc.mtime_ns),
                frontmatter: match frontmatter {
                    Some(text) => serde_json::from_str(text)
                        .with_context(|| format!("the stored frontmatter of {}", doc.key))?,
                    None => serde_json::Value::Null,
                },
            };
            writeln!(out, "{}", serde_json::to_string(&line)?)?;
        }
        out.finish()?;
        return Ok(true);
    }
    let colour = out::colour();
    let mut rows: Vec<Vec<String>> = page
        .docs
        .iter()
        .map(|doc| {
            vec![
                uri::format(&doc.key),
                out::printable(&doc.title).into_owned(),
                out::size(doc.size),
                out::time_ns(doc.mtime_ns).unwrap_or_else(|| "-".to_string()),
            ]
        })
        .collect();
    if let Layout::Terminal { width } = layout {
        fit_titles(&mut rows, width);
    }
    let styles = if colour {
        vec![
            Style::new(),
            Style::new().bold(),
            Style::new().dim(),
            Style::new().dim(),
        ]
    } else {
        Vec::new()
    };
    for line in table::render_styled(&rows, layout, &styles) {
        writeln!(out, "{line}")?;
    }
    if let Some(total) = page.total {
        let shown = page.docs.len();
        let noun = if total == 1 { "document" } else { "documents" };
        let mut footer = if shown as u64 == total {
            format!("{total} {noun}{scope}")
        } else {
            format!("{shown} of {total} {noun}{scope}")
        };
        if page.more {
            let last = &page.docs[shown - 1].key;
            footer.push_str(" · next: ");
            footer.push_str(&next_command(args, under.as_ref(), last, db_given));
        }
        writeln!(out, "{}", out::paint(&footer, &Style::new().dim(), colour))?;
    }
    out.finish()?;
    Ok(true)
}

/// Clips the titles (column 1) so that the size and time after them stay
/// on a line `width` wide, as far as a title of at least
/// [`MIN_TITLE`] columns allows.
fn fit_titles(rows: &mut [Vec<String>], width: usize) {
    let widest = |c: usize| {
        rows.iter()
            .map(|row| table::text_width(&row[c]).min(table::MAX_COLUMN))
            .max()
            .unwrap_or(0)
    };
    // Three gaps of two columns between the four.
    let others = widest(0) + widest(2) + widest(3) + 6;
    let title = width.saturating_sub(others).max(MIN_TITLE);
    for row in rows {
        row[1] = table::clip(&row[1], title);
    }
}

/// The key `--after` names: with UNDER an id of its prefix (or a URI of
/// that prefix), without it a `prefix/id` or URI.
fn resume_point(after: &str, under: Option<&Under>) -> Result<DocKey> {
    match under {
        None => super::parse_ref(after).context("--after"),
        Some(under) if after.contains("://") => {
            let key = super::parse_ref(after).context("--after")?;
            if key.prefix != under.prefix {
                bail!("--after: {after:?} is not under {}", under.prefix);
            }
            Ok(key)
        }
        Some(under) => {
            if !is_valid_id(after) {
                bail!("--after: {after:?} cannot be an id under {}", under.prefix);
            }
            Ok(DocKey::new(under.prefix, after))
        }
    }
}

fn read_page(
    r: &Reader,
    under: Option<&Under>,
    after: Option<&DocKey>,
    limit: usize,
    frontmatter: bool,
    count: bool,
) -> Result<Page> {
    // One more than the page: whether another follows.
    let mut docs = match under {
        Some(under) => r.page_under(under, after.map(|key| key.id.as_str()), limit + 1)?,
        None => r.page(after, limit + 1)?,
    };
    let more = docs.len() > limit;
    docs.truncate(limit);
    let frontmatter = match frontmatter {
        true => docs
            .iter()
            .map(|doc| Ok(r.meta(&doc.key)?.and_then(|meta| meta.frontmatter)))
            .collect::<Result<_>>()?,
        false => Vec::new(),
    };
    let total = match (count && !docs.is_empty(), under) {
        (false, _) => None,
        (true, Some(under)) => Some(r.count_under(under)?),
        (true, None) => Some(r.count()?),
    };
    Ok(Page {
        docs,
        frontmatter,
        more,
        total,
    })
}

/// The command line of the page after the one ending at `last`.
fn next_command(args: &LsArgs, under: Option<&Under>, last: &DocKey, db_given: bool) -> String {
    let mut words = vec!["orchestra ls".to_string()];
    if let Some(under) = under {
        words.push(out::shell_word(&under.to_string()).into_owned());
    }
    if args.limit != DEFAULT_LIMIT {
        words.push(format!("--limit {}", args.limit));
    }
    if db_given {
        words.push(format!("--db {}", out::shell_word(&args.db.shown())));
    }
    let after = match under {
        Some(_) => last.id.clone(),
        None => last.to_string(),
    };
    words.push(format!("--after {}", out::shell_word(&after)));
    words.join(" ")
}
