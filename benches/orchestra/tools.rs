//! The tools that read in parts and follow links, through the pipe (issue 34): `read` of one section and `outline` of a 5 MB document, and the first page of `links` to a document with 1,000 backlinks; beside what bounds each in the same run: SQLite's read of the 5 MB body, the outline computed in this process, and the backlinks page's own SQL.
//!
//! The 5 MB manual (`backlog::manual`) is written into the project and
//! imported for these figures (the time of that one-file import is shown
//! too), then removed and imported away again, so that the database and
//! the files hold N documents for the steps after this one. The backlinks
//! are the generator's (`backlog::backlinkers`): half bare mentions of
//! `FEAT-0000000`, half relative links to it.

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use orchestra::parts::{Lines, outline};
use rusqlite::{Connection, OpenFlags, params};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::Res;
use crate::backlog::{self, Backlog, LINKED, MANUAL_PATH, Manual};
use crate::import::import;
use crate::report::{Row, step};
use crate::rng::Rng;
use crate::stats::{median, micros, percentile};
use crate::stdio_client::{Envelope, Server};
use crate::units::ratio;

/// Timed calls of each tool (after [`WARMUP`] untimed ones), and timed
/// runs of each bound.
const READS: usize = 200;
const OUTLINES: usize = 100;
const LINK_PAGES: usize = 500;
const WARMUP: usize = 10;
/// Backlinks on the `links` tool's first page (its default limit).
const PAGE: usize = 50;

/// Issue 34's targets, at 100k documents.
const READ_TARGET_US: f64 = 2_000.0;
const OUTLINE_TARGET_US: f64 = 5_000.0;
const LINKS_TARGET_US: f64 = 5_000.0;

/// What a `tools/call` result holds (the parts checked).
#[derive(Deserialize)]
struct ToolResult {
    #[serde(rename = "structuredContent")]
    structured: Option<Value>,
    #[serde(rename = "isError")]
    is_error: Option<bool>,
}

/// Round trips (µs) of one tool call, and the reply lines' mean length.
#[derive(Default)]
pub struct Calls {
    pub us: Vec<f64>,
    pub reply_bytes: u64,
}

impl Calls {
    fn p(&self, p: f64) -> f64 {
        crate::stats::percentile_ms(&self.us, p)
    }

    fn mean_bytes(&self) -> f64 {
        self.reply_bytes as f64 / self.us.len().max(1) as f64
    }
}

pub struct ToolFigures {
    pub manual_bytes: usize,
    /// `orchestra import` of the manual alone into the database.
    pub manual_import_s: f64,
    pub read: Calls,
    pub outline: Calls,
    pub links: Calls,
    pub ping_p50_us: f64,
    /// Bounds, in this process on the same database (µs, p50): SQLite's
    /// read of the manual's body; that read with the outline computed
    /// (UTF-8 check, line table, `outline::headings`); the SQL of the
    /// first backlinks page.
    pub raw_body_us: f64,
    pub raw_outline_us: f64,
    pub raw_parse_us: f64,
    /// The part of `raw_parse_us` before `outline::headings`: the UTF-8
    /// check and the line table.
    pub raw_lines_us: f64,
    /// SQLite's read of one section's bytes alone (`substr` of the body at
    /// the offsets of its heading): what a design that kept the outline
    /// beside the document would read.
    pub raw_section_us: f64,
    pub raw_links_us: f64,
    pub backlinks: usize,
}

/// One `tools/call`: the round trip and the result's `structuredContent`,
/// or an error naming the call.
fn call(server: &mut Server, name: &str, arguments: &Value) -> Res<(Duration, Value, usize)> {
    let line = server.request_line(
        "tools/call",
        &json!({ "name": name, "arguments": arguments }),
    );
    let (took, reply) = server.call_line(&line)?;
    let envelope: Envelope<ToolResult> = serde_json::from_str(&reply)?;
    match (envelope.result, envelope.error) {
        (Some(result), None) if result.is_error != Some(true) => {
            let structured = result
                .structured
                .ok_or_else(|| format!("{name} {arguments}: no structuredContent"))?;
            Ok((took, structured, reply.len()))
        }
        _ => Err(format!("{name} {arguments} failed: {reply}").into()),
    }
}

/// The manual's key in the database.
fn manual_key() -> (&'static str, &'static str) {
    MANUAL_PATH.split_once('/').unwrap_or_default()
}

fn manual_uri() -> String {
    format!("orchestra://{MANUAL_PATH}")
}

/// The document the backlinks point to.
fn linked_uri(seed: u64) -> String {
    let path = backlog::doc_path(LINKED, &mut Rng::new(seed, LINKED as u64));
    format!("orchestra://{path}")
}

