//! `orchestra show REF`: one document's bytes exactly as imported, or what is stored about it (`--meta`), or both as one JSON object; the nearest ids when it is missing.

use std::io::Write;

use anyhow::{Context, Result};
use base64::Engine;
use clap::Args;
use serde::Serialize;

use orchestra::doc::DocKey;
use orchestra::store::{DocMeta, Document, Fetched, Reader};
use orchestra::uri;

use super::DbArg;
use super::out::{self, Out};

/// The most ids suggested for a missing document.
const SUGGESTIONS: usize = 5;

#[derive(Args)]
pub struct ShowArgs {
    /// The document: its URI (orchestra://features/FEAT-001) or
    /// prefix/id (features/FEAT-001).
    #[arg(value_name = "REF")]
    reference: String,
    /// Print what is stored about the document instead of its bytes:
    /// title, description, frontmatter, size, hash, updated, and the import
    /// that last changed it.
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

/// The import that last changed a document.
#[derive(Serialize)]
struct Import {
    seq: i64,
    time: Option<String>,
}

/// Prints the document; false (after saying so, with the nearest ids) when
/// there is none.
pub fn run(args: &ShowArgs) -> Result<bool> {
    let key = super::parse_ref(&args.reference)?;
    let reader = super::open(&args.db)?;
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

/// The whole document, body loaded whatever its size.
fn body(r: &Reader, key: &DocKey) -> Result<Option<Document>> {
    Ok(match r.get(key, u64::MAX)? {
        Some(Fetched::Document(doc)) => Some(doc),
        Some(Fetched::TooLarge { .. }) => unreachable!("no body is over u64::MAX bytes"),
        None => None,
    })
}

/// Says that `key` is missing and which ids of its prefix are nearest.
fn missing(r: &Reader, key: &DocKey) -> Result<bool> {
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
    let size = match meta.size {
        n if n < 1000 => format!("{n} bytes"),
        n => format!("{} ({n} bytes)", out::size(n)),
    };
    fields.push(("size", size));
    fields.push(("hash", hex(&meta.hash)));
    if let Some(updated) = out::time_ns(meta.mtime_ns) {
        fields.push(("updated", updated));
    }
    let import = match meta.changed_ms.and_then(out::time_ms) {
        Some(time) => format!("{} at {time}", meta.seq),
        None => meta.seq.to_string(),
    };
    fields.push(("import", import));
    fields
}

/// The `--json` object: the metadata, and the body when there is one.
fn json(meta: &DocMeta, doc: Option<&Document>) -> Result<String> {
    let (encoding, body) = match doc {
        None => (None, None),
        Some(doc) => match std::str::from_utf8(&doc.body) {
            Ok(text) if doc.is_text => (Some("utf-8"), Some(text.to_string())),
            _ => (
                Some("base64"),
                Some(base64::engine::general_purpose::STANDARD.encode(&doc.body)),
            ),
        },
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
