//! Who may do what: the scopes a credential carries (`orchestra:read`, `orchestra:write:notes`), what they grant, and the documents a caller may see. Knows nothing of SQL, HTTP or MCP.
//!
//! A scope is a verb, alone (every document) or with an area: a prefix
//! (`orchestra:read:features`) or a folder below one
//! (`orchestra:read:docs/adr`: the ids starting `adr/`). A broader verb
//! implies the narrower ones, as the 2026-07-28 authorization rules require:
//! `admin` ⊃ `write` ⊃ `read` and `search`. A search also needs read on what
//! it returns, so its area is its grant's within the caller's read area.
//!
//! The areas a caller may read ([`Areas`]) go into every query of the store
//! (`store::Reader::seeing`): listings, totals, completions, search hits and
//! links are filtered where they are counted, so nothing outside them is
//! revealed, not even by a count or a short page.

pub mod keys;
mod lease;
pub mod oauth;

pub use lease::Lease;

use crate::doc::{DocKey, Prefix};
use crate::search::Under;

/// What a scope lets its holder do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Verb {
    /// List, read, templates, completion, subscriptions, history, links, the viewer.
    Read,
    /// The search tool, `/search`, the viewer's search.
    Search,
    /// The write tools and the viewer's edits.
    Write,
    /// Everything, tokens included.
    Admin,
}

impl Verb {
    pub const ALL: [Verb; 4] = [Verb::Read, Verb::Search, Verb::Write, Verb::Admin];

    /// The scope that grants this verb on every document.
    pub fn scope(self) -> &'static str {
        match self {
            Verb::Read => "orchestra:read",
            Verb::Search => "orchestra:search",
            Verb::Write => "orchestra:write",
            Verb::Admin => "orchestra:admin",
        }
    }

    /// The scopes an operation of this verb needs, named together in a
    /// step-up challenge (a client adds them to those it holds).
    pub fn challenge(self) -> &'static str {
        match self {
            Verb::Read => "orchestra:read",
            Verb::Search => "orchestra:read orchestra:search",
            Verb::Write => "orchestra:write",
            Verb::Admin => "orchestra:admin",
        }
    }

    fn parse(text: &str) -> Option<Verb> {
        Verb::ALL
            .into_iter()
            .find(|v| &v.scope()["orchestra:".len()..] == text)
    }
}

/// The scopes a server advertises (`scopes_supported`): the verbs, never
/// `offline_access`. The per-area forms are accepted without being listed.
pub const SUPPORTED_SCOPES: [&str; 4] = [
    "orchestra:read",
    "orchestra:search",
    "orchestra:write",
    "orchestra:admin",
];

/// One of orchestra's scopes: a verb on every document, or on an area.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scope {
    pub verb: Verb,
    pub area: Option<Under>,
}

impl Scope {
    /// `None` for a scope that is not orchestra's (`openid`, `profile`): a
    /// token may carry others, which grant nothing here. An error for one
    /// that is orchestra's but names no verb or no valid area.
    pub fn parse(text: &str) -> Option<Result<Scope, String>> {
        let rest = text.strip_prefix("orchestra:")?;
        let (verb, area) = match rest.split_once(':') {
            Some((verb, area)) => (verb, Some(area)),
            None => (rest, None),
        };
        let Some(verb) = Verb::parse(verb) else {
            return Some(Err(format!(
                "unknown scope {text:?}: the verbs are read, search, write and admin"
            )));
        };
        let area = match area {
            None => None,
            Some(_) if verb == Verb::Admin => {
                return Some(Err(format!(
                    "{text:?}: orchestra:admin is for the whole server, not an area"
                )));
            }
            Some(area) => match Under::parse(area) {
                Ok(under) if !area.trim().is_empty() => Some(under),
                _ => {
                    return Some(Err(format!(
                        "{text:?}: the area must be a prefix (docs, features, notes) or a folder below one (docs/adr)"
                    )));
                }
            },
        };
        Some(Ok(Scope { verb, area }))
    }
}