pub fn measure(bin: &Path, backlog: &Backlog, db: &Path, n: usize, seed: u64) -> Res<ToolFigures> {
    step(n, "tools: importing the 5 MB manual");
    let manual = backlog::manual(seed);
    let file = backlog.project.join(format!("{MANUAL_PATH}.md"));
    fs::create_dir_all(file.parent().ok_or("no folder")?)?;
    fs::write(&file, &manual.text)?;
    let (imported, report) = import(bin, &backlog.project, db)?;
    if report.new != 1 {
        return Err(format!("the manual's import: {} new, expected 1", report.new).into());
    }
    let figures = measure_on(bin, db, n, seed, &manual, imported.seconds);
    // Away again, whatever happened: the steps after this one count N.
    fs::remove_file(&file)?;
    let (_, report) = import(bin, &backlog.project, db)?;
    if report.unchanged != n as u64 || report.new + report.updated != 0 {
        return Err(format!(
            "the import that removes the manual: {} unchanged, expected {n}",
            report.unchanged
        )
        .into());
    }
    figures
}

fn measure_on(
    bin: &Path,
    db: &Path,
    n: usize,
    seed: u64,
    manual: &Manual,
    manual_import_s: f64,
) -> Res<ToolFigures> {
    step(
        n,
        "tools: bounds in process (SQLite, outline, backlinks SQL)",
    );
    let (raw_body_us, raw_outline_us, raw_parse_us, raw_lines_us, raw_section_us) =
        raw_outline(db, manual, seed)?;
    let (raw_links_us, raw_page) = raw_backlinks(db)?;
    if raw_page != PAGE + 1 && raw_page != backlog::backlinkers(n) {
        return Err(format!("the raw backlinks page has {raw_page} rows").into());
    }

    step(n, "tools: read, outline and links through the pipe");
    let mut server = Server::start(bin, db, None)?;
    let uri = manual_uri();
    let linked = linked_uri(seed);
    let backlinks = count_backlinks(&mut server, &linked)?;
    if backlinks != backlog::backlinkers(n) {
        return Err(format!(
            "{linked} has {backlinks} backlinks, not {}",
            backlog::backlinkers(n)
        )
        .into());
    }

    let mut rng = Rng::new(seed, 0x7001);
    let mut read = Calls::default();
    for k in 0..WARMUP + READS {
        let section = &manual.sections[rng.below(manual.sections.len())];
        let (took, page, bytes) = call(
            &mut server,
            "read",
            &json!({"uri": uri, "section": section}),
        )?;
        if page["truncated"] != json!(false) || page["section"].as_str().is_none() {
            return Err(format!("read of the section {section:?}: {page}").into());
        }
        if k >= WARMUP {
            read.us.push(micros(took));
            read.reply_bytes += bytes as u64;
        }
    }
    let mut outlined = Calls::default();
    for k in 0..WARMUP + OUTLINES {
        let (took, page, bytes) = call(&mut server, "outline", &json!({"uri": uri}))?;
        if page["size"].as_u64() != Some(manual.text.len() as u64) {
            return Err(format!("outline of the manual: size {}", page["size"]).into());
        }
        if k >= WARMUP {
            outlined.us.push(micros(took));
            outlined.reply_bytes += bytes as u64;
        }
    }
    let mut links = Calls::default();
    for k in 0..WARMUP + LINK_PAGES {
        let (took, page, bytes) = call(
            &mut server,
            "links",
            &json!({"uri": linked, "direction": "in"}),
        )?;
        let shown = page["backlinks"].as_array().map_or(0, Vec::len);
        if shown != PAGE.min(backlinks) {
            return Err(format!("links of {linked}: {shown} backlinks on the first page").into());
        }
        if k >= WARMUP {
            links.us.push(micros(took));
            links.reply_bytes += bytes as u64;
        }
    }
    let mut pings = Vec::with_capacity(READS);
    for _ in 0..READS {
        let line = server.request_line("ping", &json!({}));
        pings.push(server.call_line(&line)?.0);
    }
    server.stop()?;
    Ok(ToolFigures {
        manual_bytes: manual.text.len(),
        manual_import_s,
        read,
        outline: outlined,
        links,
        ping_p50_us: micros(median(&mut pings)),
        raw_body_us,
        raw_outline_us,
        raw_parse_us,
        raw_lines_us,
        raw_section_us,
        raw_links_us,
        backlinks,
    })
}

/// Follows the `links` tool's pages of backlinks to the end (untimed):
/// how many there are.
fn count_backlinks(server: &mut Server, uri: &str) -> Res<usize> {
    let mut count = 0;
    let mut cursor: Option<String> = None;
    loop {
        let mut arguments = json!({"uri": uri, "direction": "in", "limit": 200});
        if let Some(cursor) = &cursor {
            arguments["cursor"] = Value::from(cursor.clone());
        }
        let (_, page, _) = call(server, "links", &arguments)?;
        count += page["backlinks"].as_array().map_or(0, Vec::len);
        match page["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_string()),
            None => return Ok(count),
        }
    }
}

