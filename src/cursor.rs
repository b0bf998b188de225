//! The opaque cursors of `resources/list` (the last key of the previous page) and of search pages (the search's fingerprint and where its next page starts), versioned and checksummed.
//!
//! Layout before base64 (URL-safe, no padding):
//! `b"o1"` (format tag) ‖ prefix name ‖ `0x00` ‖ id ‖ first 4 bytes of the
//! blake3 hash of everything before it. Ids never contain NUL, so the
//! separator is unambiguous. The checksum makes a truncated or hand-edited
//! cursor fail loudly instead of silently starting the listing elsewhere; it
//! is not a secret, and a cursor forged with a valid checksum is still
//! validated like any client-supplied key.
//!
//! Search cursors: `b"s1"` ‖ the search's 8-byte fingerprint ‖ `b'o'` and a
//! little-endian u64 offset (ranked hits), `b'r'` and the same (ranked hits
//! of the relaxed search: any of the words) or `b'k'` and a key as above
//! (hits in key order) ‖ the same checksum. A cursor of another search is refused,
//! never applied to this one.
//!
//! History cursors: `b"h1"` ‖ 8 bytes of the blake3 hash of the document's
//! key ‖ the little-endian u32 version the next page starts below ‖ the
//! checksum.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use thiserror::Error;

use crate::doc::{DocKey, Prefix, is_valid_id};

/// Format tag; bump it when the layout changes so old cursors are refused.
const TAG: &[u8] = b"o1";
/// Format tag of search cursors.
const SEARCH_TAG: &[u8] = b"s1";
/// Format tag of history cursors.
const HISTORY_TAG: &[u8] = b"h1";
/// Format tag of the cursors of a document's links.
const LINKS_TAG: &[u8] = b"l1";
const CHECKSUM_LEN: usize = 4;
/// Longest cursor `decode` looks at, in bytes. Valid cursors stay under 1.5 KiB.
const MAX_CURSOR_LEN: usize = 4096;

/// Why a cursor was refused. The messages go to clients verbatim.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum CursorError {
    #[error("invalid cursor: longer than {max} bytes", max = MAX_CURSOR_LEN)]
    TooLong,
    #[error("invalid cursor: empty")]
    Empty,
    #[error("invalid cursor: not url-safe base64")]
    Base64,
    #[error("invalid cursor: too short")]
    TooShort,
    #[error("invalid cursor: unsupported format, request the listing again from the start")]
    Tag,
    #[error("invalid cursor: checksum mismatch, the cursor was truncated or modified")]
    Checksum,
    #[error("invalid cursor: malformed key")]
    Malformed,
    #[error("invalid cursor: unknown prefix")]
    UnknownPrefix,
    #[error("invalid cursor: invalid document id")]
    InvalidId,
    #[error("invalid cursor: it belongs to another search; repeat the search without a cursor")]
    OtherSearch,
    #[error("invalid cursor: it belongs to another document; ask again without a cursor")]
    OtherDocument,
}

/// The cursor that resumes a listing right after `after`.
pub fn encode(after: &DocKey) -> String {
    let prefix = after.prefix.as_str();
    let mut payload =
        Vec::with_capacity(TAG.len() + prefix.len() + 1 + after.id.len() + CHECKSUM_LEN);
    payload.extend_from_slice(TAG);
    payload.extend_from_slice(prefix.as_bytes());
    payload.push(0);
    payload.extend_from_slice(after.id.as_bytes());
    seal(payload)
}

/// The key a cursor made by [`encode`] resumes after. Never panics.
pub fn decode(cursor: &str) -> Result<DocKey, CursorError> {
    let payload = unseal(cursor)?;
    let key = open(&payload, TAG)?;
    decode_key(key)
}

/// Where the next page of a search starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SearchResume {
    /// After this many hits of a ranked search.
    Offset(u64),
    /// After this many hits of a relaxed search: the documents that hold
    /// any of the query's words, when none holds them all.
    Relaxed(u64),
    /// After this key, for searches listed in key order (filters only).
    After(DocKey),
}

/// The cursor of a search's next page. `query` is the search's fingerprint:
/// a cursor resumes only the search that made it.
pub fn encode_search(query: &[u8; 8], resume: &SearchResume) -> String {
    let mut payload = Vec::with_capacity(64);
    payload.extend_from_slice(SEARCH_TAG);
    payload.extend_from_slice(query);
    match resume {
        SearchResume::Offset(offset) => {
            payload.push(b'o');
            payload.extend_from_slice(&offset.to_le_bytes());
        }
        SearchResume::Relaxed(offset) => {
            payload.push(b'r');
            payload.extend_from_slice(&offset.to_le_bytes());
        }
        SearchResume::After(key) => {
            payload.push(b'k');
            payload.extend_from_slice(key.prefix.as_str().as_bytes());
            payload.push(0);
            payload.extend_from_slice(key.id.as_bytes());
        }
    }
    seal(payload)
}

