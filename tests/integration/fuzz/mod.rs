//! Time-boxed fuzzing (proptest), after a replay of the corpora in `fuzz/corpus/`: the runner, the corpus, and the strategies the targets share.
//!
//! One module per target:
//!
//! - `uri`: `fuzz_uri`, URI parsing and formatting;
//! - `cursor`: `fuzz_cursor`, the decoding of `resources/list` cursors;
//! - `frontmatter`: `fuzz_frontmatter`, frontmatter splitting and parsing;
//! - `jsonrpc`: `fuzz_jsonrpc_lines`, the server's JSON-RPC line handling;
//! - `search`: `fuzz_search`, queries, `under` and `where` searched on a
//!   real store, and the decoding of search cursors.
//!
//! Each `fuzz_*` test first replays `fuzz/corpus/<target>/*` (one input per
//! file, raw bytes; a `jsonrpc` file is a whole session of lines, a `search`
//! file one query), then runs rounds of random cases until
//! `ORCHESTRA_FUZZ_SECONDS` (default 1, the CI smoke pass) are spent. A long
//! run:
//!
//! ```text
//! ORCHESTRA_FUZZ_SECONDS=300 cargo test --release --test integration fuzz_ -- --test-threads 1 --nocapture
//! ```
//!
//! Every run prints its seed; `ORCHESTRA_FUZZ_SEED=<seed>` replays a failure,
//! whose panic message carries the minimal failing input. Corpus files whose
//! name starts with `gen-` are written by each target's `generated_corpus`
//! when `UPDATE_CORPUS=1`; the others are hand-written data.

mod cursor;
mod frontmatter;
mod jsonrpc;
mod search;
mod uri;

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use orchestra::doc::{DocKey, Prefix, is_valid_id};
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{
    Config, RngSeed, TestCaseError, TestCaseResult, TestError, TestRunner,
};

// ---------------------------------------------------------------------------
// The runner: corpus replay, then seeded rounds until the time budget is spent.
// ---------------------------------------------------------------------------

/// A single case slower than this is a failure: a hang in the making.
const SLOW_CASE: Duration = Duration::from_secs(2);

fn budget() -> Duration {
    let seconds = std::env::var("ORCHESTRA_FUZZ_SECONDS")
        .ok()
        .map(|s| {
            s.trim()
                .parse::<f64>()
                .unwrap_or_else(|_| panic!("ORCHESTRA_FUZZ_SECONDS={s:?} is not a number"))
        })
        .unwrap_or(1.0);
    Duration::from_secs_f64(seconds.max(0.0))
}

fn base_seed() -> u64 {
    match std::env::var("ORCHESTRA_FUZZ_SEED") {
        Ok(s) => s
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("ORCHESTRA_FUZZ_SEED={s:?} is not a u64")),
        Err(_) => {
            let now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default();
            splitmix(now.as_secs() ^ u64::from(now.subsec_nanos()).rotate_left(32))
        }
    }
}

fn splitmix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Runs `check` on rounds of `per_round` cases drawn from `strategy` until
/// the budget is spent. Round 0 uses the printed seed, round `n` a seed
/// derived from it; a failure names the seed of its round, so setting
/// `ORCHESTRA_FUZZ_SEED` to it replays the failure in round 0.
fn fuzz<S>(target: &str, per_round: u32, strategy: S, check: impl Fn(S::Value) -> TestCaseResult)
where
    S: Strategy,
    S::Value: fmt::Debug,
{
    let budget = budget();
    let seed = base_seed();
    println!("{target}: seed {seed} (replay: ORCHESTRA_FUZZ_SEED={seed}), budget {budget:?}");
    let start = Instant::now();
    let mut cases: u64 = 0;
    let mut round: u64 = 0;
    loop {
        let round_seed = if round == 0 {
            seed
        } else {
            splitmix(seed ^ round)
        };
        let config = Config {
            cases: per_round,
            failure_persistence: None,
            rng_seed: RngSeed::Fixed(round_seed),
            max_shrink_time: 120_000,
            max_global_rejects: per_round * 8,
            ..Config::default()
        };
        let mut runner = TestRunner::new(config);
        match runner.run(&strategy, &check) {
            Ok(()) => {}
            Err(TestError::Fail(reason, input)) => panic!(
                "{target}: failed after {cases} passing cases; replay with ORCHESTRA_FUZZ_SEED={round_seed}\n\
                 reason: {reason}\nminimal failing input: {input:#?}"
            ),
            Err(TestError::Abort(reason)) => {
                panic!("{target}: aborted (ORCHESTRA_FUZZ_SEED={round_seed}): {reason}")
            }
        }
        cases += u64::from(per_round);
        round += 1;
        if start.elapsed() >= budget {
            break;
        }
    }
    let elapsed = start.elapsed();
    println!(
        "{target}: {cases} cases in {elapsed:.2?} ({:.0} cases/s), seed {seed}",
        cases as f64 / elapsed.as_secs_f64()
    );
}

