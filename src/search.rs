//! What a search asks for: the query language compiled to an FTS5 expression that is never a syntax error, the `under` and `where` filters, and the fingerprint that binds a cursor to its search.
//!
//! The language, for people and agents:
//! - `login code`: both words, in any order;
//! - `"sign in"`: the phrase;
//! - `sync*`: words that begin with `sync`;
//! - `-draft`: not containing the word (or `-"the phrase"`);
//! - `login OR signin`: either (OR binds tighter than the implicit AND:
//!   `login OR signin code` is `(login OR signin) AND code`).
//!
//! Questions: a query of plain words (two or more, none quoted, excluded or
//! joined by OR; `sync*` is a plain word) that no document holds all of is
//! relaxed: it is answered with the documents that hold any of them, ranked
//! ([`Compiled::relaxed`]). A query of more than [`MAX_TERMS`] different
//! terms (a pasted sentence) is answered from the [`MAX_TERMS`] found in the
//! fewest documents, the others left out as if not written
//! ([`Search::compile_selected`]); the answer names the terms it used.
//!
//! Every other character is text. Each term becomes a quoted FTS5 string,
//! so `FEAT-0012`, `C++`, `v2.1`, `foo.bar`, `AND` or `NEAR(` are words to
//! find, never operators. The tokenizer splits on punctuation, so a term
//! with punctuation matches its words in sequence (`FEAT-0012` is the phrase
//! `feat 0012`).

use thiserror::Error;

use crate::doc::Prefix;

/// The longest query accepted, in bytes.
pub const MAX_QUERY_BYTES: usize = 4096;
/// Hits per page unless asked otherwise, and the most a page may hold.
pub const DEFAULT_LIMIT: usize = 20;
pub const MAX_LIMIT: usize = 100;
/// The most `where` filters one search may carry.
pub const MAX_FILTERS: usize = 16;
/// The most distinct terms one query is answered from: a longer one is
/// answered from its most selective ones. FTS5's snippets cost grows with
/// terms times matches: a 4 KiB query of one word repeated took seconds per
/// page. Repeated terms count once.
pub const MAX_TERMS: usize = 32;

/// Why a search was refused. The messages go to users and agents verbatim:
/// each says what to change.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SearchError {
    #[error("the query is {0} bytes long; shorten it to at most {max} bytes", max = MAX_QUERY_BYTES)]
    TooLong(usize),
    #[error("limit must be an integer from 1 to {max}, not {0}", max = MAX_LIMIT)]
    Limit(String),
    #[error(
        "under {0:?} names no prefix: use features, notes or docs, optionally followed by a folder (docs/adr)"
    )]
    UnknownPrefix(String),
    #[error(
        "under {0:?} is not a folder of document ids: write PREFIX or PREFIX/FOLDER (docs/adr)"
    )]
    Under(String),
    #[error("where {0:?} is not a KEY=VALUE pair with a non-empty KEY")]
    Where(String),
    #[error("at most {max} where filters may be combined", max = MAX_FILTERS)]
    TooManyFilters,
    #[error("{0}")]
    Cursor(#[from] crate::cursor::CursorError),
}

/// A page size from user input: 1 to [`MAX_LIMIT`].
pub fn limit(value: i64) -> Result<usize, SearchError> {
    match usize::try_from(value) {
        Ok(n) if (1..=MAX_LIMIT).contains(&n) => Ok(n),
        _ => Err(SearchError::Limit(value.to_string())),
    }
}

/// The documents a search is restricted to: a prefix, and optionally a
/// folder of ids below it (`docs/adr`: prefix `docs`, ids starting `adr/`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Under {
    pub prefix: Prefix,
    /// The folder with its trailing `/` (`adr/`), if any.
    pub folder: Option<String>,
}