impl std::fmt::Display for Scope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.verb.scope())?;
        if let Some(area) = &self.area {
            write!(f, ":{}", area_name(area))?;
        }
        Ok(())
    }
}

/// `features`, `docs/adr`: how a scope names an area.
pub fn area_name(area: &Under) -> String {
    match &area.folder {
        Some(folder) => format!("{}/{}", area.prefix, folder.trim_end_matches('/')),
        None => area.prefix.to_string(),
    }
}

/// A set of areas in key order, none inside another: the documents a verb
/// reaches. Ranges of ids, so that a store can add them to a query.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Areas(Vec<Under>);

impl Areas {
    /// Every document.
    pub fn everything() -> Areas {
        Areas(
            Prefix::ALL
                .into_iter()
                .map(|prefix| Under {
                    prefix,
                    folder: None,
                })
                .collect(),
        )
    }

    pub fn nothing() -> Areas {
        Areas(Vec::new())
    }

    pub fn from_areas(areas: impl IntoIterator<Item = Under>) -> Areas {
        let mut set = Areas::nothing();
        for area in areas {
            set.add(area);
        }
        set
    }

    /// The areas, in key order: disjoint id ranges.
    pub fn as_slice(&self) -> &[Under] {
        &self.0
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether these areas hold every document.
    pub fn is_everything(&self) -> bool {
        Prefix::ALL.iter().all(|prefix| {
            self.0
                .iter()
                .any(|a| a.prefix == *prefix && a.folder.is_none())
        })
    }

    pub fn contains(&self, key: &DocKey) -> bool {
        self.0.iter().any(|area| area_contains(area, key))
    }

    /// Whether every document under `under` is in these areas.
    pub fn covers(&self, under: &Under) -> bool {
        self.0.iter().any(|area| area_covers(area, under))
    }

    /// The documents in both.
    pub fn intersect(&self, other: &Areas) -> Areas {
        let mut both = Areas::nothing();
        for a in &self.0 {
            for b in &other.0 {
                if area_covers(a, b) {
                    both.add(b.clone());
                } else if area_covers(b, a) {
                    both.add(a.clone());
                }
            }
        }
        both
    }

    /// The part of these areas under `under`.
    pub fn within(&self, under: &Under) -> Areas {
        self.intersect(&Areas(vec![under.clone()]))
    }

    fn add(&mut self, area: Under) {
        if self.covers(&area) {
            return;
        }
        self.0.retain(|kept| !area_covers(&area, kept));
        self.0.push(area);
        // Disjoint ranges sort by their low bound: key order.
        self.0.sort_by(|a, b| {
            (a.prefix, a.folder.as_deref().unwrap_or(""))
                .cmp(&(b.prefix, b.folder.as_deref().unwrap_or("")))
        });
    }
}

fn area_contains(area: &Under, key: &DocKey) -> bool {
    area.prefix == key.prefix
        && area
            .folder
            .as_deref()
            .is_none_or(|folder| key.id.starts_with(folder))
}

/// Whether `outer` holds all of `inner` (folders end with `/`).
fn area_covers(outer: &Under, inner: &Under) -> bool {
    outer.prefix == inner.prefix
        && match (&outer.folder, &inner.folder) {
            (None, _) => true,
            (Some(_), None) => false,
            (Some(outer), Some(inner)) => inner.starts_with(outer.as_str()),
        }
}

/// What a caller's scopes grant: the areas of each verb, the implied ones
/// included.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grants {
    read: Areas,
    search: Areas,
    write: Areas,
    admin: bool,
}

impl Grants {
    /// Every verb on every document: stdio, `--token-file`, the commands.
    pub fn everything() -> Grants {
        Grants {
            read: Areas::everything(),
            search: Areas::everything(),
            write: Areas::everything(),
            admin: true,
        }
    }

