//! Time-boxed fuzzing (proptest) of URI parsing and formatting, cursor decoding, frontmatter splitting and parsing, and the server's JSON-RPC line handling, after a replay of the corpora in `fuzz/corpus/`.
//!
//! Each `fuzz_*` test first replays `fuzz/corpus/<target>/*` (one input per
//! file, raw bytes; a `jsonrpc` file is a whole session of lines), then runs
//! rounds of random cases until `ORCHESTRA_FUZZ_SECONDS` (default 1, the CI
//! smoke pass) are spent. A long run:
//!
//! ```text
//! ORCHESTRA_FUZZ_SECONDS=300 cargo test --release --test integration fuzz_ -- --test-threads 1 --nocapture
//! ```
//!
//! Every run prints its seed; `ORCHESTRA_FUZZ_SEED=<seed>` replays a failure,
//! whose panic message carries the minimal failing input. Corpus files whose
//! name starts with `gen-` are written by [`generated_corpus`] when
//! `UPDATE_CORPUS=1`; the others are hand-written data.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use orchestra::doc::{DocKey, MAX_ID_LEN, Prefix, is_valid_id};
use orchestra::store::{ChangeBatch, FileStat, NewDocument, Store};
use orchestra::{cursor, frontmatter, mcp, uri};
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{
    Config, RngSeed, TestCaseError, TestCaseResult, TestError, TestRunner,
};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

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

fn sealed(body: &[u8]) -> String {
    let mut payload = body.to_vec();
    payload.extend_from_slice(&blake3::hash(body).as_bytes()[..4]);
    URL_SAFE_NO_PAD.encode(payload)
}

/// The `C->S` lines of a golden wire log.
fn wire_requests(log: &str) -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/wire")
        .join(log);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    text.lines()
        .filter_map(|line| line.strip_prefix("C->S "))
        .map(str::to_owned)
        .collect()
}

