//! `fuzz_uri`: `uri::parse` never panics and accepts only what names a document; `uri::format` is canonical and round-trips, however a key is spelled.

use orchestra::doc::{DocKey, MAX_ID_LEN, Prefix, is_valid_id};
use orchestra::uri;
use proptest::prelude::*;
use proptest::test_runner::TestCaseResult;

use super::{corpus_file, fuzz, replay, timed, uri_like, valid_key};

#[derive(Debug, Clone)]
enum UriCase {
    Text(String),
    Key(DocKey),
    /// A key spelled another way: each byte raw (where allowed) or escaped,
    /// in upper or lower case, chosen by the flags, and the scheme's case.
    Respelled(DocKey, Vec<u8>),
}

/// RFC 3986 `pchar` minus escapes: what may appear raw in a segment.
fn is_pchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@".contains(&b)
}

fn respell(key: &DocKey, flags: &[u8]) -> String {
    let mut flags = flags.iter().copied().cycle();
    let mut next = move || flags.next().unwrap_or(0);
    let scheme: String = "orchestra"
        .chars()
        .map(|c| {
            if next() & 1 == 1 {
                c.to_ascii_uppercase()
            } else {
                c
            }
        })
        .collect();
    let mut uri = format!("{scheme}://{}", key.prefix);
    for segment in key.id.split('/') {
        uri.push('/');
        for &b in segment.as_bytes() {
            let flag = next();
            if is_pchar(b) && flag & 1 == 0 {
                uri.push(char::from(b));
            } else if flag & 2 == 0 {
                uri.push_str(&format!("%{b:02X}"));
            } else {
                uri.push_str(&format!("%{b:02x}"));
            }
        }
    }
    uri
}

/// Whether `uri` is in canonical form: scheme, prefix, then only unreserved
/// characters, `/` and uppercase escapes of bytes that are not unreserved.
fn is_canonical(uri: &str, key: &DocKey) -> bool {
    let Some(path) = uri
        .strip_prefix("orchestra://")
        .and_then(|rest| rest.strip_prefix(key.prefix.as_str()))
        .and_then(|rest| rest.strip_prefix('/'))
    else {
        return false;
    };
    let bytes = path.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'%' {
            let Some(hex) = path.get(i + 1..i + 3) else {
                return false;
            };
            if !hex
                .bytes()
                .all(|h| h.is_ascii_digit() || (b'A'..=b'F').contains(&h))
            {
                return false;
            }
            let Ok(value) = u8::from_str_radix(hex, 16) else {
                return false;
            };
            if value.is_ascii_alphanumeric() || b"-._~".contains(&value) {
                return false; // an unreserved character must not be escaped
            }
            i += 3;
        } else if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            i += 1;
        } else {
            return false;
        }
    }
    true
}

fn check_uri_text(text: &str) -> TestCaseResult {
    let parsed = timed("uri::parse", || uri::parse(text))?;
    match parsed {
        Ok(key) => {
            prop_assert!(is_valid_id(&key.id), "parse gave an invalid id: {:?}", key);
            let canonical = uri::format(&key);
            prop_assert!(
                is_canonical(&canonical, &key),
                "format is not canonical: {:?}",
                canonical
            );
            prop_assert!(canonical.len() <= uri::MAX_URI_LEN);
            let reparsed = uri::parse(&canonical);
            prop_assert_eq!(reparsed.as_ref(), Ok(&key), "parse(format(k)) != k");
            prop_assert_eq!(uri::format(&reparsed.unwrap()), canonical);
            prop_assert!(text.len() <= uri::MAX_URI_LEN);
        }
        Err(err) => {
            if text.len() > uri::MAX_URI_LEN {
                prop_assert_eq!(err.clone(), uri::UriError::TooLong { len: text.len() });
            }
            let message = err.to_string();
            prop_assert!(
                message.starts_with(|c: char| c.is_lowercase()) && !message.ends_with('.'),
                "message {:?}",
                message
            );
        }
    }
    Ok(())
}

fn check_uri(case: UriCase) -> TestCaseResult {
    match case {
        UriCase::Text(text) => check_uri_text(&text),
        UriCase::Key(key) => {
            let formatted = uri::format(&key);
            prop_assert!(is_canonical(&formatted, &key), "{:?}", formatted);
            prop_assert_eq!(uri::parse(&formatted), Ok(key));
            check_uri_text(&formatted)
        }
        UriCase::Respelled(key, flags) => {
            let spelled = respell(&key, &flags);
            if spelled.len() <= uri::MAX_URI_LEN {
                prop_assert_eq!(uri::parse(&spelled), Ok(key), "{:?}", spelled);
            }
            check_uri_text(&spelled)
        }
    }
}

#[test]
fn fuzz_uri() {
    replay("uri", |bytes| {
        check_uri(UriCase::Text(String::from_utf8_lossy(bytes).into_owned()))
    });
    let strategy = prop_oneof![
        2 => any::<String>().prop_map(UriCase::Text),
        5 => uri_like().prop_map(UriCase::Text),
        2 => valid_key().prop_map(UriCase::Key),
        2 => (valid_key(), prop::collection::vec(any::<u8>(), 1..16))
            .prop_map(|(key, flags)| UriCase::Respelled(key, flags)),
    ];
    fuzz("fuzz_uri", 256, strategy, check_uri);
}

/// Generated inputs: URIs at and past the length limits.
pub(super) fn generated_corpus() -> Vec<(String, Vec<u8>)> {
    vec![
        corpus_file(
            "gen-too-long",
            format!("orchestra://docs/{}", "a".repeat(uri::MAX_URI_LEN)),
        ),
        corpus_file(
            "gen-id-longest",
            format!("orchestra://docs/{}", "a".repeat(MAX_ID_LEN)),
        ),
        corpus_file(
            "gen-id-too-long",
            format!("orchestra://docs/{}", "a".repeat(MAX_ID_LEN + 1)),
        ),
        corpus_file(
            "gen-id-too-long-escaped",
            format!("orchestra://docs/{}", "%61".repeat(MAX_ID_LEN + 1)),
        ),
        corpus_file(
            "gen-id-longest-escaped",
            uri::format(&DocKey::new(Prefix::Notes, "é".repeat(MAX_ID_LEN / 2))),
        ),
    ]
}