fn corpus_dir(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target)
}

/// Every file of the target's corpus, sorted by name. With `UPDATE_CORPUS`
/// set, the generated files are written first.
fn corpus(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = corpus_dir(target);
    if std::env::var_os("UPDATE_CORPUS").is_some() {
        std::fs::create_dir_all(&dir).unwrap();
        for (name, bytes) in generated_corpus(target) {
            assert!(name.starts_with("gen-"), "{name}");
            std::fs::write(dir.join(&name), bytes).unwrap();
        }
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read the corpus {}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.is_file())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "empty corpus {}", dir.display());
    files
        .into_iter()
        .map(|path| {
            let bytes = std::fs::read(&path).unwrap();
            (path, bytes)
        })
        .collect()
}

/// Checks every corpus input; a failure names the file.
fn replay(target: &str, check: impl Fn(&[u8]) -> TestCaseResult) {
    let files = corpus(target);
    let start = Instant::now();
    for (path, bytes) in &files {
        if let Err(e) = check(bytes) {
            panic!(
                "{target}: corpus file {} fails: {e}\ninput: {:?}",
                path.display(),
                String::from_utf8_lossy(bytes)
            );
        }
    }
    println!(
        "{target}: replayed {} corpus files in {:.2?}",
        files.len(),
        start.elapsed()
    );
}

fn timed<T>(what: &str, f: impl FnOnce() -> T) -> Result<T, TestCaseError> {
    let start = Instant::now();
    let value = f();
    let elapsed = start.elapsed();
    if elapsed > SLOW_CASE {
        return Err(TestCaseError::fail(format!("{what} took {elapsed:?}")));
    }
    Ok(value)
}

// ---------------------------------------------------------------------------
// Generated corpus files (UPDATE_CORPUS=1).
// ---------------------------------------------------------------------------

/// The generated files of a target's corpus, by name.
fn generated_corpus(target: &str) -> Vec<(String, Vec<u8>)> {
    match target {
        "uri" => uri::generated_corpus(),
        "cursor" => cursor::generated_corpus(),
        "frontmatter" => frontmatter::generated_corpus(),
        "jsonrpc" => jsonrpc::generated_corpus(),
        "search" => search::generated_corpus(),
        _ => Vec::new(),
    }
}

/// A corpus file of text.
fn corpus_file(name: &str, text: String) -> (String, Vec<u8>) {
    (name.to_owned(), text.into_bytes())
}

// ---------------------------------------------------------------------------
// Shared strategies.
// ---------------------------------------------------------------------------

fn prefix() -> impl Strategy<Value = Prefix> {
    prop::sample::select(Prefix::ALL.to_vec())
}

fn string_of(
    chars: impl Strategy<Value = char> + 'static,
    len: std::ops::Range<usize>,
) -> BoxedStrategy<String> {
    prop::collection::vec(chars, len)
        .prop_map(String::from_iter)
        .boxed()
}

/// Any valid id: segments of arbitrary unicode (controls, `%`, `/` and NUL
/// included), filtered by `is_valid_id`.
fn valid_id() -> impl Strategy<Value = String> {
    let segment = prop_oneof![
        6 => string_of(any::<char>(), 1..12),
        3 => string_of(
            prop::sample::select("abzAZ09-._~%/?#[]@!$&'()*+,;= é\u{0}\u{7f}\u{feff}日🎻".chars().collect::<Vec<_>>()),
            1..10
        ),
        1 => prop::sample::select(vec![".", "..", "...", ".x", "x."]).prop_map(String::from),
        1 => string_of(any::<char>(), 200..257),
    ];
    prop::collection::vec(segment, 1..6)
        .prop_map(|segments| segments.join("/"))
        .prop_filter("valid id", |id| is_valid_id(id))
}