/// Where a cursor made by [`encode_search`] for the same search resumes.
/// Never panics.
pub fn decode_search(cursor: &str, query: &[u8; 8]) -> Result<SearchResume, CursorError> {
    let payload = unseal(cursor)?;
    let body = open(&payload, SEARCH_TAG)?;
    let (fingerprint, rest) = body
        .split_at_checked(query.len())
        .ok_or(CursorError::TooShort)?;
    if fingerprint != query {
        return Err(CursorError::OtherSearch);
    }
    match rest.split_first() {
        Some((b'o', offset)) => {
            let offset: [u8; 8] = offset.try_into().map_err(|_| CursorError::Malformed)?;
            Ok(SearchResume::Offset(u64::from_le_bytes(offset)))
        }
        Some((b'r', offset)) => {
            let offset: [u8; 8] = offset.try_into().map_err(|_| CursorError::Malformed)?;
            Ok(SearchResume::Relaxed(u64::from_le_bytes(offset)))
        }
        Some((b'k', key)) => decode_key(key).map(SearchResume::After),
        _ => Err(CursorError::Malformed),
    }
}

/// The cursor of the next page of `key`'s history: versions before `before`.
pub fn encode_history(key: &DocKey, before: u32) -> String {
    let mut payload = Vec::with_capacity(24);
    payload.extend_from_slice(HISTORY_TAG);
    payload.extend_from_slice(&key_fingerprint(key));
    payload.extend_from_slice(&before.to_le_bytes());
    seal(payload)
}

/// The version a cursor made by [`encode_history`] for the same document
/// resumes before. Never panics.
pub fn decode_history(cursor: &str, key: &DocKey) -> Result<u32, CursorError> {
    let payload = unseal(cursor)?;
    let body = open(&payload, HISTORY_TAG)?;
    let (fingerprint, before) = body.split_at_checked(8).ok_or(CursorError::TooShort)?;
    if fingerprint != key_fingerprint(key) {
        return Err(CursorError::OtherDocument);
    }
    let before: [u8; 4] = before.try_into().map_err(|_| CursorError::Malformed)?;
    Ok(u32::from_le_bytes(before))
}

/// Where the next page of a document's links starts: after its link `n`,
/// or among its backlinks (its own links came first, and are done): from
/// the first, or after the link `n` of a source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinksResume {
    Out(u32),
    In(Option<(DocKey, u32)>),
}

/// The cursor of the next page of the links of `key`.
pub fn encode_links(key: &DocKey, resume: &LinksResume) -> String {
    let mut payload = Vec::with_capacity(32);
    payload.extend_from_slice(LINKS_TAG);
    payload.extend_from_slice(&key_fingerprint(key));
    match resume {
        LinksResume::Out(n) => {
            payload.push(b'o');
            payload.extend_from_slice(&n.to_le_bytes());
        }
        LinksResume::In(None) => payload.push(b'b'),
        LinksResume::In(Some((source, n))) => {
            payload.push(b'i');
            payload.extend_from_slice(&n.to_le_bytes());
            payload.extend_from_slice(source.prefix.as_str().as_bytes());
            payload.push(0);
            payload.extend_from_slice(source.id.as_bytes());
        }
    }
    seal(payload)
}

/// Where a cursor made by [`encode_links`] for the same document resumes.
/// Never panics.
pub fn decode_links(cursor: &str, key: &DocKey) -> Result<LinksResume, CursorError> {
    let payload = unseal(cursor)?;
    let body = open(&payload, LINKS_TAG)?;
    let (fingerprint, rest) = body.split_at_checked(8).ok_or(CursorError::TooShort)?;
    if fingerprint != key_fingerprint(key) {
        return Err(CursorError::OtherDocument);
    }
    let (&direction, rest) = rest.split_first().ok_or(CursorError::TooShort)?;
    if direction == b'b' && rest.is_empty() {
        return Ok(LinksResume::In(None));
    }
    let (n, source) = rest.split_at_checked(4).ok_or(CursorError::TooShort)?;
    let n = u32::from_le_bytes(n.try_into().map_err(|_| CursorError::Malformed)?);
    match direction {
        b'o' if source.is_empty() => Ok(LinksResume::Out(n)),
        b'i' => Ok(LinksResume::In(Some((decode_key(source)?, n)))),
        _ => Err(CursorError::Malformed),
    }
}