fn generated_corpus(target: &str) -> Vec<(String, Vec<u8>)> {
    let text = |name: &str, s: String| (name.to_owned(), s.into_bytes());
    match target {
        "uri" => vec![
            text(
                "gen-too-long",
                format!("orchestra://docs/{}", "a".repeat(uri::MAX_URI_LEN)),
            ),
            text(
                "gen-id-longest",
                format!("orchestra://docs/{}", "a".repeat(MAX_ID_LEN)),
            ),
            text(
                "gen-id-too-long",
                format!("orchestra://docs/{}", "a".repeat(MAX_ID_LEN + 1)),
            ),
            text(
                "gen-id-too-long-escaped",
                format!("orchestra://docs/{}", "%61".repeat(MAX_ID_LEN + 1)),
            ),
            text(
                "gen-id-longest-escaped",
                uri::format(&DocKey::new(Prefix::Notes, "é".repeat(MAX_ID_LEN / 2))),
            ),
        ],
        "cursor" => {
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
                .map(|(i, key)| text(&format!("gen-valid-{i}"), cursor::encode(key)))
                .collect();
            let valid = cursor::encode(&keys[1]);
            let mut flipped = valid.clone().into_bytes();
            flipped[5] = if flipped[5] == b'A' { b'B' } else { b'A' };
            files.extend([
                text("gen-truncated", valid[..valid.len() - 2].to_owned()),
                text("gen-flipped", String::from_utf8(flipped).unwrap()),
                text("gen-appended", format!("{valid}A")),
                text("gen-padded", format!("{valid}=")),
                text("gen-doubled", format!("{valid}{valid}")),
                text(
                    "gen-standard-alphabet",
                    valid.replace('-', "+").replace('_', "/"),
                ),
                text("gen-too-long", "A".repeat(4097)),
                text("gen-sealed-wrong-tag", sealed(b"o2docs\0x")),
                text("gen-sealed-no-separator", sealed(b"o1docs")),
                text("gen-sealed-unknown-prefix", sealed(b"o1Docs\0x")),
                text("gen-sealed-empty-prefix", sealed(b"o1\0x")),
                text("gen-sealed-empty-id", sealed(b"o1docs\0")),
                text("gen-sealed-empty-segment", sealed(b"o1docs\0a//b")),
                text("gen-sealed-dot-segment", sealed(b"o1docs\0../x")),
                text("gen-sealed-nul-in-id", sealed(b"o1docs\0a\0b")),
                text("gen-sealed-invalid-utf8", sealed(b"o1docs\0\xff")),
                text(
                    "gen-sealed-id-too-long",
                    sealed(format!("o1docs\0{}", "x".repeat(MAX_ID_LEN + 1)).as_bytes()),
                ),
                text("gen-sealed-empty", sealed(b"")),
            ]);
            files
        }
        "frontmatter" => {
            // Ten levels of ten aliases each: 10^10 nodes if expanded.
            let mut laughs = String::from("---\na0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
            for i in 1..10 {
                let refs = vec![format!("*a{}", i - 1); 10].join(", ");
                laughs.push_str(&format!("a{i}: &a{i} [{refs}]\n"));
            }
            laughs.push_str("title: *a9\n---\n# Laughs\n");
            // Past the parser's recursion limit (128), yet small: the YAML
            // scanner is quadratic in the depth of flow collections.
            let depth = 2_000;
            vec![
                text("gen-billion-laughs.md", laughs),
                text(
                    "gen-deep-flow-sequence.md",
                    format!("---\na: {}{}\n---\n", "[".repeat(depth), "]".repeat(depth)),
                ),
                text(
                    "gen-deep-flow-mapping.md",
                    format!(
                        "---\na: {}{}\n---\n",
                        "{a: ".repeat(depth),
                        "}".repeat(depth)
                    ),
                ),
                text(
                    "gen-deep-block-sequence.md",
                    format!(
                        "---\na:\n{}\n---\n",
                        (0..300)
                            .map(|i| format!("{}- ", " ".repeat(i * 2)))
                            .collect::<Vec<_>>()
                            .join("\n")
                    ),
                ),
                text(
                    "gen-many-fences.md",
                    "```\n# in\n```\n".repeat(2000) + "# Out\n",
                ),
                text("gen-long-line.md", format!("# {}\n", "x".repeat(100_000))),
                text(
                    "gen-many-dashes.md",
                    format!("---\n{}", "--\n".repeat(10_000)),
                ),
            ]
        }
        "jsonrpc" => {
            let depth = 10_000;
            let mut files: Vec<(String, Vec<u8>)> = ["handshake", "stateless", "mixed"]
                .iter()
                .map(|log| {
                    let mut lines = wire_requests(&format!("{log}.log")).join("\n");
                    lines.push('\n');
                    text(&format!("gen-wire-{log}.session"), lines)
                })
                .collect();
            files.extend([
                text(
                    "gen-deep-array.session",
                    format!("{}{}\n", "[".repeat(depth), "]".repeat(depth)),
                ),
                text(
                    "gen-deep-array-unclosed.session",
                    format!("{}\n", "[".repeat(depth)),
                ),
                text(
                    "gen-deep-object.session",
                    format!("{}null{}\n", "{\"a\":".repeat(depth), "}".repeat(depth)),
                ),
                text(
                    "gen-deep-params.session",
                    format!(
                        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"resources/read\",\"params\":{{\"uri\":{}{}}}}}\n\
                         {{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\",\"params\":{{\"a\":{}{}}}}}\n",
                        "[".repeat(depth),
                        "]".repeat(depth),
                        "[".repeat(120),
                        "]".repeat(120),
                    ),
                ),
                text(
                    "gen-many-requests.session",
                    (0..300)
                        .map(|i| {
                            format!(
                                "{{\"jsonrpc\":\"2.0\",\"id\":{i},\"method\":\"resources/list\"}}\n"
                            )
                        })
                        .collect(),
                ),
            ]);
            files
        }
        _ => Vec::new(),
    }
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
// URI.
// ---------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------
// Cursor.
// ---------------------------------------------------------------------------

#[derive(Debug, Clone)]
enum Edit {
    Replace(Index, char),
    Insert(Index, char),
    Delete(Index),
}

#[derive(Debug, Clone)]
enum CursorCase {
    Text(String),
    Edited { key: DocKey, edits: Vec<Edit> },
    Key(DocKey),
}

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
    let base64ish = string_of(
        prop::sample::select(
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_+/="
                .chars()
                .collect::<Vec<_>>(),
        ),
        0..80,
    );
    let strategy = prop_oneof![
        2 => any::<String>().prop_map(CursorCase::Text),
        2 => base64ish.prop_map(CursorCase::Text),
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

// ---------------------------------------------------------------------------
// Frontmatter.
// ---------------------------------------------------------------------------

/// The frontmatter rules of `src/frontmatter.rs`, restated line by line:
/// the byte offsets of the yaml and of the body, if the text has a block.
fn reference_split(text: &str) -> Option<(std::ops::Range<usize>, usize)> {
    let start = if text.starts_with('\u{FEFF}') { 3 } else { 0 };
    let is_marker = |line: &str, marker: &str| {
        let line = line.strip_suffix('\n').unwrap_or(line);
        let line = line.strip_suffix('\r').unwrap_or(line);
        line.trim_end_matches([' ', '\t']) == marker
    };
    let mut lines = text[start..].split_inclusive('\n');
    let first = lines.next()?;
    if !first.ends_with('\n') || !is_marker(first, "---") {
        return None;
    }
    let yaml_start = start + first.len();
    let mut pos = yaml_start;
    for line in lines {
        if is_marker(line, "---") || is_marker(line, "...") {
            return Some((yaml_start..pos, pos + line.len()));
        }
        pos += line.len();
    }
    None
}

/// Where `part` lies inside `whole`, if it is a slice of it.
fn offset_in(whole: &str, part: &str) -> Option<usize> {
    let start = (part.as_ptr() as usize).checked_sub(whole.as_ptr() as usize)?;
    (start + part.len() <= whole.len()).then_some(start)
}

fn check_frontmatter(text: &str) -> TestCaseResult {
    let split = timed("frontmatter::split", || frontmatter::split(text))?;
    let expected = reference_split(text);
    match (split, &expected) {
        (None, None) => {}
        (Some((yaml, body)), Some((yaml_range, body_start))) => {
            let yaml_at = offset_in(text, yaml);
            let body_at = offset_in(text, body);
            prop_assert!(
                yaml_at.is_some() && body_at.is_some(),
                "split returned slices that are not in the input"
            );
            prop_assert_eq!(
                (
                    yaml_at.unwrap()..yaml_at.unwrap() + yaml.len(),
                    body_at.unwrap()
                ),
                (yaml_range.clone(), *body_start),
                "split disagrees with the rules: yaml {:?}, body {:?}",
                yaml,
                body
            );
            prop_assert_eq!(
                body_at.unwrap() + body.len(),
                text.len(),
                "body is not a suffix"
            );
            let after_bom = text.strip_prefix('\u{FEFF}').unwrap_or(text);
            prop_assert!(after_bom.starts_with("---"));
        }
        (got, want) => {
            prop_assert!(
                false,
                "split gives {:?}, the rules give {:?}",
                got,
                want.as_ref()
                    .map(|(yaml, body)| (&text[yaml.clone()], &text[*body..]))
            );
        }
    }
    let extracted = timed("frontmatter::extract", || frontmatter::extract(text))?;
    let has_block = expected.is_some();
    if extracted.frontmatter.is_some() || extracted.warning.is_some() {
        prop_assert!(
            has_block,
            "frontmatter or warning without a block: {:?}",
            extracted
        );
    }
    if has_block {
        prop_assert!(
            extracted.frontmatter.is_some() != extracted.warning.is_some(),
            "a block must give frontmatter xor a warning: {:?}",
            extracted
        );
    }
    if let Some(frontmatter) = &extracted.frontmatter {
        prop_assert!(frontmatter.is_object(), "{:?}", frontmatter);
    }
    if let Some(warning) = &extracted.warning {
        prop_assert!(
            warning.starts_with("malformed frontmatter: "),
            "{:?}",
            warning
        );
    }
    for field in [&extracted.title, &extracted.description]
        .into_iter()
        .flatten()
    {
        prop_assert!(
            !field.is_empty() && field.trim() == field,
            "untrimmed title or description {:?}",
            field
        );
    }
    Ok(())
}

/// Markdown-ish text built from the fragments frontmatter and headings are
/// made of.
fn markdownish() -> impl Strategy<Value = String> {
    let fragment = prop_oneof![
        6 => prop::sample::select(vec![
            "---", "--- ", "---\t", "...", "----", "-- -", "# ", "#", "## ", "```", "~~~", "````",
            "title: x", "title: ", "description: y", "title: 'a'", "title: \"b\\n\"", "title: 1",
            "title: true", "title: [a]", "title: {a: 1}", "\n", "\n", "\n", "\r\n", "\r",
            "\u{FEFF}", ": ", "- ", "[", "]", "{", "}", "&a ", "*a", "!", "!!str ", "|", ">",
            "'", "\"", " ", "  ", "\t", "a", "é", "%YAML 1.2", "? ", "<<: *a", "~", "null", "\0",
            ",", "#!", "\\", "a: &a [x, *a]",
        ])
        .prop_map(String::from),
        1 => "[a-z ]{1,6}",
        1 => any::<char>().prop_map(String::from),
    ];
    let fragments = || prop::collection::vec(fragment.clone(), 0..30).prop_map(|f| f.concat());
    prop_oneof![
        2 => fragments(),
        3 => (
            prop::sample::select(vec!["---\n", "---\r\n", "\u{FEFF}---\n", "--- \n"]),
            fragments(),
            prop::sample::select(vec!["\n---\n", "\n...\n", "\r\n---\r\n", "\n---", "\n--- \t\n", ""]),
            fragments(),
        )
            .prop_map(|(open, yaml, close, body)| format!("{open}{yaml}{close}{body}")),
    ]
}

#[test]
fn fuzz_frontmatter() {
    replay("frontmatter", |bytes| {
        check_frontmatter(&String::from_utf8_lossy(bytes))
    });
    let strategy = prop_oneof![
        1 => any::<String>(),
        4 => markdownish(),
    ];
    fuzz("fuzz_frontmatter", 128, strategy, |text: String| {
        check_frontmatter(&text)
    });
}

// ---------------------------------------------------------------------------
// JSON-RPC lines.
// ---------------------------------------------------------------------------

/// The last line of every session.
const LAST: &str = r#"{"jsonrpc":"2.0","id":"last","method":"ping"}"#;
/// A session that runs longer than this hangs.
const SESSION_TIMEOUT: Duration = Duration::from_secs(5);
const CODES: [i64; 7] = [-32700, -32600, -32601, -32602, -32603, -32002, -32022];

const METHODS: [&str; 16] = [
    "initialize",
    "ping",
    "notifications/initialized",
    "notifications/cancelled",
    "resources/list",
    "resources/read",
    "resources/templates/list",
    "resources/subscribe",
    "resources/unsubscribe",
    "subscriptions/listen",
    "completion/complete",
    "server/discover",
    "tools/list",
    "",
    "test/panic",
    "logging/setLevel",
];

/// Lines of one session, printed readably when a case fails.
#[derive(Clone)]
struct Session(Vec<Vec<u8>>);

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|line| String::from_utf8_lossy(line)))
            .finish()
    }
}