    /// What `scopes` grant; scopes that are not orchestra's, or malformed,
    /// grant nothing.
    pub fn from_scopes<'a>(scopes: impl IntoIterator<Item = &'a str>) -> Grants {
        let mut read = Vec::new();
        let mut search = Vec::new();
        let mut write = Vec::new();
        let mut admin = false;
        let whole = || Areas::everything().0;
        for scope in scopes {
            let Some(Ok(scope)) = Scope::parse(scope) else {
                continue;
            };
            let areas = match scope.area {
                Some(area) => vec![area],
                None => whole(),
            };
            match scope.verb {
                Verb::Read => read.extend(areas),
                Verb::Search => search.extend(areas),
                Verb::Write => write.extend(areas),
                Verb::Admin => admin = true,
            }
        }
        if admin {
            return Grants::everything();
        }
        let write = Areas::from_areas(write);
        let read = Areas::from_areas(read.into_iter().chain(write.0.iter().cloned()));
        // A search returns only what its caller may read.
        let search = Areas::from_areas(
            Areas::from_areas(search)
                .intersect(&read)
                .0
                .into_iter()
                .chain(write.0.iter().cloned()),
        );
        Grants {
            read,
            search,
            write,
            admin,
        }
    }

    /// The documents `verb` reaches.
    pub fn areas(&self, verb: Verb) -> &Areas {
        match verb {
            Verb::Read => &self.read,
            Verb::Search => &self.search,
            Verb::Write => &self.write,
            Verb::Admin if self.admin => &self.read,
            Verb::Admin => &self.write, // empty unless admin
        }
    }

    /// Whether the caller may `verb` anything at all: if not, an operation
    /// of that verb is refused as a whole (a step-up challenge).
    pub fn may(&self, verb: Verb) -> bool {
        match verb {
            Verb::Admin => self.admin,
            _ => !self.areas(verb).is_empty(),
        }
    }

    pub fn can(&self, verb: Verb, key: &DocKey) -> bool {
        self.areas(verb).contains(key)
    }

    /// The read areas to add to a store's queries: `None` when the caller
    /// reads everything, so that its queries stay as they are.
    pub fn read_filter(&self) -> Option<Areas> {
        (!self.read.is_everything()).then(|| self.read.clone())
    }

    /// The same for a search.
    pub fn search_filter(&self) -> Option<Areas> {
        (!self.search.is_everything()).then(|| self.search.clone())
    }

    /// Whether answers may differ between callers of this server: a listing
    /// for partial grants is private to its caller.
    pub fn is_partial(&self) -> bool {
        !self.read.is_everything()
    }
}

/// Who is asking, and what they may do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Principal {
    /// Names the caller for a session's binding and the log: `local`,
    /// `token`, `key:NAME`, `oauth:ISSUER SUBJECT`. Never a secret.
    pub name: String,
    pub grants: Grants,
}