fn open(db: &Path) -> Res<Connection> {
    Ok(Connection::open_with_flags(
        db,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?)
}

/// p50s (µs) of SQLite's read of the manual's body alone, and of that
/// read with the outline computed as the tools compute it (the text
/// checked as UTF-8, its line table, `outline::headings`), and of the
/// computing alone (and of its first part, the UTF-8 check and the line
/// table): what a `read` of a section or an `outline` costs in this design
/// before any JSON; last, of SQLite's read of one random `###` section's
/// bytes by their offsets (`substr`).
fn raw_outline(db: &Path, manual: &Manual, seed: u64) -> Res<(f64, f64, f64, f64, f64)> {
    let conn = open(db)?;
    let mut get = conn.prepare("SELECT body FROM documents WHERE prefix = ?1 AND id = ?2")?;
    let (prefix, id) = manual_key();
    let (mut body, mut whole, mut parse, mut lined) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut sections = Vec::new();
    for k in 0..WARMUP + OUTLINES {
        let started = Instant::now();
        let bytes: Vec<u8> = get.query_row(params![prefix, id], |r| r.get(0))?;
        let read = started.elapsed();
        let parsing = Instant::now();
        let text = String::from_utf8(bytes)?;
        let lines = Lines::of(&text);
        let lines_done = Instant::now();
        let headings = outline::headings(&text, &lines);
        let done = Instant::now();
        if headings.len() != manual.headings {
            return Err(format!(
                "the manual has {} headings in process, not {}",
                headings.len(),
                manual.headings
            )
            .into());
        }
        if k >= WARMUP {
            body.push(read);
            whole.push(done - started);
            parse.push(done - parsing);
            lined.push(lines_done - parsing);
        }
        sections = headings
            .iter()
            .filter(|h| h.level == 3)
            .map(|h| (h.start, h.end))
            .collect();
    }
    let mut part =
        conn.prepare("SELECT substr(body, ?3, ?4) FROM documents WHERE prefix = ?1 AND id = ?2")?;
    let mut rng = Rng::new(seed, 0x5EC7);
    let mut section = Vec::with_capacity(READS);
    for k in 0..WARMUP + READS {
        let (start, end) = sections[rng.below(sections.len())];
        let started = Instant::now();
        let bytes: Vec<u8> = part.query_row(
            params![prefix, id, start as i64 + 1, (end - start) as i64],
            |r| r.get(0),
        )?;
        let took = started.elapsed();
        if bytes.len() != end - start || !bytes.starts_with(b"### ") {
            return Err("substr of a section's offsets is not the section".into());
        }
        if k >= WARMUP {
            section.push(took);
        }
    }
    Ok((
        micros(median(&mut body)),
        micros(median(&mut whole)),
        micros(median(&mut parse)),
        micros(median(&mut lined)),
        micros(median(&mut section)),
    ))
}

/// p50 (µs) of the first page of backlinks of `LINKED` as the store's SQL
/// gives it (`links_in`: the first document of its name, then its links
/// and the mentions of its name, 51 of each, merged), and the page's rows.
fn raw_backlinks(db: &Path) -> Res<(f64, usize)> {
    let conn = open(db)?;
    let mut names =
        conn.prepare("SELECT prefix, id FROM names WHERE name = ?1 ORDER BY prefix, id LIMIT 1")?;
    let mut to = conn.prepare(
        "SELECT prefix, id, n, line, text, context FROM links
         WHERE target_prefix = ?1 AND target_id = ?2 AND (prefix, id, n) > (?3, ?4, ?5)
         ORDER BY prefix, id, n LIMIT ?6",
    )?;
    let name = format!("FEAT-{LINKED:07}");
    let mut samples = Vec::with_capacity(LINK_PAGES);
    let mut rows = 0;
    for k in 0..WARMUP + LINK_PAGES {
        let started = Instant::now();
        let first: (String, String) = names.query_row([&name], |r| Ok((r.get(0)?, r.get(1)?)))?;
        let mut page: Vec<(String, String, i64, i64, String, String)> = Vec::new();
        for (prefix, id) in [(first.0.as_str(), first.1.as_str()), ("", name.as_str())] {
            let found = to.query_map(params![prefix, id, "", "", -1, (PAGE + 1) as i64], |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                ))
            })?;
            for row in found {
                page.push(row?);
            }
        }
        page.sort_by(|a, b| (&a.0, &a.1, a.2).cmp(&(&b.0, &b.1, b.2)));
        page.truncate(PAGE + 1);
        if k >= WARMUP {
            samples.push(started.elapsed());
        }
        rows = page.len();
    }
    Ok((micros(percentile(&mut samples, 50.0)), rows))
}