impl Under {
    pub fn parse(text: &str) -> Result<Under, SearchError> {
        let trimmed = text.trim().trim_matches('/');
        let (prefix, folder) = match trimmed.split_once('/') {
            Some((prefix, folder)) => (prefix, Some(folder)),
            None => (trimmed, None),
        };
        let prefix =
            Prefix::parse(prefix).ok_or_else(|| SearchError::UnknownPrefix(text.to_string()))?;
        let folder = match folder {
            None => None,
            Some(folder) => {
                let valid = folder
                    .split('/')
                    .all(|segment| !segment.is_empty() && segment != "." && segment != "..");
                if !valid || folder.contains('\0') {
                    return Err(SearchError::Under(text.to_string()));
                }
                Some(format!("{folder}/"))
            }
        };
        Ok(Under { prefix, folder })
    }
}

impl std::fmt::Display for Under {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.folder {
            Some(folder) => write!(f, "{}/{}", self.prefix, folder.trim_end_matches('/')),
            None => write!(f, "{}", self.prefix),
        }
    }
}

/// A frontmatter equality: a scalar field whose YAML text is `value`, or a
/// list field with such an item.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Filter {
    pub name: String,
    pub value: String,
}

impl Filter {
    /// `KEY=VALUE`; the value may be empty or hold more `=`.
    pub fn parse(text: &str) -> Result<Filter, SearchError> {
        match text.split_once('=') {
            Some((name, value)) if !name.trim().is_empty() => Ok(Filter {
                name: name.trim().to_string(),
                value: value.to_string(),
            }),
            _ => Err(SearchError::Where(text.to_string())),
        }
    }
}

/// One search: the text and the filters. Pages of it differ only in where
/// they start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Search {
    pub query: String,
    pub under: Option<Under>,
    /// Sorted: the same filters in any order are the same search.
    pub filters: Vec<Filter>,
}

impl Search {
    pub fn new(
        query: impl Into<String>,
        under: Option<Under>,
        mut filters: Vec<Filter>,
    ) -> Result<Search, SearchError> {
        let query = query.into();
        if query.len() > MAX_QUERY_BYTES {
            return Err(SearchError::TooLong(query.len()));
        }
        if filters.len() > MAX_FILTERS {
            return Err(SearchError::TooManyFilters);
        }
        filters.sort();
        filters.dedup();
        Ok(Search {
            query,
            under,
            filters,
        })
    }

    /// What a cursor of this search carries to recognise it.
    pub fn fingerprint(&self) -> [u8; 8] {
        let mut hasher = blake3::Hasher::new();
        let mut field = |bytes: &[u8]| {
            hasher.update(&(bytes.len() as u64).to_le_bytes());
            hasher.update(bytes);
        };
        field(self.query.as_bytes());
        field(
            self.under
                .as_ref()
                .map(Under::to_string)
                .unwrap_or_default()
                .as_bytes(),
        );
        for filter in &self.filters {
            field(filter.name.as_bytes());
            field(filter.value.as_bytes());
        }
        let mut fingerprint = [0; 8];
        fingerprint.copy_from_slice(&hasher.finalize().as_bytes()[..8]);
        fingerprint
    }

    pub fn compile(&self) -> Compiled {
        compile(&self.query)
    }

    /// The query's different terms as FTS5 strings (`"word"`, `"sign in"`,
    /// `"sync" *`), in the order they first appear: what a store counts the
    /// documents of when the query [`is_long`](Search::is_long). A term and
    /// its exclusion are two terms with the same string.
    pub fn terms(&self) -> Vec<String> {
        distinct_terms(&items(&self.query))
            .iter()
            .map(|term| term.fts())
            .collect()
    }

    /// Whether the query holds more than [`MAX_TERMS`] different terms: then
    /// it is compiled by [`compile_selected`](Search::compile_selected).
    pub fn is_long(&self) -> bool {
        distinct_terms(&items(&self.query)).len() > MAX_TERMS
    }

