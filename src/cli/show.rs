//! `orchestra show REF`: one document's bytes exactly as imported, or what is stored about it (`--meta`), or both as one JSON object; the nearest ids when it is missing. With `--version N` or a versioned URI, the same of a past version.

use std::io::Write;

use anyhow::{Context, Result, bail};
use base64::Engine;
use clap::Args;
use serde::Serialize;

use orchestra::doc::DocKey;
use orchestra::store::{DocMeta, Document, Fetched, Reader, VersionBody};
use orchestra::uri;

use super::DbArg;
use super::out::{self, Out};

/// The most ids suggested for a missing document.
const SUGGESTIONS: usize = 5;

#[derive(Args)]
pub struct ShowArgs {
    /// The document: its URI (orchestra://features/FEAT-001) or
    /// prefix/id (features/FEAT-001); a URI may name a version
    /// (orchestra://features/FEAT-001?version=3).
    #[arg(value_name = "REF")]
    reference: String,
    /// Show version N of the document (see `orchestra log`), current or
    /// past, instead of the document as it is.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    version: Option<u32>,
    /// Print what is stored about the document instead of its bytes:
    /// title, description, frontmatter, size, hash, updated, and the import
    /// that last changed it (of a version: its number, title, size, hash
    /// and the import that made it).
    #[arg(long)]
    meta: bool,
    /// Print one JSON object: what --meta prints and the body (as text, or
    /// base64 when it is not UTF-8); with --meta, no body.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    db: DbArg,
}

/// `show --json`.
#[derive(Serialize)]
struct JsonDoc<'a> {
    uri: String,
    prefix: &'static str,
    id: &'a str,
    title: &'a str,
    description: Option<&'a str>,
    frontmatter: serde_json::Value,
    size: u64,
    /// BLAKE3, hex.
    hash: String,
    updated: Option<String>,
    import: Import,
    #[serde(skip_serializing_if = "Option::is_none")]
    encoding: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    body: Option<String>,
}

/// `show --version N --json`: what a version has of [`JsonDoc`] (its
/// description, frontmatter and mtime are not kept per version), its number,
/// and whether it is the current one.
#[derive(Serialize)]
struct JsonVersion<'a> {
    uri: String,
    prefix: &'static str,
    id: &'a str,
    version: u32,
    current: bool,
    title: &'a str,
    size: u64,
    hash: String,
    import: Import,
    #[serde(skip_serializing_if = "Option::is_none")]
    encoding: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    body: Option<String>,
}

/// The import that last changed a document (or made a version).
#[derive(Serialize)]
struct Import {
    seq: i64,
    time: Option<String>,
}

/// Prints the document; false (after saying so, with the nearest ids) when
/// there is none.
pub fn run(args: &ShowArgs) -> Result<bool> {
    let (key, in_uri) = super::parse_versioned_ref(&args.reference)?;
    let version = match (in_uri, args.version) {
        (Some(a), Some(b)) if a != b => bail!(
            "{:?} names version {a} and --version {b}: give one",
            args.reference
        ),
        (a, b) => a.or(b),
    };
    let reader = super::open(&args.db)?;
    if let Some(number) = version {
        return show_version(args, &reader, &key, number);
    }
    if !args.meta && !args.json {
        let Some(doc) = body(&reader, &key)? else {
            return missing(&reader, &key);
        };
        // Bytes that are not text go to stdout as they are, never to a pager.
        let mut out = if doc.is_text {
            Out::pageable()
        } else {
            Out::stdout()
        };
        out.write_all(&doc.body)?;
        out.finish()?;
        return Ok(true);
    }
    // The metadata and the body of one commit.
    let found = reader.in_transaction(|| {
        let Some(meta) = reader.meta(&key)? else {
            return Ok(None);
        };
        let doc = match args.meta {
            true => None,
            false => body(&reader, &key)?,
        };
        Ok(Some((meta, doc)))
    })?;
    let Some((meta, doc)) = found else {
        return missing(&reader, &key);
    };
    let mut out = Out::pageable();
    if args.json {
        writeln!(out, "{}", json(&meta, doc.as_ref())?)?;
    } else {
        for line in out::fields(&fields(&meta), out::colour()) {
            writeln!(out, "{line}")?;
        }
    }
    out.finish()?;
    Ok(true)
}

/// Prints version `number` of `key` as `run` prints a document; false
/// (after saying which versions there are) when it has no bytes to show.
fn show_version(args: &ShowArgs, r: &Reader, key: &DocKey, number: u32) -> Result<bool> {
    let Some(read) = r.version(key, number)? else {
        let versions = r.history(key, None, usize::MAX >> 1)?;
        return Ok(super::no_version(key, number, &versions));
    };
    if !args.meta && !args.json {
        let mut out = match read.version.is_text {
            true => Out::pageable(),
            false => Out::stdout(),
        };
        out.write_all(&read.body)?;
        out.finish()?;
        return Ok(true);
    }
    let mut out = Out::pageable();
    if args.json {
        writeln!(out, "{}", version_json(&read, !args.meta)?)?;
    } else {
        for line in out::fields(&version_fields(&read), out::colour()) {
            writeln!(out, "{line}")?;
        }
    }
    out.finish()?;
    Ok(true)
}