fn key_fingerprint(key: &DocKey) -> [u8; 8] {
    let hash = blake3::hash(key.to_string().as_bytes());
    let mut fingerprint = [0; 8];
    fingerprint.copy_from_slice(&hash.as_bytes()[..8]);
    fingerprint
}

fn seal(mut payload: Vec<u8>) -> String {
    let sum = checksum(&payload);
    payload.extend_from_slice(&sum);
    URL_SAFE_NO_PAD.encode(payload)
}

/// The payload of a cursor, checked for length and base64 only.
fn unseal(cursor: &str) -> Result<Vec<u8>, CursorError> {
    if cursor.len() > MAX_CURSOR_LEN {
        return Err(CursorError::TooLong);
    }
    if cursor.is_empty() {
        return Err(CursorError::Empty);
    }
    URL_SAFE_NO_PAD
        .decode(cursor)
        .map_err(|_| CursorError::Base64)
}

/// What follows the format tag, once tag and checksum are checked.
fn open<'a>(payload: &'a [u8], tag: &[u8]) -> Result<&'a [u8], CursorError> {
    let Some(body_len) = payload.len().checked_sub(CHECKSUM_LEN) else {
        return Err(CursorError::TooShort);
    };
    let (body, sum) = payload.split_at(body_len);
    // The tag first: a future format may checksum differently.
    let rest = body.strip_prefix(tag).ok_or(CursorError::Tag)?;
    if sum != checksum(body) {
        return Err(CursorError::Checksum);
    }
    Ok(rest)
}

/// `prefix NUL id`, validated like any client-supplied key.
fn decode_key(key: &[u8]) -> Result<DocKey, CursorError> {
    let separator = key
        .iter()
        .position(|&b| b == 0)
        .ok_or(CursorError::Malformed)?;
    let (prefix, id) = (&key[..separator], &key[separator + 1..]);
    let prefix = std::str::from_utf8(prefix)
        .ok()
        .and_then(Prefix::parse)
        .ok_or(CursorError::UnknownPrefix)?;
    let id = std::str::from_utf8(id).map_err(|_| CursorError::InvalidId)?;
    if !is_valid_id(id) {
        return Err(CursorError::InvalidId);
    }
    Ok(DocKey::new(prefix, id))
}