    /// Compiles a long query from its [`MAX_TERMS`] most selective terms:
    /// `documents[i]` is the number of documents that hold term `i` of
    /// [`terms`](Search::terms); the terms in the fewest are kept (ties: the
    /// earlier first), the others left out of the query as if not written
    /// (from a group of `OR`, from the exclusions). `used` names the kept ones.
    pub fn compile_selected(&self, documents: &[u64]) -> Compiled {
        let terms = distinct_terms(&items(&self.query)).len();
        let mut order: Vec<usize> = (0..terms).collect();
        order.sort_by_key(|&i| (documents.get(i).copied().unwrap_or(u64::MAX), i));
        let mut keep = vec![false; terms];
        for &i in order.iter().take(MAX_TERMS) {
            keep[i] = true;
        }
        let mut compiled = compile_keeping(&self.query, &keep);
        compiled.used = Some(
            distinct_terms(&items(&self.query))
                .into_iter()
                .zip(&keep)
                .filter(|(_, kept)| **kept)
                .map(|(term, _)| term.written())
                .collect(),
        );
        compiled
    }
}

/// What a page says of how `search` was answered when it was not answered
/// as written (from the terms `used`, `relaxed`), for people and agents:
/// sentences that end with a period; empty otherwise.
pub fn how_answered(search: &Search, used: Option<&[String]>, relaxed: bool) -> String {
    let mut text = String::new();
    if let Some(used) = used {
        text.push_str(&format!(
            "The query has {} different terms; it was answered from the {} found in the fewest documents: {}.",
            search.terms().len(),
            used.len(),
            used.join(" ")
        ));
    }
    if relaxed {
        if !text.is_empty() {
            text.push(' ');
        }
        text.push_str("No document has all of these words; these have some of them.");
    }
    text
}

/// A query as FTS5 expressions.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Compiled {
    /// What hits must match, exclusions included (`(a) NOT (b)`); `None`
    /// when the query has no positive term: then hits are listed in key order.
    pub matching: Option<String>,
    /// What hits must not match, when the query has only exclusions.
    pub excluded: Option<String>,
    /// Any of the query's words (`"login" OR "code"`), when it is two or
    /// more plain words and nothing else (none quoted, excluded or joined by
    /// `OR`; a prefix word is plain): what a store answers with when no
    /// document matches `matching`, `under` and `where` still applied.
    pub relaxed: Option<String>,
    /// For a long query, the terms it was compiled from, as written
    /// (`word`, `"a phrase"`, `sync*`, `-draft`), in query order.
    pub used: Option<Vec<String>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Item {
    /// A term, and whether it was written in quotes.
    Term(Term, bool),
    Or,
}

/// What a term finds: two terms written differently (`login`, `"login"`)
/// are the same term when they are equal.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Term {
    text: String,
    prefix: bool,
    negated: bool,
}

impl Term {
    /// The term as a query would write it.
    fn written(&self) -> String {
        let mut written = String::new();
        if self.negated {
            written.push('-');
        }
        let bare = !self.text.is_empty()
            && !self.text.starts_with('-')
            && self.text != "OR"
            && !self
                .text
                .contains(|c: char| c.is_whitespace() || c == '"' || c == '*');
        match bare {
            true => written.push_str(&self.text),
            false => {
                written.push('"');
                written.push_str(&self.text);
                written.push('"');
            }
        }
        if self.prefix {
            written.push('*');
        }
        written
    }

    fn fts(&self) -> String {
        let mut quoted = String::with_capacity(self.text.len() + 4);
        quoted.push('"');
        quoted.push_str(&self.text.replace('"', "\"\""));
        quoted.push('"');
        if self.prefix {
            quoted.push_str(" *");
        }
        quoted
    }
}

