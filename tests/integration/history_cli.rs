//! Document history from the terminal on the real binary: `log`, `diff`, `show --version`, `prune` and the history in `stats`, over a project imported through edits, a revert, a removal and a binary document.

use base64::Engine;
use serde_json::{Value, json};

use crate::cli::{MARKING_PAGER, check, cmd, import_time, on_terminal, run};
use crate::history::reference_diff;
use crate::support::{Db, Project, content_digest};

const A1: &[u8] = b"# Alpha\n\nline 1\nline 2\nline 3\nline 4\nline 5\n";
/// A title with an escape code: shown as `?[7m` on a terminal and in a pipe.
const A2: &[u8] = b"# Alpha\x1b[7m edited\n\nline 1\nline 2\nline three\nline 4\nline 5\nline 6\n";
const F1: &[u8] = b"# Feature one\n";
/// Not UTF-8: stored as a blob, titled by its id.
const BIN1: &[u8] = b"# Bin\n\xff\xfe one\x00\n";
const BIN2: &[u8] = b"# Bin\n\xff\xfe two\x00\n";
const GUIDE: &[u8] = b"# Guide\n";

/// A file of the project written (`Some`) or removed.
type Change = (&'static str, Option<&'static [u8]>);

/// The project's imports, in order: each file written (`Some`) or removed.
/// Versions: notes/a 1 (A1), 2 (A2), 3 (A1 again, current); features/F-1
/// 1, 2 (removed); notes/bin 1, 2 (current); docs/guide 1 (current).
const IMPORTS: &[&[Change]] = &[
    &[
        ("notes/a.md", Some(A1)),
        ("features/F-1.md", Some(F1)),
        ("notes/bin.md", Some(BIN1)),
        ("docs/guide.md", Some(GUIDE)),
    ],
    &[("notes/a.md", Some(A2))],
    &[("notes/a.md", Some(A1)), ("notes/bin.md", Some(BIN2))],
    &[("features/F-1.md", None)],
];

/// The test project, imported once per entry of [`IMPORTS`].
fn project() -> Project {
    let p = Project::new();
    for files in IMPORTS {
        for (path, bytes) in *files {
            match bytes {
                Some(bytes) => p.file(path, bytes),
                None => p.remove(path),
            };
        }
        p.import(&[]).assert_success();
    }
    p
}

fn hash(bytes: &[u8]) -> String {
    blake3::hash(bytes).to_hex().to_string()
}

#[test]
fn log_lists_versions_newest_first() {
    let p = project();
    let t: Vec<String> = (0..=4).map(|seq| import_time(&p, seq.max(1))).collect();
    let a = [
        format!("3 (current)  {}  44 B  Alpha", t[3]),
        format!("2  {}  66 B  Alpha?[7m edited", t[2]),
        format!("1  {}  44 B  Alpha", t[1]),
    ];
    let cases: &[(&[&str], Vec<String>)] = &[
        (&["log", "notes/a"], a.to_vec()),
        (
            &["log", "orchestra://notes/a", "--limit", "2"],
            a[0..2].to_vec(),
        ),
        (&["log", "notes/a", "--before", "3"], a[1..3].to_vec()),
        (
            &["log", "notes/a", "--before", "3", "--limit", "1"],
            a[1..2].to_vec(),
        ),
        (&["log", "notes/a", "--before", "99"], a.to_vec()),
        // A document removed since has a log; its removal is a version.
        (
            &["log", "features/F-1"],
            vec![
                format!("2  {}  removed  Feature one", t[4]),
                format!("1  {}  14 B  Feature one", t[1]),
            ],
        ),
        (
            &["log", "docs/guide"],
            vec![format!("1 (current)  {}  8 B  Guide", t[1])],
        ),
    ];
    for (args, expected) in cases {
        let expected: Vec<&str> = expected.iter().map(String::as_str).collect();
        check(&p, args, 0, &expected, &[]);
    }
}

#[test]
fn log_json_has_one_object_per_version() {
    let p = project();
    let t = |seq| import_time(&p, seq);
    let out = run(&p, &["log", "features/F-1", "--json"]);
    out.assert_success();
    let lines: Vec<Value> = out
        .stdout_lines()
        .iter()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(
        lines,
        [
            json!({
                "version": 2,
                "uri": "orchestra://features/F-1?version=2",
                "time": t(4),
                "size": 0,
                "hash": null,
                "title": "Feature one",
                "removed": true,
                "current": false,
            }),
            json!({
                "version": 1,
                "uri": "orchestra://features/F-1?version=1",
                "time": t(1),
                "size": 14,
                "hash": hash(F1),
                "title": "Feature one",
                "removed": false,
                "current": false,
            }),
        ]
    );
    let out = run(&p, &["log", "notes/a", "--json", "--limit", "1"]);
    out.assert_success();
    let line: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(
        line,
        json!({
            "version": 3,
            "uri": "orchestra://notes/a?version=3",
            "time": t(3),
            "size": 44,
            "hash": hash(A1),
            "title": "Alpha",
            "removed": false,
            "current": true,
        })
    );
}