#[derive(Debug, Clone, Copy)]
enum IdKind {
    None,
    Int,
    Str,
    Big,
    Negative,
}

/// A distinct id for line `i`.
fn id_for(kind: IdKind, i: usize) -> Option<Value> {
    let i = i as u64;
    match kind {
        IdKind::None => None,
        IdKind::Int => Some(json!(i)),
        IdKind::Str => Some(json!(format!("r{i}"))),
        IdKind::Big => Some(json!(u64::MAX - i)),
        IdKind::Negative => Some(json!(-1 - i as i64)),
    }
}

#[derive(Debug, Clone)]
enum LineSpec {
    Bytes(Vec<u8>),
    Json(Value),
    Request {
        jsonrpc: Value,
        id: IdKind,
        method: String,
        params: Option<Value>,
    },
    Wire {
        line: String,
        id: IdKind,
        edits: Vec<(Index, u8, u8)>,
    },
    Special(&'static str),
}

impl LineSpec {
    fn bytes(self, i: usize) -> Vec<u8> {
        match self {
            LineSpec::Bytes(bytes) => bytes,
            LineSpec::Json(value) => value.to_string().into_bytes(),
            LineSpec::Request {
                jsonrpc,
                id,
                method,
                params,
            } => {
                let mut map = serde_json::Map::new();
                map.insert("jsonrpc".into(), jsonrpc);
                if let Some(id) = id_for(id, i) {
                    map.insert("id".into(), id);
                }
                map.insert("method".into(), Value::String(method));
                if let Some(params) = params {
                    map.insert("params".into(), params);
                }
                Value::Object(map).to_string().into_bytes()
            }
            LineSpec::Wire { line, id, edits } => {
                let mut value: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
                if let (Some(map), Some(id)) = (value.as_object_mut(), id_for(id, i))
                    && map.contains_key("id")
                {
                    map.insert("id".into(), id);
                }
                let mut bytes = value.to_string().into_bytes();
                for (at, op, byte) in edits {
                    match op % 4 {
                        // Flip one bit, keep the line a line.
                        0 if !bytes.is_empty() => {
                            let at = at.index(bytes.len());
                            bytes[at] ^= 1 << (byte % 8);
                            if bytes[at] == b'\n' {
                                bytes[at] = b'\r';
                            }
                        }
                        1 => {
                            let at = at.index(bytes.len() + 1);
                            bytes.insert(at, if byte == b'\n' { 0 } else { byte });
                        }
                        2 if !bytes.is_empty() => {
                            bytes.remove(at.index(bytes.len()));
                        }
                        3 => {
                            bytes.truncate(at.index(bytes.len() + 1));
                        }
                        _ => {}
                    }
                }
                bytes
            }
            LineSpec::Special(s) => match s {
                "deep-array" => format!("{}{}", "[".repeat(10_000), "]".repeat(10_000)).into_bytes(),
                "deep-object" => {
                    format!("{}1{}", "{\"a\":".repeat(10_000), "}".repeat(10_000)).into_bytes()
                }
                "deep-params" => format!(
                    r#"{{"jsonrpc":"2.0","id":"deep{i}","method":"resources/read","params":{{"uri":{}"x"{}}}}}"#,
                    "[".repeat(3000),
                    "]".repeat(3000)
                )
                .into_bytes(),
                other => other.as_bytes().to_vec(),
            },
        }
    }
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        "\\PC{0,8}".prop_map(Value::from),
        any::<String>().prop_map(Value::from),
        prop::sample::select(vec![
            "2.0",
            "ping",
            "orchestra://docs/adr/0006",
            "2026-07-28",
            "2025-11-25",
            "last",
            "",
        ])
        .prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        let key = prop_oneof![
            3 => prop::sample::select(vec![
                "jsonrpc", "id", "method", "params", "result", "error", "_meta", "uri", "cursor",
                "protocolVersion", "notifications", "requestId", "ref", "argument",
            ])
            .prop_map(String::from),
            1 => "\\PC{0,6}",
        ];
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(key, inner, 0..6)
                .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

/// Request params: mostly well-formed pieces, sometimes anything.
fn params() -> impl Strategy<Value = Option<Value>> {
    let keys = [
        DocKey::new(Prefix::Features, "FEAT-001"),
        DocKey::new(Prefix::Features, "FEAT-002"),
        DocKey::new(Prefix::Docs, "adr/0006"),
        DocKey::new(Prefix::Notes, "café notes"),
        DocKey::new(Prefix::Docs, "bin"),
    ];
    let uri = prop_oneof![
        3 => prop::sample::select(keys.iter().map(uri::format).collect::<Vec<_>>()),
        3 => uri_like(),
        1 => any::<String>(),
    ]
    .prop_map(Value::String);
    let cursor = prop_oneof![
        3 => prop::sample::select(keys.iter().map(cursor::encode).collect::<Vec<_>>()),
        1 => "[A-Za-z0-9_-]{0,30}",
        1 => any::<String>(),
    ]
    .prop_map(Value::String);
    let meta = prop_oneof![
        4 => Just(json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        })),
        1 => Just(json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28"})),
        1 => Just(json!({
            "io.modelcontextprotocol/protocolVersion": "2099-01-01",
            "io.modelcontextprotocol/clientCapabilities": {},
        })),
        1 => json_value().prop_map(|v| json!({"io.modelcontextprotocol/protocolVersion": v})),
        1 => json_value(),
    ];
    let field = prop_oneof![
        4 => uri.clone().prop_map(|v| ("uri", v)),
        2 => cursor.prop_map(|v| ("cursor", v)),
        4 => meta.prop_map(|v| ("_meta", v)),
        1 => prop::sample::select(vec!["2025-11-25", "2024-11-05", "1999-01-01", "2026-07-28"])
            .prop_map(|v| ("protocolVersion", json!(v))),
        1 => Just(("capabilities", json!({}))),
        1 => Just(("clientInfo", json!({"name": "fuzz", "version": "1"}))),
        2 => prop::sample::select(vec![
            "orchestra://features/{+id}", "orchestra://docs/{+id}", "orchestra://notes/{+id}",
            "orchestra://x/{+id}",
        ])
        .prop_map(|t| ("ref", json!({"type": "ref/resource", "uri": t}))),
        2 => ("\\PC{0,10}", prop::sample::select(vec!["id", "x"]))
            .prop_map(|(v, name)| ("argument", json!({"name": name, "value": v}))),
        2 => (prop::collection::vec(uri, 0..4), prop::option::of(any::<bool>()))
            .prop_map(|(uris, changed)| {
                let mut asked = json!({"resourceSubscriptions": uris});
                if let Some(changed) = changed {
                    asked["resourcesListChanged"] = json!(changed);
                }
                ("notifications", asked)
            }),
        1 => prop::sample::select(vec!["r0", "r1", "r2", "r3"]).prop_map(|id| ("requestId", json!(id))),
        1 => (0u64..8).prop_map(|id| ("requestId", json!(id))),
        1 => json_value().prop_map(|v| ("uri", v)),
        1 => json_value().prop_map(|v| ("cursor", v)),
    ];
    prop_oneof![
        1 => Just(None),
        6 => prop::collection::vec(field, 0..5).prop_map(|fields| {
            Some(Value::Object(
                fields.into_iter().map(|(k, v)| (k.to_owned(), v)).collect(),
            ))
        }),
        1 => json_value().prop_map(Some),
    ]
}

fn line_spec(wire: Vec<String>) -> impl Strategy<Value = LineSpec> {
    let id = prop_oneof![
        1 => Just(IdKind::None),
        4 => Just(IdKind::Int),
        3 => Just(IdKind::Str),
        1 => Just(IdKind::Big),
        1 => Just(IdKind::Negative),
    ];
    let method = prop_oneof![
        8 => prop::sample::select(METHODS.to_vec()).prop_map(String::from),
        1 => "\\PC{0,12}",
    ];
    let jsonrpc = prop_oneof![
        12 => Just(json!("2.0")),
        1 => json_value(),
    ];
    let bytes = prop::collection::vec(any::<u8>(), 0..48).prop_map(|mut bytes| {
        bytes.retain(|&b| b != b'\n');
        bytes
    });
    let edits = prop::collection::vec((any::<Index>(), any::<u8>(), any::<u8>()), 0..4);
    prop_oneof![
        2 => bytes.prop_map(LineSpec::Bytes),
        2 => json_value().prop_map(LineSpec::Json),
        8 => (jsonrpc, id.clone(), method, params()).prop_map(|(jsonrpc, id, method, params)| {
            LineSpec::Request { jsonrpc, id, method, params }
        }),
        4 => (prop::sample::select(wire), id, edits)
            .prop_map(|(line, id, edits)| LineSpec::Wire { line, id, edits }),
        1 => prop::sample::select(vec![
            "", "\r", " \t ", "\0", "\0\0\0", "[]", "[1]", "{}", "null", "deep-array",
            "deep-object", "deep-params", "\u{FEFF}{}", "\u{1b}[0m", "{\"jsonrpc\":\"2.0\"",
        ])
        .prop_map(LineSpec::Special),
    ]
}

fn session() -> impl Strategy<Value = Session> {
    let mut wire: Vec<String> = ["handshake.log", "stateless.log", "mixed.log"]
        .iter()
        .flat_map(|log| wire_requests(log))
        .collect();
    wire.sort();
    wire.dedup();
    prop::collection::vec(line_spec(wire), 0..10).prop_map(|specs| {
        Session(
            specs
                .into_iter()
                .enumerate()
                .map(|(i, spec)| spec.bytes(i))
                .collect(),
        )
    })
}

/// The server under fuzz: a store of a few documents, shared by every
/// session of a target (sessions only read), and a runtime.
struct Server {
    _dir: tempfile::TempDir,
    store: Store,
    runtime: tokio::runtime::Runtime,
    /// Kept so the sessions' change feed stays open.
    publish: tokio::sync::broadcast::Sender<Arc<ChangeBatch>>,
}

impl Server {
    fn new() -> Server {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_or_create(&dir.path().join("fuzz.db")).unwrap();
        let tx = store.begin_import("/fuzz", false).unwrap();
        let docs: [(Prefix, &str, &[u8]); 5] = [
            (Prefix::Features, "FEAT-001", b"# One\n"),
            (Prefix::Features, "FEAT-002", b"---\ntitle: Two\n---\n"),
            (Prefix::Notes, "café notes", "# Café\n".as_bytes()),
            (Prefix::Docs, "adr/0006", b"# ADR\n"),
            (Prefix::Docs, "bin", b"\xff\xfe raw"),
        ];
        for (prefix, id, body) in docs {
            tx.put(&NewDocument {
                key: DocKey::new(prefix, id),
                stat: FileStat {
                    size: body.len() as u64,
                    mtime_ns: 1_767_225_600_000_000_000,
                    hash: *blake3::hash(body).as_bytes(),
                },
                is_text: std::str::from_utf8(body).is_ok(),
                title: format!("Title of {id}"),
                description: None,
                frontmatter: None,
                body: body.to_vec(),
            })
            .unwrap();
        }
        tx.commit(true).unwrap();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let (publish, _) = tokio::sync::broadcast::channel(4);
        Server {
            _dir: dir,
            store,
            runtime,
            publish,
        }
    }