/// Splits a query into terms and `OR`s. Never fails: what is not an
/// operator is text.
fn items(query: &str) -> Vec<Item> {
    let mut items = Vec::new();
    // FTS5 reads an expression up to its first NUL: a NUL is a space here.
    let query = query.replace('\0', " ");
    let mut chars = query.chars().peekable();
    loop {
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        let Some(&first) = chars.peek() else {
            break;
        };
        let negated = first == '-';
        if negated {
            chars.next();
        }
        let quoted = chars.next_if_eq(&'"').is_some();
        let mut text = String::new();
        if quoted {
            for c in chars.by_ref() {
                if c == '"' {
                    break;
                }
                text.push(c);
            }
        } else {
            while let Some(c) = chars.next_if(|c| !c.is_whitespace() && *c != '"') {
                text.push(c);
            }
        }
        let mut prefix = false;
        if quoted {
            prefix = chars.next_if_eq(&'*').is_some();
        } else {
            if !negated && text == "OR" {
                items.push(Item::Or);
                continue;
            }
            // A URI is searched by its key: `orchestra://features/FEAT-1`.
            if let Some(rest) = text.strip_prefix("orchestra://") {
                text = rest.to_string();
            }
            let stars = text.len() - text.trim_end_matches('*').len();
            if stars > 0 {
                text.truncate(text.len() - stars);
                prefix = true;
            }
        }
        // A term without a letter or digit has no words to find.
        if text.chars().any(char::is_alphanumeric) {
            items.push(Item::Term(
                Term {
                    text,
                    prefix,
                    negated,
                },
                quoted,
            ));
        }
    }
    items
}

/// The terms of a query, each once.
fn distinct_terms(items: &[Item]) -> Vec<&Term> {
    let mut terms: Vec<&Term> = Vec::new();
    for item in items {
        if let Item::Term(term, _) = item
            && !terms.contains(&term)
        {
            terms.push(term);
        }
    }
    terms
}

/// Compiles a query. Any string gives valid FTS5 expressions. A term that
/// repeats one already in the query adds nothing and is left out.
pub fn compile(query: &str) -> Compiled {
    let terms = distinct_terms(&items(query)).len();
    compile_keeping(query, &vec![true; terms])
}

/// A positive term of a query, as it stands in its group.
struct Positive {
    term: Term,
    quoted: bool,
    /// Its number among the query's distinct terms.
    index: usize,
}