impl Principal {
    /// The process's own user (stdio, the commands): everything.
    pub fn local() -> Principal {
        Principal {
            name: "local".to_string(),
            grants: Grants::everything(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(text: &str) -> DocKey {
        let (prefix, id) = text.split_once('/').unwrap();
        DocKey::new(Prefix::parse(prefix).unwrap(), id)
    }

    fn names(areas: &Areas) -> Vec<String> {
        areas.as_slice().iter().map(area_name).collect()
    }

    #[test]
    fn scopes_parse_as_verbs_and_areas() {
        let cases: &[(&str, Option<Result<&str, ()>>)] = &[
            ("orchestra:read", Some(Ok("orchestra:read"))),
            ("orchestra:write:notes", Some(Ok("orchestra:write:notes"))),
            (
                "orchestra:read:docs/adr",
                Some(Ok("orchestra:read:docs/adr")),
            ),
            (
                "orchestra:read:docs/adr/",
                Some(Ok("orchestra:read:docs/adr")),
            ),
            (
                "orchestra:search:features",
                Some(Ok("orchestra:search:features")),
            ),
            ("orchestra:admin", Some(Ok("orchestra:admin"))),
            ("orchestra:admin:notes", Some(Err(()))),
            ("orchestra:read:", Some(Err(()))),
            ("orchestra:read:secrets", Some(Err(()))),
            ("orchestra:read:docs/../notes", Some(Err(()))),
            ("orchestra:delete", Some(Err(()))),
            ("orchestra:", Some(Err(()))),
            ("openid", None),
            ("offline_access", None),
            ("read", None),
        ];
        for (text, expected) in cases {
            let parsed = Scope::parse(text).map(|r| r.map(|s| s.to_string()).map_err(|_| ()));
            let expected = expected.map(|r| r.map(str::to_string));
            assert_eq!(parsed, expected, "{text}");
        }
    }

    #[test]
    fn broader_verbs_imply_narrower_ones() {
        // (scopes, [read, search, write, admin] on features/FEAT-001)
        let cases: &[(&[&str], [bool; 4])] = &[
            (&["orchestra:read"], [true, false, false, false]),
            (&["orchestra:search"], [false, false, false, false]),
            (
                &["orchestra:read", "orchestra:search"],
                [true, true, false, false],
            ),
            (&["orchestra:write"], [true, true, true, false]),
            (&["orchestra:admin"], [true, true, true, true]),
            (&["orchestra:write:features"], [true, true, true, false]),
            (&["orchestra:write:notes"], [false, false, false, false]),
            (
                &["orchestra:read:features", "orchestra:search"],
                [true, true, false, false],
            ),
            (&["openid", "profile"], [false, false, false, false]),
            (
                &["orchestra:bogus", "orchestra:read"],
                [true, false, false, false],
            ),
        ];
        let doc = key("features/FEAT-001");
        for (scopes, expected) in cases {
            let grants = Grants::from_scopes(scopes.iter().copied());
            let got = [Verb::Read, Verb::Search, Verb::Write, Verb::Admin].map(|verb| match verb {
                Verb::Admin => grants.may(Verb::Admin),
                _ => grants.can(verb, &doc),
            });
            assert_eq!(&got, expected, "{scopes:?}");
        }
    }

    #[test]
    fn a_search_reaches_only_what_its_caller_reads() {
        let grants = Grants::from_scopes([
            "orchestra:search",
            "orchestra:read:features",
            "orchestra:write:docs/adr",
        ]);
        assert_eq!(names(grants.areas(Verb::Search)), ["docs/adr", "features"]);
        assert_eq!(names(grants.areas(Verb::Read)), ["docs/adr", "features"]);
        assert_eq!(names(grants.areas(Verb::Write)), ["docs/adr"]);
        assert!(grants.is_partial());
        let grants = Grants::from_scopes(["orchestra:search:notes", "orchestra:read:features"]);
        assert!(!grants.may(Verb::Search));
        assert!(grants.may(Verb::Read));
    }

    #[test]
    fn areas_hold_folders_by_their_ids() {
        let grants = Grants::from_scopes(["orchestra:read:docs/adr"]);
        let cases = [
            ("docs/adr/0006", true),
            ("docs/adr/sub/1", true),
            ("docs/adr", false),
            ("docs/adrx/1", false),
            ("docs/adr-old/1", false),
            ("features/adr/1", false),
        ];
        for (doc, expected) in cases {
            assert_eq!(grants.can(Verb::Read, &key(doc)), expected, "{doc}");
        }
    }

    #[test]
    fn areas_are_disjoint_and_in_key_order() {
        let under = |t: &str| Under::parse(t).unwrap();
        let areas = Areas::from_areas([
            under("notes"),
            under("docs/adr/old"),
            under("docs/a-b"),
            under("docs/adr"),
            under("notes/x"),
            under("docs/a"),
        ]);
        assert_eq!(names(&areas), ["docs/a-b", "docs/a", "docs/adr", "notes"]);
        assert!(!areas.is_everything());
        let both = areas.intersect(&Areas::from_areas([under("docs"), under("notes/y")]));
        assert_eq!(names(&both), ["docs/a-b", "docs/a", "docs/adr", "notes/y"]);
        assert_eq!(names(&areas.within(&under("docs/adr/z"))), ["docs/adr/z"]);
        assert!(Areas::everything().is_everything());
        assert_eq!(Grants::everything().read_filter(), None);
        assert_eq!(
            Grants::from_scopes(["orchestra:read"]).read_filter(),
            None,
            "a whole-server scope adds nothing to a query"
        );
    }
}
