//! Search words on PostgreSQL, made by orchestra rather than by PostgreSQL's parser: the words of a text as SQLite's `unicode61 remove_diacritics 2` makes them, a document's `tsvector` in PostgreSQL's binary form (made at import, or anew for every stored document by migration 0008), and a term's words as a `tsquery` operand.
//!
//! Import computes each vector on its reader threads and sends it as it is,
//! so that PostgreSQL does no text search work of its own at import (its
//! `to_tsvector` was a quarter of a cold import), and the query's words are
//! split by the same function: a term finds on PostgreSQL what it finds on
//! SQLite (`0012` finds `FEAT-0012`, `cafe` finds `Café`).

use std::cell::RefCell;
use std::error::Error;
use std::hash::BuildHasher;

use anyhow::Result;
use bytes::BytesMut;
use hashbrown::HashTable;
use postgres::Transaction;
use postgres::binary_copy::BinaryCopyInWriter;
use postgres::types::{IsNull, ToSql, Type, to_sql_checked};
use rustc_hash::FxBuildHasher;
use unicode_normalization::char::{decompose_canonical, is_combining_mark};

/// The longest lexeme PostgreSQL keeps (`MAXSTRLEN`): longer words are
/// left out, as `to_tsvector` leaves them out.
const MAX_LEXEME_BYTES: usize = 2047;
/// The last position PostgreSQL records (`MAXENTRYPOS - 1`): later words
/// are all at it.
const MAX_POSITION: u16 = (1 << 14) - 1;
/// Positions recorded per lexeme (`MAXNUMPOS`).
const MAX_POSITIONS: usize = 256;
/// The bytes of lexemes and positions a vector may hold (`MAXSTRPOS`).
const MAX_VECTOR_BYTES: usize = (1 << 20) - 1;

/// A part of a document and its weight: PostgreSQL's A (3) to D (0).
#[derive(Clone, Copy)]
pub enum Weight {
    /// The key and the title.
    A = 3,
    /// The description.
    B = 2,
    /// The body.
    D = 0,
}

/// A `tsvector` in PostgreSQL's binary form (`tsvectorsend`), ready to be
/// bound or copied: lexemes in byte order, each with its positions.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TsVector(Vec<u8>);

impl TsVector {
    /// Bytes in its binary form.
    pub fn encoded_len(&self) -> usize {
        self.0.len()
    }

    /// The vector of a document's parts, in order. Each part's words take
    /// the next positions, and one position is left free between parts, so
    /// that a phrase does not run from one part into the next (on SQLite
    /// the parts are columns).
    pub fn of(parts: &[(&str, Weight)]) -> TsVector {
        SCRATCH.with(|scratch| scratch.borrow_mut().vector(parts))
    }
}

thread_local! {
    /// Each thread's [`Scratch`]: import's reader threads make one vector
    /// after another.
    static SCRATCH: RefCell<Scratch> = RefCell::default();
}

/// What [`TsVector::of`] works in, kept from one document to the next so
/// that a word costs no allocation once the buffers have grown (with a map
/// of `String`s to `Vec`s, two allocations per distinct word, making the
/// vectors took 1.45× as long).
#[derive(Default)]
struct Scratch {
    /// The bytes of each distinct lexeme, one after another.
    arena: String,
    /// Each distinct lexeme, in the order it first occurs in (what a
    /// vector too large for PostgreSQL keeps).
    lexemes: Vec<Lexeme>,
    /// The distinct lexemes by their bytes: indexes into `lexemes`.
    table: HashTable<u32>,
    /// Every position kept, as (lexeme, weighted position), in text order.
    occurrences: Vec<(u32, u16)>,
}

/// A distinct lexeme of [`Scratch`].
#[derive(Clone, Copy)]
struct Lexeme {
    /// Where its bytes are in the arena.
    start: u32,
    len: u32,
    /// Positions kept, and the last one (without its weight).
    positions: u16,
    last: u16,
}

/// Bytes a thread keeps between documents in its arena, and again in its
/// list of positions; more (a very large document's) is given back.
const SCRATCH_KEPT_BYTES: usize = 1 << 20;

