//! The `orchestra://{prefix}/{id}` URI of a document: formatting a [`DocKey`] and parsing one back.
//!
//! Each `/`-separated segment of the id is percent-encoded on its own, so the
//! `/` between segments stays readable. Formatting is canonical (everything but
//! RFC 3986 unreserved characters escaped, uppercase hex); parsing accepts any
//! equivalent spelling and rejects everything that could not name a stored
//! document, with a message meant for the client.
//!
//! An escaped slash (`%2F`) inside a segment is rejected: ids come from file
//! paths, and a file name cannot contain `/`, so such a URI names nothing.

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use thiserror::Error;

use crate::doc::{DocKey, MAX_ID_LEN, Prefix};

pub const SCHEME: &str = "orchestra";
/// What every document URI starts with.
pub const SCHEME_PREFIX: &str = "orchestra://";

/// The longest URI `parse` looks at, in bytes. The longest valid id fully
/// escaped (3 × [`MAX_ID_LEN`]) plus scheme and prefix fits well within it.
pub const MAX_URI_LEN: usize = 4096;

/// Everything except RFC 3986 unreserved characters.
const SEGMENT_ESCAPES: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// Why a string is not a document URI. The messages go to clients verbatim.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum UriError {
    #[error("uri is {len} bytes, longer than the {max}-byte limit", max = MAX_URI_LEN)]
    TooLong { len: usize },
    #[error("uri must start with orchestra://")]
    MissingScheme,
    #[error("unsupported uri scheme {scheme:?}, expected orchestra")]
    WrongScheme { scheme: String },
    #[error("unknown prefix {prefix:?} in uri, expected docs, features or notes")]
    UnknownPrefix { prefix: String },
    #[error("uri has no document id after the prefix")]
    MissingId,
    #[error("uri must not have a query (?) or fragment (#)")]
    QueryOrFragment,
    #[error("malformed percent escape in uri, expected % followed by two hex digits")]
    BadEscape,
    #[error("percent escapes in uri do not decode to valid utf-8")]
    InvalidUtf8,
    #[error("uri id has an empty segment")]
    EmptySegment,
    #[error("uri id has a . or .. segment")]
    DotSegment,
    #[error("uri id segment contains an escaped slash (%2F), which no file name can hold")]
    EncodedSlash,
    #[error("uri id contains a nul character")]
    Nul,
    #[error("uri id is {len} bytes, longer than the {max}-byte limit", max = MAX_ID_LEN)]
    IdTooLong { len: usize },
    #[error("character {ch:?} is not allowed in a uri, percent-encode it")]
    InvalidChar { ch: char },
}

/// The canonical URI of `key`. Only meaningful for ids accepted by
/// [`crate::doc::is_valid_id`]; for those, `parse(&format(key)) == Ok(key)`.
pub fn format(key: &DocKey) -> String {
    let prefix = key.prefix.as_str();
    let mut uri = String::with_capacity(SCHEME.len() + 3 + prefix.len() + 1 + key.id.len());
    uri.push_str(SCHEME);
    uri.push_str("://");
    uri.push_str(prefix);
    for segment in key.id.split('/') {
        uri.push('/');
        uri.extend(utf8_percent_encode(segment, SEGMENT_ESCAPES));
    }
    uri
}

/// The key named by `uri`, which may spell its id with any equivalent escaping.
/// Anything returned satisfies [`crate::doc::is_valid_id`].
pub fn parse(uri: &str) -> Result<DocKey, UriError> {
    if uri.len() > MAX_URI_LEN {
        return Err(UriError::TooLong { len: uri.len() });
    }
    let (scheme, rest) = uri.split_once(':').ok_or(UriError::MissingScheme)?;
    if !is_scheme_syntax(scheme) {
        return Err(UriError::MissingScheme);
    }
    if !scheme.eq_ignore_ascii_case(SCHEME) {
        return Err(UriError::WrongScheme {
            scheme: scheme.to_owned(),
        });
    }
    let rest = rest.strip_prefix("//").ok_or(UriError::MissingScheme)?;
    if rest.contains(['?', '#']) {
        return Err(UriError::QueryOrFragment);
    }
    let (prefix, path) = rest.split_once('/').unwrap_or((rest, ""));
    let prefix = Prefix::parse(prefix).ok_or_else(|| UriError::UnknownPrefix {
        prefix: prefix.to_owned(),
    })?;
    if path.is_empty() {
        return Err(UriError::MissingId);
    }
    let mut id = String::with_capacity(path.len());
    for (i, segment) in path.split('/').enumerate() {
        if i > 0 {
            id.push('/');
        }
        id.push_str(&decode_segment(segment)?);
    }
    if id.len() > MAX_ID_LEN {
        return Err(UriError::IdTooLong { len: id.len() });
    }
    Ok(DocKey { prefix, id })
}