    /// Feeds `input` to a fresh session, closes it, and returns what the
    /// server wrote and how it ended.
    fn run(&self, input: Vec<u8>) -> Result<(Vec<u8>, anyhow::Result<()>), String> {
        let store = self.store.clone();
        let changes = self.publish.subscribe();
        self.runtime.block_on(async move {
            let (client, server) = tokio::io::duplex(64 * 1024);
            let (server_read, server_write) = tokio::io::split(server);
            let serve = tokio::spawn(mcp::serve(
                store,
                mcp::Config { page_size: 2 },
                server_read,
                server_write,
                changes,
                std::future::pending(),
            ));
            let (mut client_read, mut client_write) = tokio::io::split(client);
            let writer = tokio::spawn(async move {
                client_write.write_all(&input).await?;
                client_write.shutdown().await
            });
            let exchange = async {
                let mut output = Vec::new();
                client_read
                    .read_to_end(&mut output)
                    .await
                    .map_err(|e| e.to_string())?;
                let served = serve
                    .await
                    .map_err(|e| format!("the server task failed: {e}"))?;
                writer
                    .await
                    .map_err(|e| e.to_string())?
                    .map_err(|e| format!("cannot write the input: {e}"))?;
                Ok((output, served))
            };
            match tokio::time::timeout(SESSION_TIMEOUT, exchange).await {
                Ok(result) => result,
                Err(_) => Err(format!(
                    "the session did not end within {SESSION_TIMEOUT:?}"
                )),
            }
        })
    }
}

/// Whether the server must use `id` as the `id` of a response (a string or an integer).
fn is_valid_id_value(id: &Value) -> bool {
    match id {
        Value::String(_) => true,
        Value::Number(n) => n.is_i64() || n.is_u64(),
        _ => false,
    }
}

/// What the input asks of the server, per id: how many lines carry the id,
/// and how many responses it must get (`Some(1)`) or may get (`None`: at most one).
struct Expected {
    lines_per_id: HashMap<String, usize>,
    must_answer: HashMap<String, bool>,
}

fn expected(lines: &[&[u8]]) -> Expected {
    let mut lines_per_id = HashMap::new();
    let mut must_answer = HashMap::new();
    for line in lines {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let Ok(Value::Object(message)) = serde_json::from_slice::<Value>(line) else {
            continue;
        };
        let Some(id) = message.get("id").filter(|id| is_valid_id_value(id)) else {
            continue;
        };
        let key = id.to_string();
        *lines_per_id.entry(key.clone()).or_insert(0) += 1;
        let jsonrpc_ok = message.get("jsonrpc").and_then(Value::as_str) == Some("2.0");
        let is_response = message.contains_key("result") || message.contains_key("error");
        let must = if !jsonrpc_ok {
            true
        } else {
            match message.get("method") {
                // A listen that succeeds stays open: never answered.
                Some(Value::String(m)) => {
                    m != "subscriptions/listen"
                        || message.get("params").is_some_and(|p| !p.is_object())
                }
                Some(_) => true,
                None => !is_response,
            }
        };
        must_answer.insert(key, must);
    }
    Expected {
        lines_per_id,
        must_answer,
    }
}

fn check_session_output(lines: &[&[u8]], output: &[u8]) -> TestCaseResult {
    let expected = expected(lines);
    let mut answers: BTreeMap<String, usize> = BTreeMap::new();
    let mut last = Vec::new();
    let text = std::str::from_utf8(output)
        .map_err(|e| TestCaseError::fail(format!("output is not utf-8: {e}")))?;
    prop_assert!(
        text.is_empty() || text.ends_with('\n'),
        "unterminated output line"
    );
    for line in text.lines() {
        let message: Value = serde_json::from_str(line)
            .map_err(|e| TestCaseError::fail(format!("output line is not JSON ({e}): {line}")))?;
        let Some(map) = message.as_object() else {
            return Err(TestCaseError::fail(format!("not an object: {line}")));
        };
        prop_assert_eq!(map.get("jsonrpc"), Some(&json!("2.0")), "{}", line);
        match map.get("id") {
            Some(id) => {
                prop_assert!(
                    !map.contains_key("method"),
                    "a response with a method: {}",
                    line
                );
                let result = map.get("result");
                let error = map.get("error");
                prop_assert!(
                    result.is_some() != error.is_some(),
                    "a response needs exactly one of result and error: {}",
                    line
                );
                prop_assert_eq!(map.len(), 3, "extra members: {}", line);
                if let Some(result) = result {
                    prop_assert!(result.is_object(), "result is not an object: {}", line);
                }
                if let Some(error) = error {
                    let code = error.get("code").and_then(Value::as_i64);
                    prop_assert!(
                        code.is_some_and(|c| CODES.contains(&c)),
                        "unexpected error code: {}",
                        line
                    );
                    prop_assert!(
                        error.get("message").is_some_and(Value::is_string),
                        "error without a message: {}",
                        line
                    );
                }
                if id.is_null() {
                    prop_assert!(error.is_some(), "a result for id null: {}", line);
                    continue;
                }
                prop_assert!(is_valid_id_value(id), "invalid response id: {}", line);
                if *id == json!("last") {
                    last.push(message.clone());
                }
                let key = id.to_string();
                prop_assert!(
                    expected.lines_per_id.contains_key(&key),
                    "a response to an id nobody sent: {}",
                    line
                );
                *answers.entry(key).or_insert(0) += 1;
            }
            None => {
                prop_assert!(
                    map.get("method").is_some_and(Value::is_string),
                    "neither a response nor a notification: {}",
                    line
                );
                prop_assert!(
                    !map.contains_key("result") && !map.contains_key("error"),
                    "{}",
                    line
                );
            }
        }
    }
    for (id, &count) in &expected.lines_per_id {
        if count != 1 {
            continue; // ids sent twice may be answered twice
        }
        let answered = answers.get(id).copied().unwrap_or(0);
        prop_assert!(answered <= 1, "id {} answered {} times", id, answered);
        if expected.must_answer[id] {
            prop_assert_eq!(answered, 1, "request {} not answered", id);
        }
    }
    // The final ping, when no other line used its id: answered once, with
    // `{}` or (in the 2026-07-28 era, where a bare ping is refused) an error.
    if expected.lines_per_id.get(&json!("last").to_string()) == Some(&1) {
        prop_assert_eq!(last.len(), 1, "the final ping is answered once: {:?}", last);
        if let Some(result) = last[0].get("result") {
            prop_assert_eq!(result, &json!({}), "ping result");
        }
    }
    Ok(())
}

fn check_session(server: &Server, lines: &[&[u8]]) -> TestCaseResult {
    let mut input = Vec::new();
    for line in lines {
        input.extend_from_slice(line);
        input.push(b'\n');
    }
    input.extend_from_slice(LAST.as_bytes());
    let mut all: Vec<&[u8]> = lines.to_vec();
    all.push(LAST.as_bytes());
    let (output, served) = server.run(input).map_err(TestCaseError::fail)?;
    if let Err(e) = served {
        return Err(TestCaseError::fail(format!("the server failed: {e:#}")));
    }
    check_session_output(&all, &output).map_err(|e| {
        let reason = match e {
            TestCaseError::Fail(reason) | TestCaseError::Reject(reason) => reason,
        };
        TestCaseError::fail(format!(
            "{reason}\noutput:\n{}",
            String::from_utf8_lossy(&output)
        ))
    })
}

#[test]
fn fuzz_jsonrpc_lines() {
    let server = Server::new();
    replay("jsonrpc", |bytes| {
        let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
        let lines: Vec<&[u8]> = if bytes.is_empty() {
            Vec::new()
        } else {
            bytes.split(|&b| b == b'\n').collect()
        };
        check_session(&server, &lines)
    });
    fuzz("fuzz_jsonrpc_lines", 16, session(), |session: Session| {
        let lines: Vec<&[u8]> = session.0.iter().map(Vec::as_slice).collect();
        check_session(&server, &lines)
    });
}