impl ToolFigures {
    pub fn rows(&self, n: usize) -> Vec<Row> {
        let at_100k = n == 100_000;
        let mb = self.manual_bytes as f64 / 1e6;
        let kb = |bytes: f64| format!("{:.1} KB", bytes / 1e3);
        let mut rows = vec![
            Row {
                figure: format!(
                    "`read` p50: one section of a {mb:.1} MB document (raw: SQLite's read of its body)"
                ),
                unit: "µs",
                raw: Some(self.raw_body_us),
                orchestra: Ok(self.read.p(50.0)),
                ratio: ratio(self.raw_body_us, self.read.p(50.0)),
                target: "≤ 2 ms at 100k".into(),
                meets: at_100k.then_some(self.read.p(50.0) <= READ_TARGET_US),
                why: format!(
                    "replies of {}; in process, the body read and its outline: {}; the section's bytes alone (SQLite `substr`): {}",
                    kb(self.read.mean_bytes()),
                    crate::units::fmt_value(self.raw_outline_us, "µs"),
                    crate::units::fmt_value(self.raw_section_us, "µs")
                ),
            },
            Row {
                figure: "`read` p99: one section of the same document".into(),
                unit: "µs",
                raw: None,
                orchestra: Ok(self.read.p(99.0)),
                ratio: String::new(),
                target: String::new(),
                meets: None,
                why: String::new(),
            },
            Row {
                figure: format!(
                    "`outline` p50: the {mb:.1} MB document (raw: in process, SQLite's read of its body and the outline: `Lines::of`, `outline::headings`)"
                ),
                unit: "µs",
                raw: Some(self.raw_outline_us),
                orchestra: Ok(self.outline.p(50.0)),
                ratio: ratio(self.raw_outline_us, self.outline.p(50.0)),
                target: "≤ 5 ms at 100k".into(),
                meets: at_100k.then_some(self.outline.p(50.0) <= OUTLINE_TARGET_US),
                why: format!(
                    "replies of {}; the outline alone in process: {}, of which the UTF-8 check and line table {}",
                    kb(self.outline.mean_bytes()),
                    crate::units::fmt_value(self.raw_parse_us, "µs"),
                    crate::units::fmt_value(self.raw_lines_us, "µs")
                ),
            },
            Row {
                figure: format!(
                    "`links` p50: first page ({PAGE}) of the {} backlinks of a document (raw: the page's SQL)",
                    crate::units::thousands(self.backlinks as u64)
                ),
                unit: "µs",
                raw: Some(self.raw_links_us),
                orchestra: Ok(self.links.p(50.0)),
                ratio: ratio(self.raw_links_us, self.links.p(50.0)),
                target: "≤ 5 ms at 100k".into(),
                meets: at_100k.then_some(self.links.p(50.0) <= LINKS_TARGET_US),
                why: format!("replies of {}", kb(self.links.mean_bytes())),
            },
            Row {
                figure: "`links` p99: the same page".into(),
                unit: "µs",
                raw: None,
                orchestra: Ok(self.links.p(99.0)),
                ratio: String::new(),
                target: String::new(),
                meets: None,
                why: String::new(),
            },
        ];
        rows.push(Row {
            figure: "round-trip floor of the tools' server: ping p50".into(),
            unit: "µs",
            raw: None,
            orchestra: Ok(self.ping_p50_us),
            ratio: String::new(),
            target: String::new(),
            meets: None,
            why: String::new(),
        });
        rows.push(Row {
            figure: format!("import of the {mb:.1} MB document alone (one new file)"),
            unit: "s",
            raw: None,
            orchestra: Ok(self.manual_import_s),
            ratio: String::new(),
            target: String::new(),
            meets: None,
            why: String::new(),
        });
        rows
    }

    pub fn to_json(&self) -> Value {
        let calls = |c: &Calls| {
            json!({
                "samples": c.us.len(),
                "p50_us": c.p(50.0),
                "p99_us": c.p(99.0),
                "mean_reply_bytes": c.mean_bytes(),
            })
        };
        json!({
            "manual_bytes": self.manual_bytes,
            "manual_import_s": self.manual_import_s,
            "read_section": calls(&self.read),
            "outline": calls(&self.outline),
            "links_in_first_page": calls(&self.links),
            "backlinks": self.backlinks,
            "ping_p50_us": self.ping_p50_us,
            "raw_body_read_p50_us": self.raw_body_us,
            "raw_body_read_and_outline_p50_us": self.raw_outline_us,
            "raw_outline_only_p50_us": self.raw_parse_us,
            "raw_utf8_and_lines_p50_us": self.raw_lines_us,
            "raw_section_substr_p50_us": self.raw_section_us,
            "raw_backlinks_page_p50_us": self.raw_links_us,
        })
    }
}