/// A document URI that may name a past version: `orchestra://…?version=N`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Versioned {
    pub key: DocKey,
    /// `None`: the current version.
    pub version: Option<u32>,
}

/// Why a string is not a (possibly versioned) document URI.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum VersionedError {
    #[error(transparent)]
    Uri(#[from] UriError),
    #[error("the only query a document uri takes is ?version=N, N a version number from 1")]
    BadQuery,
}

/// The document and version named by `uri`: a document URI, optionally with
/// `?version=N` (N ≥ 1, decimal). No fragment, no other query.
pub fn parse_versioned(uri: &str) -> Result<Versioned, VersionedError> {
    let Some((base, query)) = uri.split_once('?') else {
        return Ok(Versioned {
            key: parse(uri)?,
            version: None,
        });
    };
    let key = parse(base)?;
    let number = query
        .strip_prefix("version=")
        .filter(|n| !n.is_empty() && n.len() <= 9 && n.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|n| n.parse::<u32>().ok())
        .filter(|&n| n >= 1)
        .ok_or(VersionedError::BadQuery)?;
    Ok(Versioned {
        key,
        version: Some(number),
    })
}

/// The canonical URI of version `version` of `key`.
pub fn format_versioned(key: &DocKey, version: u32) -> String {
    format!("{}?version={version}", format(key))
}

/// RFC 3986 `scheme`; anything else before the first `:` means there is no scheme.
fn is_scheme_syntax(s: &str) -> bool {
    let mut bytes = s.bytes();
    bytes.next().is_some_and(|b| b.is_ascii_alphabetic())
        && bytes.all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'))
}

/// One decoded id segment: strict percent-decoding of RFC 3986 `pchar`s.
fn decode_segment(segment: &str) -> Result<String, UriError> {
    if segment.is_empty() {
        return Err(UriError::EmptySegment);
    }
    let bytes = segment.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'%' {
            let hi = bytes.get(i + 1).and_then(|&h| hex_value(h));
            let lo = bytes.get(i + 2).and_then(|&l| hex_value(l));
            let (Some(hi), Some(lo)) = (hi, lo) else {
                return Err(UriError::BadEscape);
            };
            decoded.push(hi << 4 | lo);
            i += 3;
        } else if is_pchar(b) {
            decoded.push(b);
            i += 1;
        } else {
            // Only ASCII has been consumed so far, so `i` is a char boundary.
            let ch = segment
                .get(i..)
                .and_then(|rest| rest.chars().next())
                .unwrap_or(char::REPLACEMENT_CHARACTER);
            return Err(UriError::InvalidChar { ch });
        }
    }
    let decoded = String::from_utf8(decoded).map_err(|_| UriError::InvalidUtf8)?;
    if decoded.contains('/') {
        return Err(UriError::EncodedSlash);
    }
    if decoded == "." || decoded == ".." {
        return Err(UriError::DotSegment);
    }
    if decoded.contains('\0') {
        return Err(UriError::Nul);
    }
    Ok(decoded)
}

/// RFC 3986 `pchar` minus `pct-encoded`: unreserved, sub-delims, `:` and `@`.
fn is_pchar(b: u8) -> bool {
    b.is_ascii_alphanumeric()
        || matches!(
            b,
            b'-' | b'.'
                | b'_'
                | b'~'
                | b'!'
                | b'$'
                | b'&'
                | b'\''
                | b'('
                | b')'
                | b'*'
                | b'+'
                | b','
                | b';'
                | b'='
                | b':'
                | b'@'
        )
}

