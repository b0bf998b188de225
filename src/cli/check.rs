//! `orchestra check`: the problems of a project as its last import left it, one line each (`PATH:LINE: KIND: message`) or JSON Lines, for a docs repository's CI: broken links, frontmatter that does not parse, documents that are not UTF-8, ids that differ only in case, files the import skipped, and titles used twice in a prefix.
//!
//! Everything comes from the database, read-only and in one read
//! transaction: the links import found (`links`), the files it left out
//! (`skipped`), and one pass over the documents in key order that loads a
//! body only where a problem must be located in it (`Reader::check_page`).
//! The folder is only where the paths point: it must be the project the
//! database holds. Run `orchestra import` first, so that the database is
//! the folder's.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::Args;
use serde_json::json;

use orchestra::doc::DocKey;
use orchestra::frontmatter;
use orchestra::store::{Access, BrokenLink, CheckRow, Reader, Store};
use orchestra::uri;

use super::DbArg;
use super::out::{self, Out};

#[derive(Args)]
pub struct CheckArgs {
    /// The project folder the database holds; paths are shown under it
    /// [default: the one the database names]
    #[arg(value_name = "DIR")]
    dir: Option<PathBuf>,
    /// Print JSON Lines: one object per problem (path, line, kind, message,
    /// and the link's target for a broken link).
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    db: DbArg,
}

/// Rows read from the store at a time.
const PAGE: usize = 1000;

/// What kind of problem a line reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    BrokenLink,
    Frontmatter,
    NotUtf8,
    CaseCollision,
    Skipped,
    DuplicateTitle,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::BrokenLink => "broken-link",
            Kind::Frontmatter => "frontmatter",
            Kind::NotUtf8 => "not-utf8",
            Kind::CaseCollision => "case-collision",
            Kind::Skipped => "skipped",
            Kind::DuplicateTitle => "duplicate-title",
        }
    }
}

/// One problem: a file of the project, a line of it (from 1), what is
/// wrong.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Problem {
    /// Relative to the project folder.
    path: String,
    line: u32,
    kind: Kind,
    message: String,
    /// The missing document a broken link names.
    target: Option<String>,
}

/// Prints the problems; false when there were some.
pub fn run(args: &CheckArgs) -> Result<bool> {
    let location = args.db.location()?;
    let store = Store::open(&location, Access::ReadOnly)?;
    let root = store.project_root()?.with_context(|| {
        format!("the database {location} holds no project: run orchestra import DIR first")
    })?;
    let shown_root = shown_root(args.dir.as_deref(), Path::new(&root))?;
    let reader = store.reader()?;
    let mut problems = reader.in_transaction(|| find(&reader))?;
    problems.sort();

    let mut out = Out::stdout();
    for p in &problems {
        let path = shown_root.join(&p.path);
        let path = path.to_string_lossy();
        if args.json {
            let mut line = json!({
                "path": path,
                "line": p.line,
                "kind": p.kind.as_str(),
                "message": p.message,
            });
            if let Some(target) = &p.target {
                line["target"] = target.as_str().into();
            }
            writeln!(out, "{line}")?;
        } else {
            writeln!(
                out,
                "{}:{}: {}: {}",
                out::printable(&path),
                p.line,
                p.kind.as_str(),
                out::printable(&p.message)
            )?;
        }
    }
    out.finish()?;
    if !problems.is_empty() {
        let files = problems
            .iter()
            .map(|p| &p.path)
            .collect::<std::collections::BTreeSet<_>>()
            .len();
        eprintln!(
            "orchestra: {} in {}",
            plural(problems.len(), "problem"),
            plural(files, "file")
        );
    }
    Ok(problems.is_empty())
}

fn plural(n: usize, what: &str) -> String {
    match n {
        1 => format!("1 {what}"),
        n => format!("{n} {what}s"),
    }
}

/// The folder the paths are shown under: `dir` as given (which must be
/// the project the database holds), else the project's folder, relative
/// when it is the working folder.
fn shown_root(dir: Option<&Path>, root: &Path) -> Result<PathBuf> {
    if !root.is_dir() {
        bail!(
            "the project folder {} that the database holds is not there",
            root.display()
        );
    }
    match dir {
        Some(dir) => {
            let canonical = dir
                .canonicalize()
                .with_context(|| format!("cannot open the folder {}", dir.display()))?;
            if canonical != root {
                bail!(
                    "{} is not the project the database holds ({}): import it first, or name that folder",
                    dir.display(),
                    root.display()
                );
            }
            Ok(dir.to_path_buf())
        }
        None => match std::env::current_dir()?.canonicalize() {
            Ok(cwd) if cwd == root => Ok(PathBuf::new()),
            _ => Ok(root.to_path_buf()),
        },
    }
}

/// A document's file, relative to the project folder.
fn file_of(key: &DocKey) -> String {
    format!("{}/{}.md", key.prefix.as_str(), key.id)
}

