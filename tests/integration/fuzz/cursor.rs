//! `fuzz_cursor`: `cursor::decode` never panics, accepts only the cursors `cursor::encode` makes, and refuses every edit of one.

use orchestra::cursor;
use orchestra::doc::{DocKey, MAX_ID_LEN, Prefix, is_valid_id};
use proptest::prelude::*;
use proptest::test_runner::TestCaseResult;

use super::{
    Edit, apply_edits, base64ish, corpus_file, edit, fuzz, replay, sealed, timed, valid_key,
};

#[derive(Debug, Clone)]
enum CursorCase {
    Text(String),
    Edited { key: DocKey, edits: Vec<Edit> },
    Key(DocKey),
}

fn check_cursor_text(text: &str) -> TestCaseResult {
    let decoded = timed("cursor::decode", || cursor::decode(text))?;
    if let Ok(key) = decoded {
        prop_assert!(is_valid_id(&key.id), "decode gave an invalid id: {:?}", key);
        let encoded = cursor::encode(&key);
        prop_assert_eq!(cursor::decode(&encoded), Ok(key.clone()));
        // Strict base64 makes decoding injective: an accepted cursor is the
        // one `encode` makes.
        prop_assert_eq!(encoded, text, "two cursors for {:?}", key);
    }
    Ok(())
}

fn check_cursor(case: CursorCase) -> TestCaseResult {
    match case {
        CursorCase::Text(text) => check_cursor_text(&text),
        CursorCase::Edited { key, edits } => {
            let valid = cursor::encode(&key);
            let edited = apply_edits(&valid, &edits);
            check_cursor_text(&edited)?;
            if edited != valid {
                // A 32-bit checksum: a false alarm here is a 1-in-4-billion event.
                prop_assert!(
                    cursor::decode(&edited).is_err(),
                    "an edited cursor was accepted: {:?} -> {:?}",
                    valid,
                    edited
                );
            }
            Ok(())
        }
        CursorCase::Key(key) => {
            let encoded = cursor::encode(&key);
            prop_assert_eq!(cursor::decode(&encoded), Ok(key));
            check_cursor_text(&encoded)
        }
    }
}

#[test]
fn fuzz_cursor() {
    replay("cursor", |bytes| {
        check_cursor_text(&String::from_utf8_lossy(bytes))
    });
    let strategy = prop_oneof![
        2 => any::<String>().prop_map(CursorCase::Text),
        2 => base64ish().prop_map(CursorCase::Text),
        1 => prop::collection::vec(any::<u8>(), 0..64).prop_map(|bytes| {
            let mut body = b"o1".to_vec();
            body.extend_from_slice(&bytes);
            CursorCase::Text(sealed(&body))
        }),
        4 => (valid_key(), prop::collection::vec(edit(), 1..4))
            .prop_map(|(key, edits)| CursorCase::Edited { key, edits }),
        2 => valid_key().prop_map(CursorCase::Key),
    ];
    fuzz("fuzz_cursor", 256, strategy, check_cursor);
}

/// Generated inputs: valid cursors, cursors edited in every way, and sealed payloads that are not cursors.
pub(super) fn generated_corpus() -> Vec<(String, Vec<u8>)> {
    let keys = [
        DocKey::new(Prefix::Features, "FEAT-001"),
        DocKey::new(Prefix::Docs, "adr/0006"),
        DocKey::new(Prefix::Notes, "café notes"),
        DocKey::new(Prefix::Notes, "日本/語"),
        DocKey::new(Prefix::Docs, "x".repeat(MAX_ID_LEN)),
    ];
    let mut files: Vec<(String, Vec<u8>)> = keys
        .iter()
        .enumerate()
        .map(|(i, key)| corpus_file(&format!("gen-valid-{i}"), cursor::encode(key)))
        .collect();
    let valid = cursor::encode(&keys[1]);
    let mut flipped = valid.clone().into_bytes();
    flipped[5] = if flipped[5] == b'A' { b'B' } else { b'A' };
    files.extend([
        corpus_file("gen-truncated", valid[..valid.len() - 2].to_owned()),
        corpus_file("gen-flipped", String::from_utf8(flipped).unwrap()),
        corpus_file("gen-appended", format!("{valid}A")),
        corpus_file("gen-padded", format!("{valid}=")),
        corpus_file("gen-doubled", format!("{valid}{valid}")),
        corpus_file(
            "gen-standard-alphabet",
            valid.replace('-', "+").replace('_', "/"),
        ),
        corpus_file("gen-too-long", "A".repeat(4097)),
        corpus_file("gen-sealed-wrong-tag", sealed(b"o2docs\0x")),
        corpus_file("gen-sealed-no-separator", sealed(b"o1docs")),
        corpus_file("gen-sealed-unknown-prefix", sealed(b"o1Docs\0x")),
        corpus_file("gen-sealed-empty-prefix", sealed(b"o1\0x")),
        corpus_file("gen-sealed-empty-id", sealed(b"o1docs\0")),
        corpus_file("gen-sealed-empty-segment", sealed(b"o1docs\0a//b")),
        corpus_file("gen-sealed-dot-segment", sealed(b"o1docs\0../x")),
        corpus_file("gen-sealed-nul-in-id", sealed(b"o1docs\0a\0b")),
        corpus_file("gen-sealed-invalid-utf8", sealed(b"o1docs\0\xff")),
        corpus_file(
            "gen-sealed-id-too-long",
            sealed(format!("o1docs\0{}", "x".repeat(MAX_ID_LEN + 1)).as_bytes()),
        ),
        corpus_file("gen-sealed-empty", sealed(b"")),
    ]);
    files
}
