//! JSON-RPC messages and fixtures the tests send and compare with.

use std::path::Path;

use base64::Engine;
use serde_json::{Value, json};

use crate::support::{Project, fixture_dir};

// Messages and fixtures.

pub(super) fn rpc(id: impl Into<Value>, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id.into(), "method": method, "params": params})
}

pub(super) fn initialize(id: i64) -> Value {
    rpc(
        id,
        "initialize",
        json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "http-test", "version": "1"}
        }),
    )
}

/// `params` in the 2026-07-28 envelope.
pub(super) fn envelope(mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "http-test", "version": "1"}
    });
    params
}

pub(super) fn listen(id: &str, uris: &[&str], list_changed: bool) -> Value {
    rpc(
        id,
        "subscriptions/listen",
        envelope(json!({
            "notifications": {"resourceSubscriptions": uris, "resourcesListChanged": list_changed}
        })),
    )
}

/// A copy of the fixture project, imported into its default database.
pub(crate) fn fixture_project() -> Project {
    let p = Project::fixture();
    p.import(&[]).assert_success();
    p
}

/// Edits FEAT-001 of `p` and imports: an `updated` for its subscribers.
pub(super) fn edit_and_import(p: &Project, line: &str) {
    let path = p.path("features/FEAT-001.md");
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str(line);
    text.push('\n');
    p.file("features/FEAT-001.md", text);
    p.import(&[]).assert_success();
}

pub(super) fn fixture_text(rel: &str) -> String {
    std::fs::read_to_string(fixture_dir().join(rel)).unwrap()
}

/// Percent-encodes every byte but the unreserved ones and those in `keep`.
pub(crate) fn encode(text: &str, keep: &[u8]) -> String {
    let mut out = String::new();
    for &b in text.as_bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) || keep.contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The URI of every fixture document, in listing order (prefix, then id).
pub(super) fn fixture_uris() -> Vec<String> {
    pub(super) fn ids(base: &Path, dir: &Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                ids(base, &path, out);
            } else if let Some(id) = path
                .strip_prefix(base)
                .unwrap()
                .to_str()
                .unwrap()
                .strip_suffix(".md")
            {
                out.push(id.to_string());
            }
        }
    }
    let mut uris = Vec::new();
    for prefix in ["docs", "features", "notes"] {
        let base = fixture_dir().join(prefix);
        let mut found = Vec::new();
        ids(&base, &base, &mut found);
        found.sort();
        uris.extend(
            found
                .iter()
                .map(|id| format!("orchestra://{prefix}/{}", encode(id, b"/"))),
        );
    }
    uris
}

/// A header value as the 2026-07-28 transport sends it: printable ASCII as
/// it is, anything else as `=?base64?…?=`.
pub(super) fn header_value(text: &str) -> String {
    if text.bytes().all(|b| (0x20..0x7f).contains(&b)) {
        text.to_string()
    } else {
        format!(
            "=?base64?{}?=",
            base64::engine::general_purpose::STANDARD.encode(text)
        )
    }
}

/// `/resource?uri=…`, the value encoded as a query component.
pub(super) fn resource_path(uri: &str) -> String {
    format!("/resource?uri={}", encode(uri, b""))
}