/// Every problem the store knows of, in no order.
fn find(reader: &Reader) -> Result<Vec<Problem>> {
    let mut problems = Vec::new();
    broken_links(reader, &mut problems)?;
    for file in reader.skipped_files()? {
        problems.push(Problem {
            path: file.path,
            line: 1,
            kind: Kind::Skipped,
            message: format!(
                "the last import left it out: {}",
                file.reason
                    .strip_suffix(": skipped")
                    .unwrap_or(&file.reason)
            ),
            target: None,
        });
    }
    // One pass over the documents: the bodies check must read, and the ids
    // and titles that two documents share.
    let mut by_folded_id: HashMap<(&'static str, String), DocKey> = HashMap::new();
    let mut by_title: HashMap<(&'static str, String), DocKey> = HashMap::new();
    let mut titled_twice: Vec<(DocKey, String, DocKey)> = Vec::new();
    let mut after: Option<DocKey> = None;
    loop {
        let page = reader.check_page(after.as_ref(), PAGE)?;
        let done = page.len() < PAGE;
        for row in &page {
            let prefix = row.key.prefix.as_str();
            if let Some(first) = by_folded_id.get(&(prefix, row.key.id.to_lowercase())) {
                problems.push(Problem {
                    path: file_of(&row.key),
                    line: 1,
                    kind: Kind::CaseCollision,
                    message: format!(
                        "its name differs from {} only in case: they are one file on a case-insensitive file system (macOS, Windows)",
                        file_of(first)
                    ),
                    target: None,
                });
            } else {
                by_folded_id.insert((prefix, row.key.id.to_lowercase()), row.key.clone());
            }
            match by_title.get(&(prefix, row.title.clone())) {
                Some(first) => {
                    titled_twice.push((row.key.clone(), row.title.clone(), first.clone()))
                }
                None => {
                    by_title.insert((prefix, row.title.clone()), row.key.clone());
                }
            }
            problems.extend(in_body(row));
        }
        if done {
            break;
        }
        after = page.last().map(|row| row.key.clone());
    }
    for (key, title, first) in titled_twice {
        problems.push(Problem {
            path: file_of(&key),
            line: title_line(reader, &key, &title)?,
            kind: Kind::DuplicateTitle,
            message: format!(
                "{:?} is also the title of {}: in lists and search the two differ only by their ids",
                title,
                file_of(&first)
            ),
            target: None,
        });
    }
    Ok(problems)
}

fn broken_links(reader: &Reader, problems: &mut Vec<Problem>) -> Result<()> {
    let mut last: Option<BrokenLink> = None;
    loop {
        let page = reader.broken_links(last.as_ref().map(|l| (&l.source, l.n)), PAGE)?;
        let done = page.len() < PAGE;
        for link in &page {
            let target = uri::format(&link.target);
            problems.push(Problem {
                path: file_of(&link.source),
                line: link.line,
                kind: Kind::BrokenLink,
                message: format!(
                    "{:?} links to {target}, which is not in the project ({} is missing)",
                    link.text,
                    file_of(&link.target)
                ),
                target: Some(target),
            });
        }
        if done {
            return Ok(());
        }
        last = page.last().cloned();
    }
}

/// The problems inside a document's bytes, when the store gave them.
fn in_body(row: &CheckRow) -> Option<Problem> {
    let body = row.body.as_deref()?;
    let path = file_of(&row.key);
    match std::str::from_utf8(body) {
        Err(e) => {
            let at = e.valid_up_to();
            Some(Problem {
                path,
                line: line_at(body, at),
                kind: Kind::NotUtf8,
                message: format!(
                    "not UTF-8 (byte {at} is not): imported as a binary document, which is not searched, linked or shown as text"
                ),
                target: None,
            })
        }
        Ok(text) if row.is_text => {
            let warning = frontmatter::extract(text).warning?;
            Some(Problem {
                path,
                line: yaml_line(&warning).map_or(1, |line| line + 1),
                kind: Kind::Frontmatter,
                message: format!("{warning}: its title, description and fields are not read"),
                target: None,
            })
        }
        Ok(_) => None,
    }
}

/// The line (from 1) of byte `at`.
fn line_at(bytes: &[u8], at: usize) -> u32 {
    bytes[..at].iter().filter(|&&b| b == b'\n').count() as u32 + 1
}

/// The line inside the YAML block that a parser's message names ("… at
/// line 3 column 5"), from 1.
fn yaml_line(message: &str) -> Option<u32> {
    let (_, rest) = message.split_once(" at line ")?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// The line of a document that gives its title: its frontmatter's
/// `title:`, else its first heading of that text; else 1.
fn title_line(reader: &Reader, key: &DocKey, title: &str) -> Result<u32> {
    let Some(orchestra::store::Fetched::Document(doc)) = reader.get(key, u64::MAX)? else {
        return Ok(1);
    };
    let Ok(text) = std::str::from_utf8(&doc.body) else {
        return Ok(1);
    };
    let frontmatter_lines = frontmatter::split(text).map_or(0, |(_, body)| {
        text[..text.len() - body.len()].lines().count()
    });
    for (i, line) in text.lines().enumerate() {
        let found = match i < frontmatter_lines {
            true => line.starts_with("title:"),
            false => line.trim_start_matches('#').trim() == title && line.starts_with('#'),
        };
        if found {
            return Ok(i as u32 + 1);
        }
    }
    Ok(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_of_a_yaml_message_and_of_a_byte() {
        assert_eq!(
            yaml_line(
                "malformed frontmatter: mapping values are not allowed in this context at line 2 column 8"
            ),
            Some(2)
        );
        assert_eq!(yaml_line("malformed frontmatter: expected a mapping"), None);
        assert_eq!(line_at(b"a\nb\n\xff", 4), 3);
        assert_eq!(line_at(b"\xff", 0), 1);
    }
}
