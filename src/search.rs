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
/// The most distinct terms one query may hold. FTS5's snippets cost grows
/// with terms times matches: a 4 KiB query of one word repeated took seconds
/// per page. Repeated terms count once.
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
    #[error("the query has {0} different terms; use at most {max}", max = MAX_TERMS)]
    TooManyTerms(usize),
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
        let terms = distinct_terms(&items(&query)).len();
        if terms > MAX_TERMS {
            return Err(SearchError::TooManyTerms(terms));
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
}

/// A query as FTS5 expressions.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Compiled {
    /// What hits must match, exclusions included (`(a) NOT (b)`); `None`
    /// when the query has no positive term: then hits are listed in key order.
    pub matching: Option<String>,
    /// What hits must not match, when the query has only exclusions.
    pub excluded: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Item {
    Term(Term),
    Or,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Term {
    text: String,
    prefix: bool,
    negated: bool,
}

impl Term {
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
            items.push(Item::Term(Term {
                text,
                prefix,
                negated,
            }));
        }
    }
    items
}

/// The terms of a query, each once.
fn distinct_terms(items: &[Item]) -> Vec<&Term> {
    let mut terms: Vec<&Term> = Vec::new();
    for item in items {
        if let Item::Term(term) = item
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
    // Groups of positive terms joined by OR; the groups are ANDed.
    let mut groups: Vec<Vec<Term>> = Vec::new();
    let mut excluded: Vec<Term> = Vec::new();
    let mut or_pending = false;
    let mut seen: Vec<Term> = Vec::new();
    for item in items(query) {
        if let Item::Term(term) = &item {
            if seen.contains(term) {
                or_pending = false;
                continue;
            }
            seen.push(term.clone());
        }
        match item {
            Item::Or => or_pending = !groups.is_empty(),
            Item::Term(term) if term.negated => {
                excluded.push(term);
                or_pending = false;
            }
            Item::Term(term) => {
                match groups.last_mut() {
                    Some(group) if or_pending => group.push(term),
                    _ => groups.push(vec![term]),
                }
                or_pending = false;
            }
        }
    }
    let positive = (!groups.is_empty()).then(|| {
        groups
            .iter()
            .map(|group| {
                let terms: Vec<String> = group.iter().map(Term::fts).collect();
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
            .map(Term::fts)
            .collect::<Vec<_>>()
            .join(" OR ")
    });
    match (positive, excluded) {
        (Some(positive), Some(excluded)) => Compiled {
            matching: Some(format!("({positive}) NOT ({excluded})")),
            excluded: None,
        },
        (Some(positive), None) => Compiled {
            matching: Some(positive),
            excluded: None,
        },
        (None, excluded) => Compiled {
            matching: None,
            excluded,
        },
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
        assert_eq!(
            Search::new(many.join(" "), None, vec![]),
            Err(SearchError::TooManyTerms(MAX_TERMS + 1))
        );
        assert!(Search::new(many[..MAX_TERMS].join(" "), None, vec![]).is_ok());
        assert!(Search::new("word ".repeat(800), None, vec![]).is_ok());
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