#[test]
fn log_pages_add_up_to_the_log() {
    let p = project();
    let whole = run(&p, &["log", "notes/a"]).stdout;
    let mut seen = String::new();
    let mut before: Option<String> = None;
    for _ in 0..10 {
        let mut args = vec!["log", "notes/a", "--limit", "1"];
        if let Some(before) = &before {
            args.extend(["--before", before.as_str()]);
        }
        let out = run(&p, &args);
        if out.code == Some(1) {
            break;
        }
        out.assert_success();
        seen.push_str(&out.stdout);
        before = Some(out.stdout.split(' ').next().unwrap().to_string());
    }
    assert_eq!(seen, whole);
}

#[test]
fn log_on_a_terminal_aligns_and_gives_the_next_page() {
    let p = project();
    let t = |seq| import_time(&p, seq);
    let out = on_terminal(
        &p,
        &["log", "notes/a", "--limit", "2"],
        (24, 100),
        MARKING_PAGER,
    );
    assert_eq!(
        out,
        format!(
            "\
3 (current)  {}  44 B  Alpha
2            {}  66 B  Alpha?[7m edited
2 of 3 versions of orchestra://notes/a · next: orchestra log notes/a --limit 2 --before 2
",
            t(3),
            t(2)
        )
    );
    // Taller than the screen: paged; with colour, times and sizes dimmed,
    // titles bold, the footer dimmed.
    let out = on_terminal(
        &p,
        &["log", "features/F-1"],
        (3, 80),
        &[("PAGER", "sed s/^/paged:/")],
    );
    assert_eq!(
        out,
        format!(
            "\
paged:2  \u{1b}[2m{}\u{1b}[0m  \u{1b}[2mremoved\u{1b}[0m  \u{1b}[1mFeature one\u{1b}[0m
paged:1  \u{1b}[2m{}\u{1b}[0m  \u{1b}[2m14 B\u{1b}[0m     \u{1b}[1mFeature one\u{1b}[0m
paged:\u{1b}[2m2 versions of orchestra://features/F-1\u{1b}[0m
",
            t(4),
            t(1)
        )
    );
}

#[test]
fn log_exit_statuses() {
    let p = project();
    let cases: &[(&[&str], i32, &str)] = &[
        // Nothing to show: 1.
        (
            &["log", "notes/never"],
            1,
            "orchestra: no history for orchestra://notes/never",
        ),
        (
            &["log", "notes/a", "--before", "1"],
            1,
            "orchestra: no versions of orchestra://notes/a before 1",
        ),
        // Usage: 2.
        (
            &["log", "never"],
            2,
            "orchestra: \"never\" names no document: write prefix/id (features/FEAT-001) or an orchestra:// uri",
        ),
        (
            &["log", "orchestra://notes/a?version=2"],
            2,
            "orchestra: \"orchestra://notes/a?version=2\" is not a document uri: uri must not have a query (?) or fragment (#)",
        ),
        (
            &["log", "notes/a", "--db", "missing.db"],
            2,
            "orchestra: no database at missing.db: run `orchestra import DIR` first",
        ),
    ];
    for &(args, code, stderr) in cases {
        check(&p, args, code, &[], &[stderr]);
    }
    for flag in ["--limit", "--before"] {
        for value in ["0", "x"] {
            let out = run(&p, &["log", "notes/a", flag, value]);
            assert_eq!(out.code, Some(2), "{out:?}");
            assert!(out.stderr.contains(&format!("{flag} <N>")), "{out:?}");
        }
    }
}

/// `diff -u`'s output for `old` → `new` under the header of versions
/// `from` and `to` of `uri`.
fn unified(uri: &str, (from, old): (u32, &[u8]), (to, new): (u32, &[u8])) -> String {
    format!(
        "--- {uri}?version={from}\n+++ {uri}?version={to}\n{}",
        reference_diff(old, new)
    )
}

#[test]
fn diff_prints_the_unified_diff_exactly() {
    let p = project();
    let a = "orchestra://notes/a";
    let cases: &[(&[&str], String)] = &[
        // Defaults: the newest version and the one before.
        (&["diff", "notes/a"], unified(a, (2, A2), (3, A1))),
        (&["diff", "notes/a", "1", "2"], unified(a, (1, A1), (2, A2))),
        // FROM alone: to the newest.
        (&["diff", a, "2"], unified(a, (2, A2), (3, A1))),
        // Backwards.
        (&["diff", "notes/a", "2", "1"], unified(a, (2, A2), (1, A1))),
    ];
    for (args, expected) in cases {
        let out = cmd(&p, args).run_raw();
        assert_eq!(
            (out.code, String::from_utf8(out.stdout).unwrap(), out.stderr),
            (Some(0), expected.clone(), Vec::new()),
            "{args:?}"
        );
    }
    // The escape code of A2's title is in the diff as it is, in a pipe.
    assert!(cases[1].1.contains("+# Alpha\u{1b}[7m edited\n"));
}

#[test]
fn diff_exit_statuses() {
    let p = project();
    let cases: &[(&[&str], i32, &[&str])] = &[
        // Identical: 0, said on stderr.
        (
            &["diff", "notes/a", "1", "3"],
            0,
            &["orchestra: versions 1 and 3 of orchestra://notes/a are identical"],
        ),
        (
            &["diff", "notes/a", "3", "3"],
            0,
            &["orchestra: versions 3 and 3 of orchestra://notes/a are identical"],
        ),
        // Nothing to compare: 1, saying why.
        (
            &["diff", "notes/a", "1", "9"],
            1,
            &[
                "orchestra: no version 9 of orchestra://notes/a",
                "versions 1–3",
            ],
        ),
        (
            &["diff", "features/F-1", "1", "2"],
            1,
            &[
                "orchestra: version 2 of orchestra://features/F-1 is a removal: it has no bytes",
                "versions 1–2; 2 is a removal",
            ],
        ),
        (
            &["diff", "features/F-1"],
            1,
            &[
                "orchestra: orchestra://features/F-1 has no version before version 1 to compare it with",
            ],
        ),
        (
            &["diff", "docs/guide"],
            1,
            &[
                "orchestra: orchestra://docs/guide has no version before version 1 to compare it with",
            ],
        ),
        (
            &["diff", "notes/bin"],
            1,
            &["orchestra: version 1 of orchestra://notes/bin is binary: there is no text diff"],
        ),
        (
            &["diff", "notes/never"],
            1,
            &["orchestra: no history for orchestra://notes/never"],
        ),
        // Usage: 2.
        (
            &["diff", "never", "1", "2"],
            2,
            &[
                "orchestra: \"never\" names no document: write prefix/id (features/FEAT-001) or an orchestra:// uri",
            ],
        ),
        (
            &["diff", "notes/a", "--db", "missing.db"],
            2,
            &["orchestra: no database at missing.db: run `orchestra import DIR` first"],
        ),
    ];
    for &(args, code, stderr) in cases {
        check(&p, args, code, &[], stderr);
    }
    for version in ["0", "x", "-1"] {
        let out = run(&p, &["diff", "notes/a", "1", version]);
        assert_eq!(out.code, Some(2), "{out:?}");
        assert!(out.stderr.contains("[TO]"), "{out:?}");
    }
    let out = run(&p, &["diff", "notes/a", "1", "2", "3"]);
    assert_eq!(out.code, Some(2), "{out:?}");
}

#[test]
fn diff_on_a_terminal_colours_and_shows_control_characters() {
    let p = project();
    let expected = "\
\u{1b}[1m--- orchestra://notes/a?version=1\u{1b}[0m
\u{1b}[1m+++ orchestra://notes/a?version=2\u{1b}[0m
\u{1b}[36m@@ -1,7 +1,8 @@\u{1b}[0m
\u{1b}[31m-# Alpha\u{1b}[0m
\u{1b}[32m+# Alpha?[7m edited\u{1b}[0m
 
 line 1
 line 2
\u{1b}[31m-line 3\u{1b}[0m
\u{1b}[32m+line three\u{1b}[0m
 line 4
 line 5
\u{1b}[32m+line 6\u{1b}[0m
";
    let out = on_terminal(
        &p,
        &["diff", "notes/a", "1", "2"],
        (24, 80),
        &[("PAGER", "cat")],
    );
    assert_eq!(out, expected);
    // Taller than the screen: paged. Without colour, plain.
    let out = on_terminal(&p, &["diff", "notes/a", "1", "2"], (5, 80), MARKING_PAGER);
    let plain = console::strip_ansi_codes(expected).to_string();
    let paged: String = plain.lines().map(|l| format!("paged:{l}\n")).collect();
    assert_eq!(out, paged);
}

#[test]
fn show_version_writes_its_bytes_exactly() {
    let p = project();
    let cases: &[(&[&str], &[u8])] = &[
        (&["show", "notes/a", "--version", "1"], A1),
        (&["show", "notes/a", "--version", "2"], A2),
        (&["show", "orchestra://notes/a?version=2"], A2),
        (
            &["show", "orchestra://notes/a?version=2", "--version", "2"],
            A2,
        ),
        (&["show", "ORCHESTRA://notes/%61?version=3"], A1),
        // Not UTF-8: the same bytes all the same.
        (&["show", "notes/bin", "--version", "1"], BIN1),
        (&["show", "orchestra://notes/bin?version=2"], BIN2),
        // A document removed since.
        (&["show", "features/F-1", "--version", "1"], F1),
    ];
    for (args, expected) in cases {
        let out = cmd(&p, args).run_raw();
        assert_eq!(
            (out.code, out.stdout.as_slice(), out.stderr.as_slice()),
            (Some(0), *expected, &b""[..]),
            "{args:?}"
        );
    }
}

#[test]
fn show_version_meta_and_json() {
    let p = project();
    let t = |seq| import_time(&p, seq);
    check(
        &p,
        &["show", "notes/a", "--version", "2", "--meta"],
        0,
        &[
            "uri:     orchestra://notes/a?version=2",
            "version: 2",
            "title:   Alpha?[7m edited",
            "size:    66 bytes",
            &format!("hash:    {}", hash(A2)),
            &format!("import:  2 at {}", t(2)),
        ],
        &[],
    );
    check(
        &p,
        &["show", "orchestra://notes/a?version=3", "--meta"],
        0,
        &[
            "uri:     orchestra://notes/a?version=3",
            "version: 3 (current)",
            "title:   Alpha",
            "size:    44 bytes",
            &format!("hash:    {}", hash(A1)),
            &format!("import:  3 at {}", t(3)),
        ],
        &[],
    );
    let base64 = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
    let cases: &[(&[&str], Value)] = &[
        (
            &["show", "notes/a", "--version", "2", "--json"],
            json!({
                "uri": "orchestra://notes/a?version=2",
                "prefix": "notes",
                "id": "a",
                "version": 2,
                "current": false,
                "title": "Alpha\u{1b}[7m edited",
                "size": 66,
                "hash": hash(A2),
                "import": {"seq": 2, "time": t(2)},
                "encoding": "utf-8",
                "body": std::str::from_utf8(A2).unwrap(),
            }),
        ),
        (
            &["show", "orchestra://notes/bin?version=2", "--json"],
            json!({
                "uri": "orchestra://notes/bin?version=2",
                "prefix": "notes",
                "id": "bin",
                "version": 2,
                "current": true,
                "title": "bin",
                "size": BIN2.len(),
                "hash": hash(BIN2),
                "import": {"seq": 3, "time": t(3)},
                "encoding": "base64",
                "body": base64(BIN2),
            }),
        ),
        // --meta: the same without the body.
        (
            &["show", "features/F-1", "--version", "1", "--json", "--meta"],
            json!({
                "uri": "orchestra://features/F-1?version=1",
                "prefix": "features",
                "id": "F-1",
                "version": 1,
                "current": false,
                "title": "Feature one",
                "size": 14,
                "hash": hash(F1),
                "import": {"seq": 1, "time": t(1)},
            }),
        ),
    ];
    for (args, expected) in cases {
        let out = run(&p, args);
        out.assert_success();
        let lines = out.stdout_lines();
        assert_eq!(lines.len(), 1, "one object: {out:?}");
        let got: Value = serde_json::from_str(lines[0]).unwrap();
        assert_eq!(&got, expected, "{args:?}");
    }
}

#[test]
fn show_version_exit_statuses() {
    let p = project();
    let cases: &[(&[&str], i32, &[&str])] = &[
        // No bytes to show: 1, with the versions there are.
        (
            &["show", "notes/a", "--version", "4"],
            1,
            &[
                "orchestra: no version 4 of orchestra://notes/a",
                "versions 1–3",
            ],
        ),
        (
            &["show", "orchestra://features/F-1?version=2", "--meta"],
            1,
            &[
                "orchestra: version 2 of orchestra://features/F-1 is a removal: it has no bytes",
                "versions 1–2; 2 is a removal",
            ],
        ),
        (
            &["show", "docs/guide", "--version", "2", "--json"],
            1,
            &[
                "orchestra: no version 2 of orchestra://docs/guide",
                "version 1",
            ],
        ),
        (
            &["show", "notes/never", "--version", "1"],
            1,
            &["orchestra: no history for orchestra://notes/never"],
        ),
        // Usage: 2.
        (
            &["show", "orchestra://notes/a?version=2", "--version", "3"],
            2,
            &[
                "orchestra: \"orchestra://notes/a?version=2\" names version 2 and --version 3: give one",
            ],
        ),
        (
            &["show", "orchestra://notes/a?version=0"],
            2,
            &[
                "orchestra: \"orchestra://notes/a?version=0\" is not a document uri: the only query a document uri takes is ?version=N, N a version number from 1",
            ],
        ),
        (
            &["show", "orchestra://notes/a?rev=1"],
            2,
            &[
                "orchestra: \"orchestra://notes/a?rev=1\" is not a document uri: the only query a document uri takes is ?version=N, N a version number from 1",
            ],
        ),
        (
            &["show", "notes/a", "--version", "1", "--db", "missing.db"],
            2,
            &["orchestra: no database at missing.db: run `orchestra import DIR` first"],
        ),
    ];
    for &(args, code, stderr) in cases {
        check(&p, args, code, &[], stderr);
    }
    for value in ["0", "x"] {
        let out = run(&p, &["show", "notes/a", "--version", value]);
        assert_eq!(out.code, Some(2), "{out:?}");
        assert!(out.stderr.contains("--version <N>"), "{out:?}");
    }
}

#[test]
fn show_version_on_a_terminal_pages_text_only() {
    let p = project();
    // The version's bytes as they are, escape code included: `show` is `cat`.
    let paged: String = String::from_utf8_lossy(A2)
        .lines()
        .map(|line| format!("paged:{line}\n"))
        .collect();
    let out = on_terminal(
        &p,
        &["show", "notes/a", "--version", "2"],
        (5, 80),
        MARKING_PAGER,
    );
    assert_eq!(out, paged);
    let out = on_terminal(
        &p,
        &["show", "notes/bin", "--version", "1"],
        (2, 80),
        MARKING_PAGER,
    );
    assert_eq!(out, String::from_utf8_lossy(BIN1));
}

/// The bodies of past versions the file holds: how many, their bytes as
/// stored and as they were.
fn stored_bodies(p: &Project) -> (u64, u64, u64) {
    let row = Db::open(&p.db()).ints(
        "SELECT count(*), CAST(coalesce(sum(length(zstd)), 0) AS BIGINT),
                CAST(coalesce(sum(size), 0) AS BIGINT) FROM bodies",
        &[],
    );
    (row[0] as u64, row[1] as u64, row[2] as u64)
}

/// `stats --json`'s `history`.
fn history_stats(p: &Project) -> Value {
    let out = run(p, &["stats", "--json"]);
    out.assert_success();
    let stats: Value = serde_json::from_str(&out.stdout).unwrap();
    stats["history"].clone()
}

/// `stats`' lines about the history.
fn history_lines(p: &Project) -> Vec<String> {
    let out = run(p, &["stats"]);
    out.assert_success();
    out.stdout_lines()
        .into_iter()
        .filter(|l| l.starts_with("history:") || l.starts_with("  past bodies:"))
        .map(String::from)
        .collect()
}

#[test]
fn stats_says_what_the_history_holds() {
    let p = project();
    // Past bodies: A1 and A2 (notes/a), BIN1, F1, each once.
    let raw = A1.len() + A2.len() + BIN1.len() + F1.len();
    let (bodies, stored, raw_stored) = stored_bodies(&p);
    assert_eq!((bodies, raw_stored), (4, raw as u64));
    let ratio = raw as f64 / stored as f64;
    let mut stats = history_stats(&p);
    // Within a rounding: serde_json's default parsing of a float may miss
    // the nearest one by an ulp.
    let printed = stats["compression_ratio"].take().as_f64().unwrap();
    assert!((printed - ratio).abs() < 1e-12, "{printed} against {ratio}");
    assert_eq!(
        stats,
        json!({
            "versions": 8,
            "documents_with_history": 3,
            "bodies": 4,
            "stored_bytes": stored,
            "raw_bytes": raw,
            "compression_ratio": null,
        })
    );
    assert!(stored < 1000);
    assert_eq!(
        history_lines(&p),
        [
            "history:        8 versions, 3 documents with more than one".to_string(),
            format!("  past bodies:  4 ({stored} B stored, {raw} B raw, ratio {ratio:.1}×)"),
        ]
    );
}

/// The project's keys.
const KEYS: &[&str] = &["notes/a", "features/F-1", "notes/bin", "docs/guide"];

/// Every document's `log --json`.
fn logs(p: &Project) -> Vec<String> {
    KEYS.iter()
        .map(|key| run(p, &["log", key, "--json"]).stdout)
        .collect()
}

/// Every document's version numbers, newest first.
fn numbers(p: &Project) -> Vec<Vec<u64>> {
    logs(p)
        .iter()
        .map(|log| {
            log.lines()
                .map(|line| {
                    let v: Value = serde_json::from_str(line).unwrap();
                    v["version"].as_u64().unwrap()
                })
                .collect()
        })
        .collect()
}

/// `prune ARGS --json`, which must succeed: its report.
fn prune_json(p: &Project, args: &[&str]) -> Value {
    let args = [&["prune", "--json"], args].concat();
    let out = run(p, &args);
    out.assert_success();
    serde_json::from_str(&out.stdout).unwrap()
}

#[test]
fn prune_dry_run_says_what_would_go_and_writes_nothing() {
    let p = project();
    let before = (
        logs(&p),
        history_stats(&p),
        stored_bodies(&p),
        content_digest(&p.db()),
    );
    let (_, stored, _) = stored_bodies(&p);
    let cases: &[(&[&str], String)] = &[
        (
            &["prune", "--keep", "1", "--dry-run"],
            format!("would remove 4 versions and 4 stored bodies ({stored} B)"),
        ),
        // Every version but the newest of each document: the current ones,
        // and a removed document's removal (its numbers are never reused).
        (
            &["prune", "--older-than", "0s", "--dry-run"],
            format!("would remove 4 versions and 4 stored bodies ({stored} B)"),
        ),
        // Both rules: what both let go.
        (
            &["prune", "--dry-run", "--keep", "1", "--older-than", "0s"],
            format!("would remove 4 versions and 4 stored bodies ({stored} B)"),
        ),
        // Nothing to let go: the stored copy of A1 stays, though notes/a's
        // current bytes are A1 again (a revert): version 1 needs it.
        (
            &["prune", "--keep", "3", "--older-than", "1s", "--dry-run"],
            "would remove 0 versions and 0 stored bodies (0 B)".to_string(),
        ),
    ];
    for (args, expected) in cases {
        let out = run(&p, args);
        out.assert_success();
        assert!(out.stdout.starts_with(expected), "{args:?}: {out:?}");
        assert_eq!(out.stdout.lines().count(), 1, "{out:?}");
    }
    assert_eq!(
        prune_json(&p, &["--keep", "2", "--dry-run"]),
        json!({"dry_run": true, "versions": 1, "bodies": 1, "stored_bytes": stored_size(&p, A1)})
    );
    let after = (
        logs(&p),
        history_stats(&p),
        stored_bodies(&p),
        content_digest(&p.db()),
    );
    assert_eq!(before, after, "a dry run writes nothing");
}

/// The bytes the stored body of `bytes` takes (compressed).
fn stored_size(p: &Project, bytes: &[u8]) -> u64 {
    let hash = blake3::hash(bytes).as_bytes().to_vec();
    Db::open(&p.db()).int("SELECT length(zstd) FROM bodies WHERE hash = $1", &[&hash]) as u64
}

#[test]
fn prune_removes_what_every_rule_lets_go() {
    let p = project();
    let all = vec![vec![3, 2, 1], vec![2, 1], vec![2, 1], vec![1]];
    // A cut in the past: no version is that old, and nothing goes. (The
    // stored copy of A1 stays, though notes/a's current bytes are A1
    // again: version 1 needs it.)
    let a1 = stored_size(&p, A1);
    assert_eq!(
        prune_json(&p, &["--older-than", "100years"]),
        json!({"dry_run": false, "versions": 0, "bodies": 0, "stored_bytes": 0})
    );
    assert_eq!(numbers(&p), all);
    // Older than now and beyond the 2 newest: notes/a's first, and with it
    // the stored copy of A1, which only it needed.
    assert_eq!(
        prune_json(&p, &["--keep", "2", "--older-than", "0s"]),
        json!({"dry_run": false, "versions": 1, "bodies": 1, "stored_bytes": a1})
    );
    assert_eq!(numbers(&p), [vec![3, 2], vec![2, 1], vec![2, 1], vec![1]]);
    // The rows left are linked again, bytes included.
    assert_eq!(crate::support::pruned_history_check(&p.db()), "ok");
    check(
        &p,
        &["show", "notes/a", "--version", "1"],
        1,
        &[],
        &[
            "orchestra: no version 1 of orchestra://notes/a",
            "versions 2–3",
        ],
    );
    let out = cmd(&p, &["show", "notes/a", "--version", "2"]).run_raw();
    assert_eq!((out.code, out.stdout.as_slice()), (Some(0), A2));
    let out = cmd(&p, &["diff", "notes/a"]).run_raw();
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        unified("orchestra://notes/a", (2, A2), (3, A1))
    );

    // Keep 1: the current versions stay, and a removed document's removal.
    let (bodies, stored, _) = stored_bodies(&p);
    assert_eq!(bodies, 3);
    check(
        &p,
        &["prune", "--keep", "1"],
        0,
        &[&format!(
            "removed 3 versions and 3 stored bodies ({stored} B)"
        )],
        &[],
    );
    assert_eq!(numbers(&p), [vec![3], vec![2], vec![2], vec![1]]);
    assert_eq!(stored_bodies(&p), (0, 0, 0));
    let mut stats = history_stats(&p);
    // (Left out: `documents_with_history` counts documents that have a
    // version 2, which after a prune is not "more than one version".)
    stats["documents_with_history"].take();
    assert_eq!(
        stats,
        json!({
            "versions": 4, "documents_with_history": null, "bodies": 0,
            "stored_bytes": 0, "raw_bytes": 0, "compression_ratio": null,
        })
    );
    assert_eq!(
        history_lines(&p)[1],
        "  past bodies:  0 (0 B stored, 0 B raw, ratio —)"
    );
    // What stays reads back.
    for (args, expected) in [
        (&["show", "notes/a"][..], A1),
        (&["show", "notes/a", "--version", "3"], A1),
        (&["show", "orchestra://notes/bin?version=2"], BIN2),
    ] {
        let out = cmd(&p, args).run_raw();
        assert_eq!(
            (out.code, out.stdout.as_slice()),
            (Some(0), expected),
            "{args:?}"
        );
    }
    check(
        &p,
        &["prune", "--keep", "1"],
        0,
        &["removed 0 versions and 0 stored bodies (0 B)"],
        &[],
    );
    // The next import numbers on.
    p.file("notes/a.md", A2);
    p.import(&[]).assert_success();
    assert_eq!(numbers(&p)[0], [4, 3]);
    assert_eq!(crate::support::pruned_history_check(&p.db()), "ok");
    let out = cmd(&p, &["diff", "notes/a"]).run_raw();
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        unified("orchestra://notes/a", (3, A1), (4, A2))
    );
}

#[test]
fn prune_exit_statuses() {
    let p = project();
    let cases: &[(&[&str], &str)] = &[
        (&["prune"], "<--keep <N>|--older-than <DURATION>>"),
        (
            &["prune", "--dry-run"],
            "<--keep <N>|--older-than <DURATION>>",
        ),
        (&["prune", "--keep", "0"], "--keep <N>"),
        (&["prune", "--keep", "x"], "--keep <N>"),
        (&["prune", "--older-than", "3x"], "--older-than <DURATION>"),
        (&["prune", "--older-than", "-1s"], "--older-than <DURATION>"),
        (
            &["prune", "--keep", "1", "--db", "missing.db"],
            "orchestra: no database at missing.db: run `orchestra import DIR` first",
        ),
    ];
    for &(args, stderr) in cases {
        let out = run(&p, args);
        assert_eq!((out.code, out.stdout.as_str()), (Some(2), ""), "{args:?}");
        assert!(out.stderr.contains(stderr), "{args:?}: {out:?}");
    }
    assert!(!p.root_path("missing.db").exists(), "prune creates nothing");
    assert_eq!(
        numbers(&p),
        [vec![3, 2, 1], vec![2, 1], vec![2, 1], vec![1]]
    );
}

#[test]
fn off_a_terminal_history_commands_are_plain() {
    let p = project();
    let commands: &[&[&str]] = &[
        &["log", "notes/a"],
        &["log", "notes/a", "--json"],
        &["diff", "notes/a"],
        &["show", "notes/a", "--version", "2"],
        &["show", "notes/bin", "--version", "1"],
        &["show", "notes/a", "--version", "2", "--meta"],
        &["show", "notes/a", "--version", "2", "--json"],
        &["stats"],
    ];
    let insistent: &[&[(&str, &str)]] = &[
        &[("CLICOLOR_FORCE", "1"), ("PAGER", "false")],
        &[
            ("CLICOLOR", "1"),
            ("PAGER", "sed s/^/paged:/"),
            ("TERM", "xterm"),
        ],
    ];
    for args in commands {
        let plain = cmd(&p, args).run_raw();
        assert_eq!(plain.code, Some(0), "{args:?}: {plain:?}");
        for env in insistent {
            let out = env
                .iter()
                .fold(cmd(&p, args), |cmd, (key, value)| cmd.env(key, value))
                .run_raw();
            assert_eq!(
                (out.code, &out.stdout),
                (Some(0), &plain.stdout),
                "{args:?} with {env:?}: as plain as without"
            );
        }
    }
}

/// Turns the history of `p`'s database back into what orchestra wrote
/// before migration 0011: `versions` keyed by document, made by migration
/// 0006's own statement, no `removed`, schema version 10.
fn as_before_0011(p: &Project) {
    as_before_0014(p);
    let migration = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations/sqlite/0006_history.sql"),
    )
    .unwrap();
    let from = migration.find("CREATE TABLE versions").unwrap();
    let create = &migration[from..from + migration[from..].find(';').unwrap()];
    let conn = rusqlite::Connection::open(p.db()).unwrap();
    conn.execute_batch(&format!(
        "BEGIN;
         ALTER TABLE versions RENAME TO chained;
         {create};
         INSERT INTO versions (prefix, id, version, hash, size, title, is_text, seq)
             SELECT prefix, id, version, hash, size, title, is_text, seq FROM chained;
         DROP TABLE chained;
         DROP TABLE removed;
         DROP TABLE body_hashes;
         DROP TABLE recent_body_hashes;
         CREATE UNIQUE INDEX bodies_hash ON bodies (hash);
         PRAGMA user_version = 10;
         COMMIT;"
    ))
    .unwrap();
}

/// Turns the history of `p`'s database back into what orchestra wrote
/// before migration 0012: past bodies found by hash through a unique index,
/// no `previous_body`, schema version 11; and, as its prune left them, no
/// stored bodies that are the current bytes of their document.
fn as_before_0012(p: &Project) {
    as_before_0013(p);
    let conn = rusqlite::Connection::open(p.db()).unwrap();
    conn.execute_batch(
        "BEGIN;
         ALTER TABLE versions DROP COLUMN previous_body;
         DROP TABLE body_hashes;
         DROP TABLE recent_body_hashes;
         CREATE UNIQUE INDEX bodies_hash ON bodies (hash);
         DELETE FROM bodies WHERE hash IN (SELECT hash FROM documents);
         PRAGMA user_version = 11;
         COMMIT;",
    )
    .unwrap();
}

/// Turns the history of `p`'s database back into what orchestra wrote
/// before migration 0013: a version names the bytes of the one before it
/// only, schema version 12.
fn as_before_0013(p: &Project) {
    as_before_0014(p);
    let conn = rusqlite::Connection::open(p.db()).unwrap();
    conn.execute_batch(
        "BEGIN;
         ALTER TABLE versions DROP COLUMN earlier_bodies;
         PRAGMA user_version = 12;
         COMMIT;",
    )
    .unwrap();
}

/// Turns the history of `p`'s database back into what orchestra wrote
/// before migration 0014: a document's row does not hold its newest
/// version, schema version 13.
fn as_before_0014(p: &Project) {
    as_before_0015(p);
    let conn = rusqlite::Connection::open(p.db()).unwrap();
    conn.execute_batch(
        "BEGIN;
         ALTER TABLE documents DROP COLUMN version;
         ALTER TABLE documents DROP COLUMN earlier_bodies;
         PRAGMA user_version = 13;
         COMMIT;",
    )
    .unwrap();
}

/// Turns `p`'s database back into what orchestra wrote before migration
/// 0015: no view of the `where` pairs' counts, schema version 14.
fn as_before_0015(p: &Project) {
    as_before_0016(p);
    let conn = rusqlite::Connection::open(p.db()).unwrap();
    conn.execute_batch(
        "BEGIN;
         DROP TABLE fields_terms;
         PRAGMA user_version = 14;
         COMMIT;",
    )
    .unwrap();
}

/// Turns `p`'s database back into what orchestra wrote before migrations
/// 0016 to 0020: no links, names, skipped files, moves, outlines or API
/// keys, schema version 15.
fn as_before_0016(p: &Project) {
    let conn = rusqlite::Connection::open(p.db()).unwrap();
    conn.execute_batch(
        "BEGIN;
         DROP TABLE links;
         DROP TABLE names;
         DROP TABLE skipped;
         DROP TABLE moves;
         DROP TABLE outlines;
         DROP TABLE api_keys;
         PRAGMA user_version = 15;
         COMMIT;",
    )
    .unwrap();
}

/// Every version of the project of [`project`] that has bytes, and them.
const EVERY_VERSION: [(&str, &str, &[u8]); 7] = [
    ("notes/a", "1", A1),
    ("notes/a", "2", A2),
    ("notes/a", "3", A1),
    ("features/F-1", "1", F1),
    ("notes/bin", "1", BIN1),
    ("notes/bin", "2", BIN2),
    ("docs/guide", "1", GUIDE),
];

fn read_every_version(p: &Project) {
    for (key, version, expected) in EVERY_VERSION {
        let args = ["show", key, "--version", version];
        assert_eq!(cmd(p, &args).run_raw().stdout, expected, "{args:?}");
    }
}

#[test]
fn a_history_written_before_versions_were_chained_reads_the_same_after_the_upgrade() {
    let p = project();
    let (before, stats) = (logs(&p), history_stats(&p));
    as_before_0011(&p);
    let schema = || Db::open(&p.db()).int("PRAGMA user_version", &[]);
    assert_eq!(schema(), 10);
    // The first command that opens it for writing upgrades it.
    p.import(&[]).assert_success();
    assert_eq!(schema() as usize, crate::cli::migrations());
    assert_eq!(crate::support::history_check(&p.db()), "ok");
    assert_eq!(logs(&p), before);
    assert_eq!(history_stats(&p), stats);
    for (args, expected) in [
        (["show", "notes/a", "--version", "2"], A2),
        (["show", "features/F-1", "--version", "1"], F1),
        (["show", "notes/bin", "--version", "1"], BIN1),
    ] {
        assert_eq!(cmd(&p, &args).run_raw().stdout, expected, "{args:?}");
    }
    // Numbers go on from the upgraded chains: an edit, and a removed
    // document that comes back.
    p.file("notes/a.md", A2);
    p.file("features/F-1.md", F1);
    p.import(&[]).assert_success();
    assert_eq!(
        numbers(&p)[..2],
        [vec![4, 3, 2, 1], vec![3, 2, 1]],
        "notes/a and features/F-1"
    );
    assert_eq!(crate::support::history_check(&p.db()), "ok");
}

/// The first import of `p`, whose database was turned back into schema
/// `from`, upgrades it and says so; the history reads the same after it
/// and after one more change (notes/a's A1 leaves the document, and its
/// versions 1 and 3 still read it).
fn upgrades_and_reads_the_same(p: &Project, from: i64, before: &[String]) {
    let db = || Db::open(&p.db());
    assert_eq!(db().int("PRAGMA user_version", &[]), from);
    let out = p.import(&[]);
    out.assert_success();
    assert!(
        out.stderr.contains(&format!(
            "upgrading the database from schema {from} to {} (3 documents)",
            crate::cli::migrations()
        )),
        "{out:?}"
    );
    assert_eq!(
        db().int("PRAGMA user_version", &[]) as usize,
        crate::cli::migrations()
    );
    assert_eq!(crate::support::history_check(&p.db()), "ok");
    assert_eq!(logs(p), before);
    read_every_version(p);
    p.file("notes/a.md", GUIDE);
    p.import(&[]).assert_success();
    read_every_version(p);
    assert_eq!(crate::support::history_check(&p.db()), "ok");
}

#[test]
fn a_history_written_before_versions_named_their_bodies_reads_the_same_after_the_upgrade() {
    let p = project();
    let before = logs(&p);
    as_before_0012(&p);
    // notes/a's version 1 has the bytes of version 3, the current ones: the
    // old prune left them in `documents` only.
    assert_eq!(
        Db::open(&p.db()).int(
            "SELECT count(*) FROM bodies WHERE hash = $1",
            &[&blake3::hash(A1).as_bytes().to_vec()]
        ),
        0
    );
    upgrades_and_reads_the_same(&p, 11, &before);
}

#[test]
fn a_history_written_before_versions_named_earlier_bodies_reads_the_same_after_the_upgrade() {
    let p = project();
    let before = logs(&p);
    as_before_0013(&p);
    // The history check in it verifies the `earlier_bodies` the upgrade
    // filled: one per version a row's `earlier` names, and the right one.
    upgrades_and_reads_the_same(&p, 12, &before);
}

#[test]
fn a_history_written_before_documents_held_their_newest_version_reads_the_same_after_the_upgrade() {
    let p = project();
    let before = logs(&p);
    as_before_0014(&p);
    // The history check in it verifies what the upgrade filled in each
    // document's row: its newest version's number and `earlier_bodies`.
    upgrades_and_reads_the_same(&p, 13, &before);
}
