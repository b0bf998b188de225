//! `orchestra links REF`: a document's links (what it links to, and whether each target exists) and its backlinks (which documents link to it, on which line), as rows or JSON Lines.

use std::io::Write;

use anyhow::Result;
use clap::Args;
use console::Style;

use orchestra::doc::DocKey;
use orchestra::links;
use orchestra::store::{InLink, OutLink, Reader};
use orchestra::table::{self, Layout};
use orchestra::uri;

use super::DbArg;
use super::out::{self, Out};

#[derive(Args)]
pub struct LinksArgs {
    /// The document: its URI (orchestra://features/FEAT-001) or prefix/id
    /// (features/FEAT-001).
    #[arg(value_name = "REF")]
    reference: String,
    /// Only the documents that link to it (backlinks).
    #[arg(long = "in", conflicts_with = "outgoing")]
    incoming: bool,
    /// Only the links it holds.
    #[arg(long = "out")]
    outgoing: bool,
    /// Print JSON Lines: one link per line, with its direction.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    db: DbArg,
}

/// Links read from the store at a time.
const PAGE: usize = 500;

/// Prints the links; false (after saying so) when the document does not
/// exist or has none in the directions asked for.
pub fn run(args: &LinksArgs) -> Result<bool> {
    let key = super::parse_ref(&args.reference)?;
    let reader = super::open(&args.db)?;
    let (outgoing, incoming) = reader
        .in_transaction(|| -> Result<_> {
            if !reader.exists(&key)? {
                return Ok(None);
            }
            let outgoing = match args.incoming {
                true => Vec::new(),
                false => all_out(&reader, &key)?,
            };
            let incoming = match args.outgoing {
                true => Vec::new(),
                false => all_in(&reader, &key)?,
            };
            Ok(Some((outgoing, incoming)))
        })?
        .map_or((None, None), |(o, i)| (Some(o), Some(i)));
    let (Some(outgoing), Some(incoming)) = (outgoing, incoming) else {
        return super::show::missing(&reader, &key);
    };
    let name = uri::format(&key);
    if outgoing.is_empty() && incoming.is_empty() {
        let what = match (args.incoming, args.outgoing) {
            (true, _) => "no document links to",
            (_, true) => "no links in",
            _ => "no links in or to",
        };
        eprintln!("orchestra: {what} {}", out::printable(&name));
        return Ok(false);
    }
    let mut out = Out::pageable();
    if args.json {
        for link in &outgoing {
            writeln!(out, "{}", with_direction(links::out_json(link), "out"))?;
        }
        for link in &incoming {
            writeln!(out, "{}", with_direction(links::in_json(link), "in"))?;
        }
        out.finish()?;
        return Ok(true);
    }
    let colour = out::colour();
    let rows: Vec<Vec<String>> = outgoing
        .iter()
        .map(|l| {
            let mut target = uri::format(&l.target);
            if !l.exists {
                target.push_str(" (missing)");
            }
            vec![
                "out".to_string(),
                format!("{name}:{}", l.line),
                target,
                out::printable(&l.text).into_owned(),
            ]
        })
        .chain(incoming.iter().map(|l| {
            vec![
                "in".to_string(),
                format!("{}:{}", uri::format(&l.source), l.line),
                name.clone(),
                out::printable(&l.context).into_owned(),
            ]
        }))
        .collect();
    let styles = match colour {
        true => vec![
            Style::new().dim(),
            Style::new(),
            Style::new().bold(),
            Style::new(),
        ],
        false => Vec::new(),
    };
    for line in table::render_styled(&rows, Layout::of_stdout(), &styles) {
        writeln!(out, "{line}")?;
    }
    out.finish()?;
    Ok(true)
}

fn all_out(reader: &Reader, key: &DocKey) -> Result<Vec<OutLink>> {
    let mut all: Vec<OutLink> = Vec::new();
    loop {
        let page = reader.links_out(key, all.last().map(|l| l.n), PAGE)?;
        let done = page.len() < PAGE;
        all.extend(page);
        if done {
            return Ok(all);
        }
    }
}

fn all_in(reader: &Reader, key: &DocKey) -> Result<Vec<InLink>> {
    let mut all: Vec<InLink> = Vec::new();
    loop {
        let page = reader.links_in(key, all.last().map(|l| (&l.source, l.n)), PAGE)?;
        let done = page.len() < PAGE;
        all.extend(page);
        if done {
            return Ok(all);
        }
    }
}

/// A link's JSON line: the tool's object, and which way it points.
fn with_direction(mut link: serde_json::Value, direction: &str) -> serde_json::Value {
    link["direction"] = direction.into();
    link
}
