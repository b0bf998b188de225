//! Document keys: the `(prefix, id)` pair that names every document, the fixed set of prefixes, and the kinds of change.

use std::fmt;

/// The top-level folders orchestra imports. The derived order is the order of
/// their names, which is the order SQLite sorts the `prefix` column in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Prefix {
    Docs,
    Features,
    Notes,
}

impl Prefix {
    pub const ALL: [Prefix; 3] = [Prefix::Docs, Prefix::Features, Prefix::Notes];

    pub fn as_str(self) -> &'static str {
        match self {
            Prefix::Docs => "docs",
            Prefix::Features => "features",
            Prefix::Notes => "notes",
        }
    }

    pub fn parse(s: &str) -> Option<Prefix> {
        Prefix::ALL.into_iter().find(|p| p.as_str() == s)
    }
}

impl fmt::Display for Prefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A document's identity: `docs/adr/0006.md` is `DocKey { prefix: Docs, id: "adr/0006" }`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DocKey {
    pub prefix: Prefix,
    pub id: String,
}

impl DocKey {
    pub fn new(prefix: Prefix, id: impl Into<String>) -> DocKey {
        DocKey {
            prefix,
            id: id.into(),
        }
    }
}

impl fmt::Display for DocKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.prefix, self.id)
    }
}

/// What happened to a document in one import.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ChangeKind {
    New,
    Updated,
    Removed,
}

/// The longest id accepted anywhere (import, URI, cursor), in bytes.
pub const MAX_ID_LEN: usize = 1024;

/// Whether `id` can name a document: `/`-separated segments, none empty, `.`
/// or `..`, no NUL, at most [`MAX_ID_LEN`] bytes. Import only produces such ids,
/// so anything else arriving from a client cannot exist in the store.
pub fn is_valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_ID_LEN
        && !id.contains('\0')
        && id
            .split('/')
            .all(|segment| !segment.is_empty() && segment != "." && segment != "..")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_order_matches_name_order() {
        let mut names: Vec<&str> = Prefix::ALL.iter().map(|p| p.as_str()).collect();
        names.sort();
        assert_eq!(
            names,
            Prefix::ALL.iter().map(|p| p.as_str()).collect::<Vec<_>>()
        );
    }

    #[test]
    fn valid_ids() {
        for id in ["FEAT-001", "adr/0006", "café notes", "a/b/c", ".hidden-ish"] {
            assert!(is_valid_id(id), "{id}");
        }
        for id in ["", "/a", "a/", "a//b", ".", "a/../b", "a/./b", "nul\0"] {
            assert!(!is_valid_id(id), "{id:?}");
        }
    }
}