fn valid_key() -> impl Strategy<Value = DocKey> {
    (prefix(), valid_id()).prop_map(|(prefix, id)| DocKey::new(prefix, id))
}

/// Percent-encodes every byte of `c`, in upper or lower case hex.
fn escape_char(c: char, lower: bool) -> String {
    let mut buf = [0; 4];
    c.encode_utf8(&mut buf)
        .bytes()
        .map(|b| {
            if lower {
                format!("%{b:02x}")
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// URI-shaped strings: a scheme, a prefix, and a path of pchars, escapes,
/// slashes and characters that must not appear raw.
fn uri_like() -> impl Strategy<Value = String> {
    let scheme = prop_oneof![
        6 => Just("orchestra://".to_owned()),
        1 => prop::sample::select(vec![
            "ORCHESTRA://", "OrChEsTrA://", "orchestra:/", "orchestra:", "orchestras://",
            "http://", "", "//", "1x://", "orchestra:///",
        ])
        .prop_map(String::from),
    ];
    let prefix = prop_oneof![
        8 => prop::sample::select(vec!["docs/", "features/", "notes/"]).prop_map(String::from),
        1 => prop::sample::select(vec!["docs", "Docs/", "doc/", "%64ocs/", "", "notes?/", "docs#/"])
            .prop_map(String::from),
    ];
    let alphabet: Vec<char> = "ABCXYZabcxyz0189%-._~!$&'()*+,;=:@/ ?#é\u{0}"
        .chars()
        .collect();
    let token = prop_oneof![
        12 => string_of(prop::sample::select(alphabet), 1..4),
        4 => "%[0-9A-Fa-f]{2}",
        3 => (any::<char>(), any::<bool>()).prop_map(|(c, lower)| escape_char(c, lower)),
        2 => prop::sample::select(vec!["/", ".", "..", "%2E", "%2e%2E", "%2F", "%2f", "%00", "%", "%zz", "%C3", "%FF"])
            .prop_map(String::from),
        1 => any::<char>().prop_map(String::from),
    ];
    let path = prop::collection::vec(token, 0..24).prop_map(|tokens| tokens.concat());
    (scheme, prefix, path).prop_map(|(s, p, path)| format!("{s}{p}{path}"))
}

// ---------------------------------------------------------------------------
// Cursor-shaped strings, shared by the cursor targets.
// ---------------------------------------------------------------------------

/// One edit of a string, at a position chosen by proptest.
#[derive(Debug, Clone)]
enum Edit {
    Replace(Index, char),
    Insert(Index, char),
    Delete(Index),
}

/// An edit with a character of the base64url alphabet, mostly.
fn edit() -> impl Strategy<Value = Edit> {
    let c = prop_oneof![
        4 => prop::sample::select(
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".chars().collect::<Vec<_>>()
        ),
        1 => prop::sample::select("+/= \n\0é".chars().collect::<Vec<_>>()),
        1 => any::<char>(),
    ];
    prop_oneof![
        (any::<Index>(), c.clone()).prop_map(|(at, c)| Edit::Replace(at, c)),
        (any::<Index>(), c).prop_map(|(at, c)| Edit::Insert(at, c)),
        any::<Index>().prop_map(Edit::Delete),
    ]
}

/// `text` with `edits` applied in order, positions taken modulo its length.
fn apply_edits(text: &str, edits: &[Edit]) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    for edit in edits {
        match *edit {
            Edit::Replace(at, c) if !chars.is_empty() => {
                let at = at.index(chars.len());
                chars[at] = c;
            }
            Edit::Insert(at, c) => {
                let at = at.index(chars.len() + 1);
                chars.insert(at, c);
            }
            Edit::Delete(at) if !chars.is_empty() => {
                let at = at.index(chars.len());
                chars.remove(at);
            }
            _ => {}
        }
    }
    chars.into_iter().collect()
}

/// `body` and its checksum, in base64url: a cursor whose checksum holds.
fn sealed(body: &[u8]) -> String {
    let mut payload = body.to_vec();
    payload.extend_from_slice(&blake3::hash(body).as_bytes()[..4]);
    URL_SAFE_NO_PAD.encode(payload)
}

/// Strings of the base64 alphabets and padding.
fn base64ish() -> BoxedStrategy<String> {
    string_of(
        prop::sample::select(
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_+/="
                .chars()
                .collect::<Vec<_>>(),
        ),
        0..80,
    )
}