fn hex_value(b: u8) -> Option<u8> {
    char::from(b)
        .to_digit(16)
        .and_then(|d| u8::try_from(d).ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::is_valid_id;
    use proptest::prelude::*;

    /// The key a URI should parse to, or why it should not.
    type Expected<'a> = Result<(Prefix, &'a str), UriError>;

    #[track_caller]
    fn check(uri: &str, expected: Expected) {
        let expected = expected.map(|(prefix, id)| DocKey::new(prefix, id));
        assert_eq!(parse(uri), expected, "parse({uri:?})");
    }

    #[test]
    fn versioned_uris() {
        let feat = DocKey::new(Prefix::Features, "FEAT-001");
        let cases: &[(&str, Option<Option<u32>>)] = &[
            ("orchestra://features/FEAT-001", Some(None)),
            ("orchestra://features/FEAT-001?version=3", Some(Some(3))),
            ("orchestra://features/%46EAT-001?version=12", Some(Some(12))),
            ("orchestra://features/FEAT-001?version=0", None),
            ("orchestra://features/FEAT-001?version=", None),
            ("orchestra://features/FEAT-001?version=-1", None),
            ("orchestra://features/FEAT-001?version=1&x=2", None),
            ("orchestra://features/FEAT-001?v=1", None),
            ("orchestra://features/FEAT-001?version=99999999999", None),
            ("orchestra://features/FEAT-001?version=1#x", None),
        ];
        for (uri, expected) in cases {
            let got = parse_versioned(uri).ok().map(|v| {
                assert_eq!(v.key, feat, "{uri}");
                v.version
            });
            assert_eq!(got, *expected, "{uri}");
        }
        assert_eq!(
            format_versioned(&feat, 3),
            "orchestra://features/FEAT-001?version=3"
        );
        assert_eq!(
            parse_versioned(&format_versioned(&feat, 7))
                .unwrap()
                .version,
            Some(7)
        );
    }

    #[track_caller]
    fn check_format(prefix: Prefix, id: &str, expected: &str) {
        let key = DocKey::new(prefix, id);
        assert_eq!(format(&key), expected, "format({key:?})");
        assert_eq!(parse(expected), Ok(key), "parse({expected:?})");
    }

    #[test]
    fn formats() {
        use Prefix::*;
        for (prefix, id, uri) in [
            (Features, "FEAT-001", "orchestra://features/FEAT-001"),
            (Docs, "adr/0006", "orchestra://docs/adr/0006"),
            (Notes, "café notes", "orchestra://notes/caf%C3%A9%20notes"),
            (Docs, "a.b_c~d-e", "orchestra://docs/a.b_c~d-e"),
            (Docs, ".hidden/...", "orchestra://docs/.hidden/..."),
            (Docs, "100%?#", "orchestra://docs/100%25%3F%23"),
            (Docs, "(draft)!@:", "orchestra://docs/%28draft%29%21%40%3A"),
            (Docs, "x+y=z", "orchestra://docs/x%2By%3Dz"),
            (
                Notes,
                "日本/語",
                "orchestra://notes/%E6%97%A5%E6%9C%AC/%E8%AA%9E",
            ),
        ] {
            check_format(prefix, id, uri);
        }
    }

    #[test]
    fn parses() {
        use Prefix::*;
        use UriError::*;
        let long_id = "a".repeat(MAX_ID_LEN);
        let too_long_id = "a".repeat(MAX_ID_LEN + 1);
        let long_escaped = "%61".repeat(MAX_ID_LEN + 1);
        let too_long_uri = format!("orchestra://docs/{}", "a".repeat(MAX_URI_LEN));
        let cases: Vec<(String, Expected)> = vec![
            // Equivalent spellings.
            ("orchestra://docs/adr/0006".into(), Ok((Docs, "adr/0006"))),
            ("ORCHESTRA://docs/x".into(), Ok((Docs, "x"))),
            ("Orchestra://notes/x".into(), Ok((Notes, "x"))),
            (
                "orchestra://notes/caf%c3%a9%20notes".into(),
                Ok((Notes, "café notes")),
            ),
            (
                "orchestra://notes/caf%C3%A9%20notes".into(),
                Ok((Notes, "café notes")),
            ),
            (
                "orchestra://features/%46EAT%2d001".into(),
                Ok((Features, "FEAT-001")),
            ),
            (
                "orchestra://docs/(draft)!$&'*+,;=:@".into(),
                Ok((Docs, "(draft)!$&'*+,;=:@")),
            ),
            ("orchestra://docs/%2E%2E%2E".into(), Ok((Docs, "..."))),
            ("orchestra://docs/.x/x.".into(), Ok((Docs, ".x/x."))),
            (format!("orchestra://docs/{long_id}"), Ok((Docs, &long_id))),
            // Scheme.
            ("".into(), Err(MissingScheme)),
            ("docs/x".into(), Err(MissingScheme)),
            ("//docs/x".into(), Err(MissingScheme)),
            ("orchestra:docs/x".into(), Err(MissingScheme)),
            ("orchestra:/docs/x".into(), Err(MissingScheme)),
            ("1abc://docs/x".into(), Err(MissingScheme)),
            (
                "http://docs/x".into(),
                Err(WrongScheme {
                    scheme: "http".into(),
                }),
            ),
            (
                "orchestras://docs/x".into(),
                Err(WrongScheme {
                    scheme: "orchestras".into(),
                }),
            ),
            // Prefix and id presence.
            (
                "orchestra://Docs/x".into(),
                Err(UnknownPrefix {
                    prefix: "Docs".into(),
                }),
            ),
            (
                "orchestra://doc/x".into(),
                Err(UnknownPrefix {
                    prefix: "doc".into(),
                }),
            ),
            (
                "orchestra:///x".into(),
                Err(UnknownPrefix { prefix: "".into() }),
            ),
            (
                "orchestra://%64ocs/x".into(),
                Err(UnknownPrefix {
                    prefix: "%64ocs".into(),
                }),
            ),
            ("orchestra://docs".into(), Err(MissingId)),
            ("orchestra://docs/".into(), Err(MissingId)),
            // Query and fragment.
            ("orchestra://docs/x?y=1".into(), Err(QueryOrFragment)),
            ("orchestra://docs/x#top".into(), Err(QueryOrFragment)),
            ("orchestra://docs?x".into(), Err(QueryOrFragment)),
            // Escapes.
            ("orchestra://docs/%".into(), Err(BadEscape)),
            ("orchestra://docs/%4".into(), Err(BadEscape)),
            ("orchestra://docs/%zz".into(), Err(BadEscape)),
            ("orchestra://docs/a%4/b".into(), Err(BadEscape)),
            ("orchestra://docs/%+1".into(), Err(BadEscape)),
            ("orchestra://docs/%C3".into(), Err(InvalidUtf8)),
            ("orchestra://docs/%FF".into(), Err(InvalidUtf8)),
            // Segments.
            ("orchestra://docs/a//b".into(), Err(EmptySegment)),
            ("orchestra://docs/a/".into(), Err(EmptySegment)),
            ("orchestra://docs//a".into(), Err(EmptySegment)),
            ("orchestra://docs/.".into(), Err(DotSegment)),
            ("orchestra://docs/a/../b".into(), Err(DotSegment)),
            ("orchestra://docs/%2E%2E".into(), Err(DotSegment)),
            ("orchestra://docs/%2e".into(), Err(DotSegment)),
            ("orchestra://docs/a%2Fb".into(), Err(EncodedSlash)),
            ("orchestra://docs/a%2fb".into(), Err(EncodedSlash)),
            ("orchestra://docs/a%00b".into(), Err(Nul)),
            (
                "orchestra://docs/a\0b".into(),
                Err(InvalidChar { ch: '\0' }),
            ),
            // Characters that must be escaped.
            ("orchestra://docs/café".into(), Err(InvalidChar { ch: 'é' })),
            ("orchestra://docs/a b".into(), Err(InvalidChar { ch: ' ' })),
            (
                "orchestra://docs/a\tb".into(),
                Err(InvalidChar { ch: '\t' }),
            ),
            (
                "orchestra://docs/a\nb".into(),
                Err(InvalidChar { ch: '\n' }),
            ),
            ("orchestra://docs/a[1]".into(), Err(InvalidChar { ch: '[' })),
            (
                "orchestra://docs/a\\b".into(),
                Err(InvalidChar { ch: '\\' }),
            ),
            ("orchestra://docs/{x}".into(), Err(InvalidChar { ch: '{' })),
            (
                "orchestra://docs/\"x\"".into(),
                Err(InvalidChar { ch: '"' }),
            ),
            // Lengths.
            (
                format!("orchestra://docs/{too_long_id}"),
                Err(IdTooLong {
                    len: MAX_ID_LEN + 1,
                }),
            ),
            (
                format!("orchestra://docs/{long_escaped}"),
                Err(IdTooLong {
                    len: MAX_ID_LEN + 1,
                }),
            ),
            (
                too_long_uri.clone(),
                Err(TooLong {
                    len: too_long_uri.len(),
                }),
            ),
        ];
        for (uri, expected) in cases {
            check(&uri, expected);
        }
    }

    #[test]
    fn messages_are_lowercase_without_period() {
        for err in [
            UriError::TooLong { len: 5000 },
            UriError::MissingScheme,
            UriError::WrongScheme {
                scheme: "http".into(),
            },
            UriError::EncodedSlash,
            UriError::InvalidChar { ch: ' ' },
        ] {
            let msg = err.to_string();
            assert!(!msg.ends_with('.'), "{msg}");
            assert!(msg.starts_with(|c: char| c.is_lowercase()), "{msg}");
        }
        assert_eq!(
            UriError::TooLong { len: 5000 }.to_string(),
            "uri is 5000 bytes, longer than the 4096-byte limit"
        );
    }

    /// Valid ids, built from segments full of characters that need escaping.
    fn valid_id() -> impl Strategy<Value = String> {
        let segment = prop_oneof![
            "[^/]{1,12}",
            "[ %#?.~a-zé\\[\\]:@!()+]{1,8}",
            Just(".".to_owned()),
            Just("..".to_owned()),
            Just("...".to_owned()),
        ];
        prop::collection::vec(segment, 1..5)
            .prop_map(|segments| segments.join("/"))
            .prop_filter("valid id", |id| is_valid_id(id))
    }

    fn prefix() -> impl Strategy<Value = Prefix> {
        prop::sample::select(Prefix::ALL.to_vec())
    }

    /// URI-shaped strings, most of which parse.
    fn uri_like() -> impl Strategy<Value = String> {
        let scheme = prop_oneof!["orchestra", "ORCHESTRA", "OrChEsTrA", "[a-z]{1,10}"];
        let prefix = prop_oneof![
            4 => prop::sample::select(vec!["docs", "features", "notes"]).prop_map(String::from),
            1 => "[a-z]{0,9}",
        ];
        let token = prop_oneof![
            20 => "[-a-zA-Z0-9._~!$&'()*+,;=:@]",
            6 => "%[2-7][0-9a-fA-F]",
            1 => "%[0-9a-fA-F]{2}",
            2 => Just("/".to_owned()),
            2 => Just("%C3%a9".to_owned()),
            1 => "%2[eEfF]|%00|[ é?#%]",
        ];
        let path = prop::collection::vec(token, 1..24).prop_map(|tokens| tokens.concat());
        (scheme, prefix, path).prop_map(|(s, p, path)| format!("{s}://{p}/{path}"))
    }

    proptest! {
        #[test]
        fn valid_keys_round_trip(prefix in prefix(), id in valid_id()) {
            let key = DocKey::new(prefix, id);
            let uri = format(&key);
            prop_assert!(uri.len() <= MAX_URI_LEN);
            prop_assert_eq!(parse(&uri), Ok(key));
        }

        #[test]
        fn parsed_uris_format_canonically(uri in uri_like()) {
            if let Ok(key) = parse(&uri) {
                prop_assert!(is_valid_id(&key.id), "{:?}", key);
                let canonical = format(&key);
                let reparsed = parse(&canonical);
                prop_assert_eq!(reparsed.as_ref(), Ok(&key));
                if let Ok(again) = reparsed {
                    prop_assert_eq!(format(&again), canonical);
                }
            }
        }

        #[test]
        fn parse_never_panics(uri in any::<String>()) {
            let _ = parse(&uri);
        }

        #[test]
        fn parse_never_panics_on_near_misses(uri in "orchestra://(docs|notes)/\\PC{0,40}") {
            let _ = parse(&uri);
        }
    }
}