/// The whole document, body loaded whatever its size.
fn body(r: &Reader, key: &DocKey) -> Result<Option<Document>> {
    Ok(match r.get(key, u64::MAX)? {
        Some(Fetched::Document(doc)) => Some(doc),
        Some(Fetched::TooLarge { .. }) => unreachable!("no body is over u64::MAX bytes"),
        None => None,
    })
}

/// Says that `key` is missing and which ids of its prefix are nearest.
pub(super) fn missing(r: &Reader, key: &DocKey) -> Result<bool> {
    let near = r.nearest(key, SUGGESTIONS)?;
    eprintln!(
        "orchestra: no document {}",
        out::printable(&key.to_string())
    );
    if !near.is_empty() {
        let near: Vec<String> = near.iter().map(ToString::to_string).collect();
        eprintln!("did you mean: {}", out::printable(&near.join(", ")));
    }
    Ok(false)
}

/// The `key: value` lines of `--meta`; absent values are left out.
fn fields(meta: &DocMeta) -> Vec<(&'static str, String)> {
    let mut fields = vec![
        ("uri", uri::format(&meta.key)),
        ("title", meta.title.clone()),
    ];
    if let Some(description) = &meta.description {
        fields.push(("description", description.clone()));
    }
    if let Some(frontmatter) = &meta.frontmatter {
        fields.push(("frontmatter", frontmatter.clone()));
    }
    fields.push(("size", size(meta.size)));
    fields.push(("hash", hex(&meta.hash)));
    if let Some(updated) = out::time_ns(meta.mtime_ns) {
        fields.push(("updated", updated));
    }
    fields.push(("import", import(meta.seq, meta.changed_ms)));
    fields
}

/// The `--meta` lines of a version.
fn version_fields(read: &VersionBody) -> Vec<(&'static str, String)> {
    let v = &read.version;
    let number = match v.current {
        true => format!("{} (current)", v.number),
        false => v.number.to_string(),
    };
    vec![
        ("uri", uri::format_versioned(&v.key, v.number)),
        ("version", number),
        ("title", v.title.clone()),
        ("size", size(v.size)),
        ("hash", v.hash.as_ref().map(|h| hex(h)).unwrap_or_default()),
        ("import", import(v.seq, v.committed_ms)),
    ]
}

/// The `--json` object of a version, with its body when `body`.
fn version_json(read: &VersionBody, body: bool) -> Result<String> {
    let v = &read.version;
    let (encoding, body) = match body {
        true => encode(&read.body, v.is_text),
        false => (None, None),
    };
    Ok(serde_json::to_string(&JsonVersion {
        uri: uri::format_versioned(&v.key, v.number),
        prefix: v.key.prefix.as_str(),
        id: &v.key.id,
        version: v.number,
        current: v.current,
        title: &v.title,
        size: v.size,
        hash: v.hash.as_ref().map(|h| hex(h)).unwrap_or_default(),
        import: Import {
            seq: v.seq,
            time: v.committed_ms.and_then(out::time_ms),
        },
        encoding,
        body,
    })?)
}

/// A body in JSON: as text when it is, else base64.
fn encode(body: &[u8], is_text: bool) -> (Option<&'static str>, Option<String>) {
    match std::str::from_utf8(body) {
        Ok(text) if is_text => (Some("utf-8"), Some(text.to_string())),
        _ => (
            Some("base64"),
            Some(base64::engine::general_purpose::STANDARD.encode(body)),
        ),
    }
}

/// A size in `--meta`: bytes, and in larger units from 1000.
fn size(bytes: u64) -> String {
    match bytes {
        n if n < 1000 => format!("{n} bytes"),
        n => format!("{} ({n} bytes)", out::size(n)),
    }
}

/// An import in `--meta`: its sequence number, and when it committed.
fn import(seq: i64, committed_ms: Option<i64>) -> String {
    match committed_ms.and_then(out::time_ms) {
        Some(time) => format!("{seq} at {time}"),
        None => seq.to_string(),
    }
}

/// The `--json` object: the metadata, and the body when there is one.
fn json(meta: &DocMeta, doc: Option<&Document>) -> Result<String> {
    let (encoding, body) = match doc {
        None => (None, None),
        Some(doc) => encode(&doc.body, doc.is_text),
    };
    let frontmatter = match &meta.frontmatter {
        Some(text) => serde_json::from_str(text)
            .with_context(|| format!("the stored frontmatter of {}", meta.key))?,
        None => serde_json::Value::Null,
    };
    Ok(serde_json::to_string(&JsonDoc {
        uri: uri::format(&meta.key),
        prefix: meta.key.prefix.as_str(),
        id: &meta.key.id,
        title: &meta.title,
        description: meta.description.as_deref(),
        frontmatter,
        size: meta.size,
        hash: hex(&meta.hash),
        updated: out::time_ns(meta.mtime_ns),
        import: Import {
            seq: meta.seq,
            time: meta.changed_ms.and_then(out::time_ms),
        },
        encoding,
        body,
    })?)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