impl Scratch {
    fn vector(&mut self, parts: &[(&str, Weight)]) -> TsVector {
        self.arena.clear();
        self.lexemes.clear();
        self.table.clear();
        self.occurrences.clear();
        let mut position: u16 = 0;
        let mut word = String::new();
        for (text, weight) in parts {
            for_each_word(text, &mut word, |lexeme| {
                position = (position + 1).min(MAX_POSITION);
                let index = self.intern(lexeme);
                let found = &mut self.lexemes[index as usize];
                if usize::from(found.positions) < MAX_POSITIONS && found.last < position {
                    found.positions += 1;
                    found.last = position;
                    self.occurrences
                        .push((index, (*weight as u16) << 14 | position));
                }
            });
            position = (position + 1).min(MAX_POSITION);
        }
        let vector = self.encode();
        let positions_bytes = self.occurrences.capacity() * size_of::<(u32, u16)>();
        if self.arena.capacity().max(positions_bytes) > SCRATCH_KEPT_BYTES {
            *self = Scratch::default();
        }
        vector
    }

    /// The index of `lexeme` among the distinct lexemes, added if new.
    fn intern(&mut self, lexeme: &str) -> u32 {
        let hash = FxBuildHasher.hash_one(lexeme);
        let (arena, lexemes) = (&mut self.arena, &mut self.lexemes);
        let bytes_of = |l: &Lexeme| &arena.as_bytes()[l.start as usize..(l.start + l.len) as usize];
        if let Some(&index) = self.table.find(hash, |&i| {
            bytes_of(&lexemes[i as usize]) == lexeme.as_bytes()
        }) {
            return index;
        }
        let index = lexemes.len() as u32;
        lexemes.push(Lexeme {
            start: arena.len() as u32,
            len: lexeme.len() as u32,
            positions: 0,
            last: 0,
        });
        arena.push_str(lexeme);
        let (arena, lexemes) = (&self.arena, &self.lexemes);
        self.table.insert_unique(hash, index, |&i| {
            let l = &lexemes[i as usize];
            FxBuildHasher.hash_one(&arena[l.start as usize..(l.start + l.len) as usize])
        });
        index
    }

    /// The binary form of the lexemes found, each with its positions.
    fn encode(&self) -> TsVector {
        let text =
            |l: &Lexeme| &self.arena.as_bytes()[l.start as usize..(l.start + l.len) as usize];
        // The size of each lexeme as PostgreSQL stores it (2-byte aligned,
        // then a count and its positions): keep the first ones that fit.
        let size = |l: &Lexeme| (l.len as usize).next_multiple_of(2) + 2 + 2 * l.positions as usize;
        let mut bytes = 0;
        let kept = self
            .lexemes
            .iter()
            .take_while(|l| {
                bytes += size(l);
                bytes <= MAX_VECTOR_BYTES
            })
            .count();
        // Each kept lexeme's positions, found by where they start in one
        // list (the occurrences are in text order, so each one's positions
        // come out ascending).
        let mut starts = Vec::with_capacity(kept + 1);
        let mut total = 0;
        for l in &self.lexemes[..kept] {
            starts.push(total);
            total += l.positions as usize;
        }
        starts.push(total);
        let mut positions = vec![0u16; total];
        let mut filled = starts.clone();
        for &(index, entry) in &self.occurrences {
            if (index as usize) < kept {
                let at = &mut filled[index as usize];
                positions[*at] = entry;
                *at += 1;
            }
        }
        // PostgreSQL's order of lexemes: their bytes (`tsCompareString`).
        let mut order: Vec<u32> = (0..kept as u32).collect();
        order.sort_unstable_by(|&a, &b| {
            text(&self.lexemes[a as usize]).cmp(text(&self.lexemes[b as usize]))
        });
        let mut out = Vec::with_capacity(4 + bytes.min(MAX_VECTOR_BYTES) + 2 * kept);
        out.extend_from_slice(&(kept as i32).to_be_bytes());
        for index in order {
            let l = &self.lexemes[index as usize];
            out.extend_from_slice(text(l));
            out.push(0);
            out.extend_from_slice(&l.positions.to_be_bytes());
            for position in &positions[starts[index as usize]..starts[index as usize + 1]] {
                out.extend_from_slice(&position.to_be_bytes());
            }
        }
        TsVector(out)
    }
}

