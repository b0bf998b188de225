//! `orchestra search`: a page of hits, one per line (aligned on a terminal, with a footer giving the next page's cursor), or JSON Lines.

use std::io::Write;

use anyhow::Result;
use clap::Args;

use orchestra::cursor;
use orchestra::search::{self, Filter, Search, Under};
use orchestra::table::{self, Layout};
use orchestra::uri;

use super::DbArg;

#[derive(Args)]
pub struct SearchArgs {
    /// Words to find: `login code` (both), `"sign in"` (phrase), `sync*`
    /// (prefix), `-draft` (without), `login OR signin` (either); several
    /// arguments are one query (put an exclusion after `--`: `-- -draft`).
    /// May be empty ("") with --under or --where.
    #[arg(required = true, num_args = 1..)]
    query: Vec<String>,
    /// Only documents under this prefix or folder: features, notes, docs, docs/adr.
    #[arg(long, value_name = "PREFIX[/FOLDER]")]
    under: Option<String>,
    /// Only documents whose frontmatter KEY equals VALUE (or whose list KEY
    /// holds VALUE); repeat to require several.
    #[arg(long = "where", value_name = "KEY=VALUE")]
    filters: Vec<String>,
    /// Hits to show, 1-100.
    #[arg(long, value_name = "N", default_value_t = search::DEFAULT_LIMIT as i64)]
    limit: i64,
    /// Continue a search: the cursor printed after its previous page.
    #[arg(long, value_name = "CURSOR")]
    cursor: Option<String>,
    /// Print JSON Lines: one hit per line.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    db: DbArg,
}

/// Prints a page of hits; true when there was at least one.
pub fn run(args: &SearchArgs) -> Result<bool> {
    let under = args.under.as_deref().map(Under::parse).transpose()?;
    let filters = args
        .filters
        .iter()
        .map(|f| Filter::parse(f))
        .collect::<Result<Vec<_>, _>>()?;
    let limit = search::limit(args.limit)?;
    let query = Search::new(args.query.join(" "), under, filters)?;
    let fingerprint = query.fingerprint();
    let resume = args
        .cursor
        .as_deref()
        .map(|c| cursor::decode_search(c, &fingerprint))
        .transpose()?;
    let page = super::open(&args.db)?.search(&query, resume.as_ref(), limit)?;
    let how = search::how_answered(&query, page.terms.as_deref(), page.relaxed);
    // For people, on stderr: stdout stays one hit per line.
    if !how.is_empty() {
        eprintln!("{how}");
    }
    let mut out = std::io::stdout().lock();
    if args.json {
        for hit in &page.hits {
            let mut line = serde_json::json!({
                "uri": uri::format(&hit.key),
                "title": hit.title,
                "snippet": hit.snippet,
                "score": hit.score,
            });
            // How the search was answered, on every line, as the tool's
            // structuredContent says it.
            if page.relaxed {
                line["relaxed"] = serde_json::Value::Bool(true);
            }
            if let Some(terms) = &page.terms {
                line["terms"] = serde_json::json!(terms);
            }
            if let Some(description) = &hit.description {
                line["description"] = serde_json::Value::from(description.clone());
            }
            writeln!(out, "{line}")?;
        }
        return Ok(!page.hits.is_empty());
    }
    let layout = Layout::of_stdout();
    let rows: Vec<Vec<String>> = page
        .hits
        .iter()
        .map(|hit| {
            vec![
                uri::format(&hit.key),
                hit.title.clone(),
                hit.snippet.clone(),
            ]
        })
        .collect();
    for line in table::render(&rows, layout) {
        writeln!(out, "{line}")?;
    }
    if matches!(layout, Layout::Terminal { .. }) && !page.hits.is_empty() {
        let shown = page.hits.len();
        match &page.next {
            Some(next) => writeln!(
                out,
                "{shown} of {} hits; next page: --cursor {}",
                page.total,
                cursor::encode_search(&fingerprint, next)
            )?,
            None => writeln!(out, "{} hits", page.total)?,
        }
    }
    Ok(!page.hits.is_empty())
}