/// Compiles a query from the distinct terms that `keep` says, by their
/// number in [`distinct_terms`]: the query's structure is read whole, then
/// the other terms are taken out of it.
fn compile_keeping(query: &str, keep: &[bool]) -> Compiled {
    // Groups of positive terms joined by OR; the groups are ANDed.
    let mut groups: Vec<Vec<Positive>> = Vec::new();
    let mut excluded: Vec<(Term, usize)> = Vec::new();
    let mut or_pending = false;
    let mut seen: Vec<Term> = Vec::new();
    for item in items(query) {
        match item {
            Item::Or => or_pending = !groups.is_empty(),
            Item::Term(term, quoted) => {
                if seen.contains(&term) {
                    or_pending = false;
                    continue;
                }
                let index = seen.len();
                seen.push(term.clone());
                if term.negated {
                    excluded.push((term, index));
                } else {
                    let positive = Positive {
                        term,
                        quoted,
                        index,
                    };
                    match groups.last_mut() {
                        Some(group) if or_pending => group.push(positive),
                        _ => groups.push(vec![positive]),
                    }
                }
                or_pending = false;
            }
        }
    }
    let kept = |index: usize| keep.get(index).copied().unwrap_or(false);
    for group in &mut groups {
        group.retain(|positive| kept(positive.index));
    }
    groups.retain(|group| !group.is_empty());
    excluded.retain(|(_, index)| kept(*index));
    let plain = groups.len() >= 2
        && excluded.is_empty()
        && groups
            .iter()
            .all(|group| matches!(group.as_slice(), [one] if !one.quoted));
    let relaxed = plain.then(|| {
        groups
            .iter()
            .map(|group| group[0].term.fts())
            .collect::<Vec<_>>()
            .join(" OR ")
    });
    let positive = (!groups.is_empty()).then(|| {
        groups
            .iter()
            .map(|group| {
                let terms: Vec<String> = group.iter().map(|p| p.term.fts()).collect();
                if terms.len() == 1 {
                    terms[0].clone()
                } else {
                    format!("({})", terms.join(" OR "))
                }
            })
            .collect::<Vec<_>>()
            .join(" AND ")
    });
    let excluded = (!excluded.is_empty()).then(|| {
        excluded
            .iter()
            .map(|(term, _)| term.fts())
            .collect::<Vec<_>>()
            .join(" OR ")
    });
    let (matching, excluded) = match (positive, excluded) {
        (Some(positive), Some(excluded)) => (Some(format!("({positive}) NOT ({excluded})")), None),
        (positive, excluded) => (positive, excluded),
    };
    Compiled {
        matching,
        excluded,
        relaxed,
        used: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(query: &str, matching: Option<&str>, excluded: Option<&str>) {
        let compiled = compile(query);
        assert_eq!(
            (compiled.matching.as_deref(), compiled.excluded.as_deref()),
            (matching, excluded),
            "{query:?}"
        );
    }

    #[test]
    fn the_query_language() {
        check("login code", Some(r#""login" AND "code""#), None);
        check(r#""sign in""#, Some(r#""sign in""#), None);
        check("sync*", Some(r#""sync" *"#), None);
        check(r#""sign i"*"#, Some(r#""sign i" *"#), None);
        check("-draft", None, Some(r#""draft""#));
        check("-draft -wip", None, Some(r#""draft" OR "wip""#));
        check("login -draft", Some(r#"("login") NOT ("draft")"#), None);
        check("login OR signin", Some(r#"("login" OR "signin")"#), None);
        check(
            "login OR signin code",
            Some(r#"("login" OR "signin") AND "code""#),
            None,
        );
        check("a OR b OR c", Some(r#"("a" OR "b" OR "c")"#), None);
    }

    #[test]
    fn everything_else_is_text() {
        check("FEAT-0012", Some(r#""FEAT-0012""#), None);
        check(
            "C++ v2.1 foo.bar",
            Some(r#""C++" AND "v2.1" AND "foo.bar""#),
            None,
        );
        check(
            "AND NOT NEAR(x",
            Some(r#""AND" AND "NOT" AND "NEAR(x""#),
            None,
        );
        check("or", Some(r#""or""#), None);
        check("OR", None, None);
        check("OR login OR", Some(r#""login""#), None);
        check(r#"say "hi"#, Some(r#""say" AND "hi""#), None);
        check(r#"a"b"#, Some(r#""a" AND "b""#), None);
        check(r#""x""y""#, Some(r#""x" AND "y""#), None);
        check("key:title", Some(r#""key:title""#), None);
        check("*", None, None);
        check("- -- --- * ** !!", None, None);
        check("", None, None);
        check("   ", None, None);
        check("**bold**", Some(r#""**bold" *"#), None);
        check(
            "orchestra://features/FEAT-1",
            Some(r#""features/FEAT-1""#),
            None,
        );
    }

    #[test]
    fn nul_is_a_space_and_repeats_count_once() {
        check("a\0b", Some(r#""a" AND "b""#), None);
        check("\"a\0b\"", Some(r#""a b""#), None);
        check("-x\0", None, Some(r#""x""#));
        check("word word Word word", Some(r#""word" AND "Word""#), None);
        check("a OR a b", Some(r#""a" AND "b""#), None);
        let many: Vec<String> = (0..=MAX_TERMS).map(|i| format!("w{i}")).collect();
        let long = Search::new(many.join(" "), None, vec![]).unwrap();
        assert!(long.is_long());
        assert!(
            !Search::new(many[..MAX_TERMS].join(" "), None, vec![])
                .unwrap()
                .is_long()
        );
        assert!(
            !Search::new("word ".repeat(800), None, vec![])
                .unwrap()
                .is_long()
        );
    }

    #[track_caller]
    fn relaxed(query: &str, expected: Option<&str>) {
        assert_eq!(compile(query).relaxed.as_deref(), expected, "{query:?}");
    }

    #[test]
    fn only_plain_words_are_relaxed() {
        relaxed("login code", Some(r#""login" OR "code""#));
        relaxed("login code sync*", Some(r#""login" OR "code" OR "sync" *"#));
        relaxed("FEAT-0012 login", Some(r#""FEAT-0012" OR "login""#));
        relaxed("login login code", Some(r#""login" OR "code""#));
        relaxed("a OR a b", Some(r#""a" OR "b""#));
        // One word has nothing to relax.
        relaxed("login", None);
        relaxed("login login", None);
        // Phrases, exclusions and OR keep their meaning.
        relaxed(r#""sign in" code"#, None);
        relaxed(r#""login" code"#, None);
        relaxed("login -draft code", None);
        relaxed("login OR signin code", None);
        relaxed("-draft -wip", None);
        relaxed("", None);
    }

    /// The terms of a query, each with a number of documents.
    fn selected(query: &str, documents: &[(&str, u64)]) -> Compiled {
        let search = Search::new(query, None, vec![]).unwrap();
        let terms = search.terms();
        let counts: Vec<u64> = terms
            .iter()
            .map(|term| {
                documents
                    .iter()
                    .find(|(t, _)| term == t)
                    .map_or(1000, |(_, n)| *n)
            })
            .collect();
        search.compile_selected(&counts)
    }

    #[test]
    fn a_long_query_keeps_its_most_selective_terms() {
        // 40 words: w0..w39, w<i> in 1000 - i documents but w5 in none.
        let words: Vec<String> = (0..40).map(|i| format!("w{i}")).collect();
        let counts: Vec<(String, u64)> = words
            .iter()
            .enumerate()
            .map(|(i, w)| (format!("\"{w}\""), if i == 5 { 0 } else { 1000 - i as u64 }))
            .collect();
        let counts: Vec<(&str, u64)> = counts.iter().map(|(t, n)| (t.as_str(), *n)).collect();
        let compiled = selected(&words.join(" "), &counts);
        // Kept: w5 and w8..w39 less... the 32 in the fewest documents.
        let mut expected: Vec<String> = (8..40).map(|i| format!("w{i}")).collect();
        expected.insert(0, "w5".to_string());
        expected.retain(|w| w != "w8");
        assert_eq!(compiled.used.as_deref(), Some(expected.as_slice()));
        let quoted: Vec<String> = expected.iter().map(|w| format!("\"{w}\"")).collect();
        assert_eq!(compiled.matching, Some(quoted.join(" AND ")));
        assert_eq!(compiled.relaxed, Some(quoted.join(" OR ")));
        // Ties go to the earlier terms.
        let compiled = selected(&words.join(" "), &[]);
        assert_eq!(compiled.used.unwrap(), &words[..MAX_TERMS]);
        // A dropped term leaves its group of OR and the exclusions; what is
        // left keeps its meaning, and is not relaxed when it is not plain.
        let mut query = words[..31].join(" ");
        query.push_str(r#" common OR rare -often -seldom "a phrase""#);
        let compiled = selected(
            &query,
            &[("\"rare\"", 1), ("\"seldom\"", 1), ("\"a phrase\"", 1)],
        );
        let used = compiled.used.unwrap();
        assert_eq!(used.len(), MAX_TERMS);
        assert_eq!(&used[28..], ["w28", "rare", "-seldom", r#""a phrase""#]);
        let matching = compiled.matching.unwrap();
        assert!(
            matching.ends_with(r#"AND "w28" AND "rare" AND "a phrase") NOT ("seldom")"#),
            "{matching}"
        );
        assert_eq!(compiled.relaxed, None);
    }

    #[test]
    fn terms_are_written_back_as_a_query_would_write_them() {
        let search = Search::new(
            r#"login "sign in" sync* -draft -"no way" "OR" "-x" "solo""#,
            None,
            vec![],
        )
        .unwrap();
        let written: Vec<String> = distinct_terms(&items(&search.query))
            .iter()
            .map(|t| t.written())
            .collect();
        assert_eq!(
            written,
            [
                "login",
                r#""sign in""#,
                "sync*",
                "-draft",
                r#"-"no way""#,
                r#""OR""#,
                r#""-x""#,
                "solo"
            ]
        );
        assert_eq!(
            search.terms(),
            [
                r#""login""#,
                r#""sign in""#,
                r#""sync" *"#,
                r#""draft""#,
                r#""no way""#,
                r#""OR""#,
                r#""-x""#,
                r#""solo""#
            ]
        );
    }

    #[test]
    fn quotes_inside_terms_are_doubled() {
        check(r#"it's"#, Some(r#""it's""#), None);
        // A quote ends a bare word; the rest starts a phrase.
        check(r#"x"y z"#, Some(r#""x" AND "y z""#), None);
    }

    #[test]
    fn under() {
        let ok = |text: &str, prefix: Prefix, folder: Option<&str>| {
            assert_eq!(
                Under::parse(text),
                Ok(Under {
                    prefix,
                    folder: folder.map(str::to_string)
                }),
                "{text}"
            );
        };
        ok("features", Prefix::Features, None);
        ok("docs/adr", Prefix::Docs, Some("adr/"));
        ok("docs/adr/", Prefix::Docs, Some("adr/"));
        ok("docs/a/b", Prefix::Docs, Some("a/b/"));
        assert!(matches!(
            Under::parse("feature"),
            Err(SearchError::UnknownPrefix(_))
        ));
        assert!(matches!(
            Under::parse(""),
            Err(SearchError::UnknownPrefix(_))
        ));
        assert!(matches!(
            Under::parse("docs//x"),
            Err(SearchError::Under(_))
        ));
        assert!(matches!(
            Under::parse("docs/../x"),
            Err(SearchError::Under(_))
        ));
        assert_eq!(Under::parse("docs/adr/").unwrap().to_string(), "docs/adr");
    }

    #[test]
    fn filters_and_limits() {
        assert_eq!(
            Filter::parse("status=open"),
            Ok(Filter {
                name: "status".into(),
                value: "open".into()
            })
        );
        assert_eq!(Filter::parse("a=b=c").unwrap().value, "b=c");
        assert_eq!(Filter::parse("a=").unwrap().value, "");
        assert!(Filter::parse("=x").is_err());
        assert!(Filter::parse("novalue").is_err());
        assert_eq!(limit(1), Ok(1));
        assert_eq!(limit(100), Ok(100));
        assert!(limit(0).is_err());
        assert!(limit(101).is_err());
        assert!(limit(-1).is_err());
    }

    #[test]
    fn fingerprints_tell_searches_apart() {
        let search = |q: &str, under: Option<&str>, filters: &[&str]| {
            Search::new(
                q,
                under.map(|u| Under::parse(u).unwrap()),
                filters.iter().map(|f| Filter::parse(f).unwrap()).collect(),
            )
            .unwrap()
            .fingerprint()
        };
        let base = search("login", None, &["a=b", "c=d"]);
        assert_eq!(base, search("login", None, &["c=d", "a=b"]));
        assert_ne!(base, search("login", None, &["a=b"]));
        assert_ne!(base, search("logi", None, &["a=b", "c=d"]));
        assert_ne!(base, search("login", Some("docs"), &["a=b", "c=d"]));
        assert_ne!(search("ab", None, &[]), search("a", None, &["b="]));
        assert!(Search::new("x".repeat(MAX_QUERY_BYTES + 1), None, vec![]).is_err());
    }
}