fn checksum(body: &[u8]) -> [u8; CHECKSUM_LEN] {
    let hash = blake3::hash(body);
    let mut sum = [0; CHECKSUM_LEN];
    sum.copy_from_slice(&hash.as_bytes()[..CHECKSUM_LEN]);
    sum
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::MAX_ID_LEN;
    use proptest::prelude::*;

    #[test]
    fn links_cursors_resume_where_they_were_made() {
        let doc = DocKey::new(Prefix::parse("features").unwrap(), "FEAT-001");
        let other = DocKey::new(Prefix::parse("features").unwrap(), "FEAT-002");
        let source = DocKey::new(Prefix::parse("docs").unwrap(), "adr/café");
        for resume in [
            LinksResume::Out(7),
            LinksResume::In(None),
            LinksResume::In(Some((source.clone(), 3))),
        ] {
            let cursor = encode_links(&doc, &resume);
            assert_eq!(decode_links(&cursor, &doc), Ok(resume));
            assert_eq!(
                decode_links(&cursor, &other),
                Err(CursorError::OtherDocument)
            );
            assert_eq!(decode_links(&encode(&doc), &doc), Err(CursorError::Tag));
        }
    }

    /// Base64 of a payload with a correct checksum, for hand-built bad cursors.
    fn sealed(body: &[u8]) -> String {
        let mut payload = body.to_vec();
        payload.extend_from_slice(&checksum(body));
        URL_SAFE_NO_PAD.encode(payload)
    }

    #[test]
    fn history_cursors_resume_only_their_document() {
        let a = DocKey::new(Prefix::Features, "FEAT-001");
        let b = DocKey::new(Prefix::Features, "FEAT-002");
        let cursor = encode_history(&a, 7);
        assert_eq!(decode_history(&cursor, &a), Ok(7));
        assert_eq!(decode_history(&cursor, &b), Err(CursorError::OtherDocument));
        assert_eq!(decode_history(&encode(&a), &a), Err(CursorError::Tag));
        assert_eq!(decode_history("", &a), Err(CursorError::Empty));
        let mut forged = cursor.clone();
        forged.pop();
        assert!(decode_history(&forged, &a).is_err());
    }

    #[track_caller]
    fn check(cursor: &str, expected: Result<(Prefix, &str), CursorError>) {
        let expected = expected.map(|(prefix, id)| DocKey::new(prefix, id));
        assert_eq!(decode(cursor), expected, "decode({cursor:?})");
    }

    #[test]
    fn round_trips() {
        let long = "x".repeat(MAX_ID_LEN);
        for (prefix, id) in [
            (Prefix::Docs, "adr/0006"),
            (Prefix::Features, "FEAT-001"),
            (Prefix::Notes, "café notes"),
            (Prefix::Notes, long.as_str()),
        ] {
            let cursor = encode(&DocKey::new(prefix, id));
            assert!(cursor.len() < 1536, "{}", cursor.len());
            check(&cursor, Ok((prefix, id)));
        }
    }

    #[test]
    fn rejects() {
        use CursorError::*;
        let valid = encode(&DocKey::new(Prefix::Docs, "adr/0006"));
        let truncated = &valid[..valid.len() - 2];
        let mut edited = valid.clone().into_bytes();
        edited[5] = if edited[5] == b'A' { b'B' } else { b'A' };
        let edited = String::from_utf8(edited).unwrap_or_default();
        let wrong_tag = {
            let mut body = b"o2docs\0x".to_vec();
            let sum = checksum(&body);
            body.extend_from_slice(&sum);
            URL_SAFE_NO_PAD.encode(body)
        };
        let padded = format!("{valid}=");
        let cases: Vec<(String, CursorError)> = vec![
            ("".into(), Empty),
            ("abc".into(), TooShort),
            ("a".into(), Base64),
            ("!!!!!!!!".into(), Base64),
            ("b28x ZG9jcwA".into(), Base64),
            (padded, Base64),
            ("x".repeat(MAX_CURSOR_LEN + 1), TooLong),
            (edited, Checksum),
            (truncated.into(), Checksum),
            (wrong_tag, Tag),
            (URL_SAFE_NO_PAD.encode(b"xxxxxxxx"), Tag),
            (sealed(b"o1docs"), Malformed),
            (sealed(b"o1Docs\0x"), UnknownPrefix),
            (sealed(b"o1\0x"), UnknownPrefix),
            (sealed(b"o1docs\0"), InvalidId),
            (sealed(b"o1docs\0a//b"), InvalidId),
            (sealed(b"o1docs\0../x"), InvalidId),
            (sealed(b"o1docs\0a\0b"), InvalidId),
            (sealed(b"o1docs\0\xff"), InvalidId),
        ];
        for (cursor, expected) in cases {
            check(&cursor, Err(expected));
        }
    }

    #[test]
    fn messages_are_clear() {
        assert_eq!(
            CursorError::Checksum.to_string(),
            "invalid cursor: checksum mismatch, the cursor was truncated or modified"
        );
        assert_eq!(
            CursorError::TooLong.to_string(),
            "invalid cursor: longer than 4096 bytes"
        );
    }

    fn key() -> impl Strategy<Value = DocKey> {
        let prefix = prop::sample::select(Prefix::ALL.to_vec());
        let id = prop::collection::vec("[^/\0]{1,10}", 1..5)
            .prop_map(|segments| segments.join("/"))
            .prop_filter("valid id", |id| is_valid_id(id));
        (prefix, id).prop_map(|(prefix, id)| DocKey::new(prefix, id))
    }

    proptest! {
        #[test]
        fn keys_round_trip(key in key()) {
            prop_assert_eq!(decode(&encode(&key)), Ok(key));
        }

        #[test]
        fn any_single_edit_is_rejected(key in key(), at in any::<prop::sample::Index>(), with in "[A-Za-z0-9_-]") {
            let cursor = encode(&key);
            let at = at.index(cursor.len());
            let mut edited = cursor.clone();
            edited.replace_range(at..=at, &with);
            prop_assume!(edited != cursor);
            prop_assert!(decode(&edited).is_err());
        }

        #[test]
        fn any_truncation_is_rejected(key in key(), keep in any::<prop::sample::Index>()) {
            let cursor = encode(&key);
            let keep = keep.index(cursor.len());
            prop_assert!(decode(&cursor[..keep]).is_err());
        }

        #[test]
        fn decode_never_panics(cursor in any::<String>()) {
            let _ = decode(&cursor);
        }

        #[test]
        fn decode_never_panics_on_base64(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
            let _ = decode(&URL_SAFE_NO_PAD.encode(&bytes));
            let mut with_tag = b"o1".to_vec();
            with_tag.extend_from_slice(&bytes);
            let _ = decode(&sealed(&with_tag));
        }
    }
}