impl ToSql for TsVector {
    fn to_sql(&self, _: &Type, out: &mut BytesMut) -> Result<IsNull, Box<dyn Error + Sync + Send>> {
        out.extend_from_slice(&self.0);
        Ok(IsNull::No)
    }

    fn accepts(ty: &Type) -> bool {
        *ty == Type::TS_VECTOR
    }

    to_sql_checked!();
}

/// The search vector of a document: its key (`prefix/id`) and title
/// (weight A), its description (B), and its Markdown (D).
pub fn document_vector(
    prefix: &str,
    id: &str,
    title: &str,
    description: Option<&str>,
    markdown: &str,
) -> TsVector {
    let key = format!("{prefix}/{id}");
    TsVector::of(&[
        (&key, Weight::A),
        (title, Weight::A),
        (description.unwrap_or_default(), Weight::B),
        (markdown, Weight::D),
    ])
}

/// Makes the vector of every stored document anew (migration 0008): read
/// in pages, sent back by binary COPY into a temporary table, and written
/// by one `UPDATE`.
pub(super) fn rebuild(tx: &mut Transaction) -> Result<()> {
    let count: i64 = tx.query_one("SELECT count(*) FROM documents", &[])?.get(0);
    if count == 0 {
        return Ok(());
    }
    tracing::info!("making the search vectors of {count} documents anew");
    tx.batch_execute(
        "CREATE TEMP TABLE rebuilt_vectors (prefix text, id text, search tsvector) ON COMMIT DROP",
    )?;
    let pages = tx.bind(
        "SELECT prefix, id, title, description,
                CASE WHEN is_text THEN substring(body FROM body_start + 1) END
         FROM documents",
        &[],
    )?;
    loop {
        let rows = tx.query_portal(&pages, REBUILD_PAGE)?;
        if rows.is_empty() {
            break;
        }
        let sink = tx.copy_in("COPY rebuilt_vectors (prefix, id, search) FROM STDIN BINARY")?;
        let mut writer = BinaryCopyInWriter::new(sink, &[Type::TEXT, Type::TEXT, Type::TS_VECTOR]);
        for row in &rows {
            let (prefix, id): (&str, &str) = (row.get(0), row.get(1));
            let markdown: Option<&[u8]> = row.get(4);
            let vector = document_vector(
                prefix,
                id,
                row.get(2),
                row.get(3),
                markdown
                    .and_then(|m| std::str::from_utf8(m).ok())
                    .unwrap_or_default(),
            );
            writer.write(&[&prefix, &id, &vector])?;
        }
        writer.finish()?;
    }
    tx.batch_execute(
        "UPDATE documents d SET search = r.search FROM rebuilt_vectors r
         WHERE d.prefix = r.prefix AND d.id = r.id",
    )?;
    Ok(())
}

/// Documents per page of [`rebuild`].
const REBUILD_PAGE: i32 = 1000;

/// The words of `text`, as lexemes.
pub fn words(text: &str) -> Vec<String> {
    let mut all = Vec::new();
    for_each_word(text, &mut String::new(), |lexeme| {
        all.push(lexeme.to_string())
    });
    all
}

/// A term's words as a `tsquery` operand: a phrase (`<->`) of its words,
/// the last one a prefix (`:*`) when `prefix`, as FTS5 reads `"a b"*`.
/// `None` when the term has no words, and so matches nothing.
pub fn phrase(text: &str, prefix: bool) -> Option<String> {
    let words = words(text);
    let last = words.len().checked_sub(1)?;
    let operands: Vec<String> = words
        .iter()
        .enumerate()
        .map(|(i, word)| {
            // Quoted, `'` doubled and `\` escaped, whatever the word holds.
            let quoted = word.replace('\\', "\\\\").replace('\'', "''");
            match prefix && i == last {
                true => format!("'{quoted}':*"),
                false => format!("'{quoted}'"),
            }
        })
        .collect();
    Some(format!("({})", operands.join(" <-> ")))
}

/// Calls `found` with each word of `text` as a lexeme: a run of letters,
/// digits and combining marks (anything else separates words, as in
/// `unicode61`), lower-cased, without its diacritics (the marks of its
/// canonical decomposition), and at most [`MAX_LEXEME_BYTES`] long.
fn for_each_word(text: &str, word: &mut String, mut found: impl FnMut(&str)) {
    for_each_word_at(text, word, |_, lexeme| found(lexeme));
}

