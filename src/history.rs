//! What people and agents ask of a document's history, over the store's versions: the default pair of versions to compare, a unified diff between two versions, and how a version's time is written.

use serde_json::{Value, json};

use crate::doc::DocKey;
use crate::store::{Moved, Reader, Version};
use crate::uri;

/// A unified diff between two versions of a document.
#[derive(Debug, Clone, PartialEq)]
pub struct Diff {
    pub from: u32,
    pub to: u32,
    /// Empty when the two versions hold the same text.
    pub text: String,
}

/// Why two versions cannot be compared; the message says what to change.
#[derive(Debug, Clone, PartialEq)]
pub struct DiffError(pub String);

/// Lines of context around each change.
const CONTEXT: usize = 3;
/// The largest version a diff reads; beyond, compare the downloads.
pub const MAX_DIFF_BYTES: u64 = 4 * 1024 * 1024;
/// How long a diff may look for the smallest edit before it settles for
/// a larger one (still correct, less minimal).
const DIFF_DEADLINE: std::time::Duration = std::time::Duration::from_secs(1);

/// A commit time (ms since the epoch) as RFC 3339, to the second.
pub fn time_text(ms: i64) -> String {
    let time = std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms.max(0) as u64);
    humantime::format_rfc3339_seconds(time).to_string()
}

/// One version as JSON: what the `history` tool, `orchestra log --json`
/// and the viewer say of it.
pub fn version_json(version: &Version) -> Value {
    let mut json = json!({
        "version": version.number,
        "uri": uri::format_versioned(&version.key, version.number),
        "time": version.committed_ms.map(time_text),
        "size": version.size,
        "hash": version.hash.map(|h| blake3::Hash::from(h).to_hex().to_string()),
        "title": version.title,
        "removed": version.removed(),
        "current": version.current,
    });
    match &version.moved {
        Some(Moved::To(to)) => json["movedTo"] = uri::format(to).into(),
        Some(Moved::From(from)) => json["movedFrom"] = uri::format(from).into(),
        None => {}
    }
    json
}

/// Which versions have bytes, newest first: `versions with bytes: 7, 5, 4`
/// (at most 20 named). After a prune the numbers have gaps.
fn with_bytes_text(versions: &[Version]) -> String {
    let numbers: Vec<String> = versions
        .iter()
        .filter(|v| !v.removed())
        .map(|v| v.number.to_string())
        .collect();
    match numbers.len() {
        0 => "no version has bytes".to_string(),
        n if n > 20 => format!(
            "versions with bytes: {}, … ({n} in all)",
            numbers[..20].join(", ")
        ),
        _ => format!("versions with bytes: {}", numbers.join(", ")),
    }
}

/// The diff of `key` from version `from` to version `to`. `to` defaults to
/// the newest version with bytes, `from` to the one with bytes before `to`.
pub fn diff(
    reader: &Reader,
    key: &DocKey,
    from: Option<u32>,
    to: Option<u32>,
) -> anyhow::Result<Result<Diff, DiffError>> {
    let name = uri::format(key);
    let versions = reader.history(key, None, usize::MAX >> 1)?;
    if versions.is_empty() {
        return Ok(Err(DiffError(format!(
            "no document {name} has ever been imported"
        ))));
    }
    let with_bytes = |below: u32| {
        versions
            .iter()
            .find(|v| v.number < below && !v.removed())
            .map(|v| v.number)
    };
    let Some(to) = to.or_else(|| with_bytes(u32::MAX)) else {
        return Ok(Err(DiffError(format!("{name} has no version with bytes"))));
    };
    let Some(from) = from.or_else(|| with_bytes(to)) else {
        return Ok(Err(DiffError(format!(
            "{name} has no version before version {to} to compare it with"
        ))));
    };
    let mut texts = Vec::with_capacity(2);
    for number in [from, to] {
        if let Some(v) = versions.iter().find(|v| v.number == number)
            && v.size > MAX_DIFF_BYTES
        {
            return Ok(Err(DiffError(format!(
                "version {number} of {name} is {} bytes, more than a diff reads ({MAX_DIFF_BYTES})",
                v.size
            ))));
        }
        let Some(read) = reader.version(key, number)? else {
            return Ok(Err(DiffError(format!(
                "{name} has no version {number} with bytes; {}",
                with_bytes_text(&versions)
            ))));
        };
        if !read.version.is_text {
            return Ok(Err(DiffError(format!(
                "version {number} of {name} is binary: there is no text diff"
            ))));
        }
        match String::from_utf8(read.body) {
            Ok(text) => texts.push(text),
            Err(_) => {
                return Ok(Err(DiffError(format!(
                    "version {number} of {name} is not UTF-8: there is no text diff"
                ))));
            }
        }
    }
    let text = unified(
        &texts[0],
        &texts[1],
        &uri::format_versioned(key, from),
        &uri::format_versioned(key, to),
    );
    Ok(Ok(Diff { from, to, text }))
}

/// The unified diff from `old` to `new` under the labels given, as `diff
/// -u` writes it (three lines of context): a version's against another's
/// here, a write's before and after (`write::edit::diff`).
pub fn unified(old: &str, new: &str, from_label: &str, to_label: &str) -> String {
    similar::TextDiff::configure()
        .timeout(DIFF_DEADLINE)
        .diff_lines(old, new)
        .unified_diff()
        .context_radius(CONTEXT)
        .header(from_label, to_label)
        .to_string()
}