/// [`for_each_word`], with where in `text` each word is (a byte range).
pub(super) fn for_each_word_at(
    text: &str,
    word: &mut String,
    mut found: impl FnMut(std::ops::Range<usize>, &str),
) {
    word.clear();
    let mut too_long = false;
    let mut start = 0;
    let mut end = |word: &mut String, too_long: &mut bool, range: std::ops::Range<usize>| {
        if !word.is_empty() && !*too_long {
            found(range, word);
        }
        word.clear();
        *too_long = false;
    };
    for (at, c) in text.char_indices() {
        let was_empty = word.is_empty() && !too_long;
        let in_word = if c.is_ascii() {
            if c.is_ascii_alphanumeric() {
                word.push(c.to_ascii_lowercase());
                true
            } else {
                false
            }
        } else if c.is_alphanumeric() || is_combining_mark(c) {
            for lower in c.to_lowercase() {
                decompose_canonical(lower, |part| {
                    if !is_combining_mark(part) {
                        word.push(part);
                    }
                });
            }
            true
        } else {
            false
        };
        if !in_word {
            end(word, &mut too_long, start..at);
            continue;
        }
        if was_empty {
            start = at;
        }
        if word.len() > MAX_LEXEME_BYTES {
            too_long = true;
            word.clear();
        }
    }
    end(word, &mut too_long, start..text.len());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_split_and_folded_as_unicode61_does() {
        let cases: &[(&str, &[&str])] = &[
            ("Café Résumé", &["cafe", "resume"]),
            ("features/FEAT-0012", &["features", "feat", "0012"]),
            (
                "C++ v2.1 foo.bar a_b",
                &["c", "v2", "1", "foo", "bar", "a", "b"],
            ),
            ("ÉCOLE naïve Ærø", &["ecole", "naive", "ærø"]),
            // A decomposed accent is a mark inside the word, removed.
            ("cafe\u{301}", &["cafe"]),
            ("日本語 テキスト", &["日本語", "テキスト"]),
            ("", &[]),
            ("--- ...", &[]),
        ];
        for (text, expected) in cases {
            assert_eq!(&words(text), expected, "{text:?}");
        }
    }

    #[test]
    fn words_know_where_they_are() {
        let text = "# Café-au-lait, v2.1!";
        let mut found = Vec::new();
        for_each_word_at(text, &mut String::new(), |range, lexeme| {
            found.push((&text[range], lexeme.to_string()))
        });
        let expected = [
            ("Café", "cafe"),
            ("au", "au"),
            ("lait", "lait"),
            ("v2", "v2"),
            ("1", "1"),
        ];
        let expected: Vec<(&str, String)> =
            expected.iter().map(|(t, l)| (*t, l.to_string())).collect();
        assert_eq!(found, expected);
    }

    #[test]
    fn a_word_too_long_for_postgresql_is_left_out() {
        let long = "x".repeat(MAX_LEXEME_BYTES + 1);
        assert_eq!(words(&format!("a {long} b")), ["a", "b"]);
        let longest = "y".repeat(MAX_LEXEME_BYTES);
        assert_eq!(words(&longest), vec![longest]);
    }

    #[test]
    fn phrases_are_quoted_operands() {
        assert_eq!(
            phrase("FEAT-0012", false).as_deref(),
            Some("('feat' <-> '0012')")
        );
        assert_eq!(
            phrase("sign i", true).as_deref(),
            Some("('sign' <-> 'i':*)")
        );
        assert_eq!(phrase("Café", true).as_deref(), Some("('cafe':*)"));
        assert_eq!(phrase("++ --", false), None);
    }

    /// Reads a vector's binary form back: (lexeme, [(position, weight)]).
    fn read(vector: &TsVector) -> Vec<(String, Vec<(u16, u16)>)> {
        let bytes = &vector.0;
        let count = i32::from_be_bytes(bytes[..4].try_into().unwrap());
        let mut at = 4;
        let mut out = Vec::new();
        for _ in 0..count {
            let nul = bytes[at..].iter().position(|&b| b == 0).unwrap();
            let lexeme = String::from_utf8(bytes[at..at + nul].to_vec()).unwrap();
            at += nul + 1;
            let n = u16::from_be_bytes([bytes[at], bytes[at + 1]]);
            at += 2;
            let mut positions = Vec::new();
            for _ in 0..n {
                let p = u16::from_be_bytes([bytes[at], bytes[at + 1]]);
                positions.push((p & MAX_POSITION, p >> 14));
                at += 2;
            }
            out.push((lexeme, positions));
        }
        assert_eq!(at, bytes.len());
        out
    }

    #[test]
    fn a_vector_holds_sorted_lexemes_with_weighted_positions_and_a_gap_between_parts() {
        let vector = TsVector::of(&[
            ("features/FEAT-1", Weight::A),
            ("Login", Weight::A),
            ("", Weight::B),
            ("login again", Weight::D),
        ]);
        let expected = vec![
            ("1".to_string(), vec![(3, 3)]),
            ("again".to_string(), vec![(9, 0)]),
            ("feat".to_string(), vec![(2, 3)]),
            ("features".to_string(), vec![(1, 3)]),
            ("login".to_string(), vec![(5, 3), (8, 0)]),
        ];
        assert_eq!(read(&vector), expected);
    }

    #[test]
    fn positions_stop_at_postgresqls_last_and_a_lexeme_keeps_at_most_256() {
        let text = "w ".repeat(20_000);
        let vector = read(&TsVector::of(&[(&text, Weight::D)]));
        assert_eq!(vector.len(), 1);
        let positions = &vector[0].1;
        assert_eq!(positions.len(), MAX_POSITIONS);
        assert!(positions.windows(2).all(|w| w[0].0 < w[1].0));
        // Past the last position every word is at it: recorded once.
        let many: String = (0..20_000).map(|i| format!("w{i} ")).collect();
        let vector = read(&TsVector::of(&[(&many, Weight::D)]));
        let at_last = vector
            .iter()
            .filter(|(_, p)| p.iter().any(|&(pos, _)| pos == MAX_POSITION))
            .count();
        assert_eq!(at_last, 20_000 - MAX_POSITION as usize + 1);
    }

    #[test]
    fn a_vector_too_large_for_postgresql_keeps_the_words_that_come_first() {
        let many: String = (0..200_000).map(|i| format!("word{i:07} ")).collect();
        let vector = TsVector::of(&[(&many, Weight::D)]);
        let lexemes = read(&vector);
        assert!(lexemes.len() < 200_000);
        assert!(lexemes.iter().any(|(l, _)| l == "word0000000"));
        let size: usize = lexemes
            .iter()
            .map(|(l, p)| l.len().next_multiple_of(2) + 2 + 2 * p.len())
            .sum();
        assert!(size <= MAX_VECTOR_BYTES, "{size}");
    }

    #[test]
    fn a_vector_is_the_same_whatever_the_thread_made_before() {
        let parts =
            |text: &'static str| [("notes/a", Weight::A), ("", Weight::B), (text, Weight::D)];
        let small = "login again and again";
        let alone = std::thread::spawn(move || TsVector::of(&parts(small)))
            .join()
            .unwrap();
        // After a vector whose scratch space is kept grown, one whose space
        // is too large to keep, another, and the same again.
        let medium: String = (0..10_000).map(|i| format!("word{i} ")).collect();
        TsVector::of(&[(&medium, Weight::D)]);
        assert_eq!(TsVector::of(&parts(small)), alone);
        let large: String = (0..200_000).map(|i| format!("word{i} ")).collect();
        TsVector::of(&[(&large, Weight::D)]);
        TsVector::of(&parts("other words, login"));
        assert_eq!(TsVector::of(&parts(small)), alone);
        assert_eq!(TsVector::of(&parts(small)), alone);
        assert_eq!(
            read(&alone),
            vec![
                ("a".to_string(), vec![(2, 3)]),
                ("again".to_string(), vec![(6, 0), (8, 0)]),
                ("and".to_string(), vec![(7, 0)]),
                ("login".to_string(), vec![(5, 0)]),
                ("notes".to_string(), vec![(1, 3)]),
            ]
        );
    }
}
