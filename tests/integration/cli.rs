//! End-to-end tests of the terminal commands `ls`, `show` and `stats` on the real binary: output in a pipe and on a terminal, `--json` shapes, exit statuses, read-only use beside a writer.

use std::time::{Duration, UNIX_EPOCH};

use base64::Engine;
use serde_json::{Value, json};

use crate::support::{Cmd, Db, Output, Project, database_bytes, on_postgres};

/// The test project's files. Every mtime is [`MTIME`].
const FILES: &[(&str, &[u8])] = &[
    (
        "features/FEAT-001.md",
        b"---\ntitle: Offline work orders\nstatus: shipped\ntags: [offline, sync]\n---\n# Offline\n\nWork with no network.\n",
    ),
    ("features/FEAT-002.md", b"# Photo attachments\n"),
    ("features/FEAT-010.md", b"# Scheduling board\n"),
    (
        "docs/adr/0001.md",
        b"---\ndescription: Why we write decisions down\n---\n# ADR 0001: Record decisions\n",
    ),
    ("docs/adr/0002.md", b"# ADR 0002: SQLite on the device\n"),
    ("docs/guide.md", b"# Getting started\n"),
    ("notes/café notes.md", "# Café offsite\n".as_bytes()),
    // Not UTF-8: stored as a blob, titled by its id.
    ("notes/blob.md", b"# Blob\n\xff\xfe not UTF-8 \x00\x01\n"),
];

/// 2026-03-02T10:00:00Z.
const MTIME: u64 = 1_772_445_600;

/// Every document as `ls` prints it in a pipe, in key order.
const LISTING: &[&str] = &[
    "orchestra://docs/adr/0001  ADR 0001: Record decisions  78 B  2026-03-02T10:00:00Z",
    "orchestra://docs/adr/0002  ADR 0002: SQLite on the device  33 B  2026-03-02T10:00:00Z",
    "orchestra://docs/guide  Getting started  18 B  2026-03-02T10:00:00Z",
    "orchestra://features/FEAT-001  Offline work orders  106 B  2026-03-02T10:00:00Z",
    "orchestra://features/FEAT-002  Photo attachments  20 B  2026-03-02T10:00:00Z",
    "orchestra://features/FEAT-010  Scheduling board  19 B  2026-03-02T10:00:00Z",
    "orchestra://notes/blob  blob  23 B  2026-03-02T10:00:00Z",
    "orchestra://notes/caf%C3%A9%20notes  Café offsite  16 B  2026-03-02T10:00:00Z",
];

/// A temp project of `files`, every mtime [`MTIME`], imported.
fn project_of(files: &[(&str, &[u8])]) -> Project {
    let p = Project::new();
    for (path, bytes) in files {
        p.file(path, bytes);
        std::fs::File::options()
            .write(true)
            .open(p.path(path))
            .unwrap()
            .set_modified(UNIX_EPOCH + Duration::from_secs(MTIME))
            .unwrap();
    }
    p.import(&[]).assert_success();
    p
}

fn project() -> Project {
    project_of(FILES)
}

/// `orchestra ARGS` in `p`, with nothing in the environment that asks for
/// colour or a pager.
pub(crate) fn cmd(p: &Project, args: &[&str]) -> Cmd {
    ["NO_COLOR", "CLICOLOR", "CLICOLOR_FORCE", "PAGER", "LESS"]
        .into_iter()
        .fold(p.cmd(args), Cmd::env_remove)
}

pub(crate) fn run(p: &Project, args: &[&str]) -> Output {
    cmd(p, args).run()
}

/// Runs `args` and checks its exit status, stdout and stderr.
#[track_caller]
pub(crate) fn check(p: &Project, args: &[&str], code: i32, stdout: &[&str], stderr: &[&str]) {
    let out = run(p, args);
    assert_eq!(
        (out.code, out.stdout_lines(), out.stderr_lines()),
        (Some(code), stdout.to_vec(), stderr.to_vec()),
        "orchestra {}",
        args.join(" ")
    );
}

/// `LISTING` lines `from..to`.
fn listing(range: std::ops::Range<usize>) -> Vec<&'static str> {
    LISTING[range].to_vec()
}

#[test]
fn ls_lists_in_key_order_under_a_prefix_or_folder() {
    let p = project();
    let cases: &[(&[&str], Vec<&str>)] = &[
        (&["ls"], listing(0..8)),
        (&["ls", "features"], listing(3..6)),
        (&["ls", "docs"], listing(0..3)),
        (&["ls", "docs/adr"], listing(0..2)),
        (&["ls", "docs/adr/"], listing(0..2)),
        (&["ls", "notes"], listing(6..8)),
        // A page, and the page after it.
        (&["ls", "features", "--limit", "2"], listing(3..5)),
        (
            &["ls", "features", "--limit", "2", "--after", "FEAT-002"],
            listing(5..6),
        ),
        (&["ls", "docs/adr", "--after", "adr/0001"], listing(1..2)),
        // Without UNDER, --after is a prefix/id or URI, and pages run across prefixes.
        (
            &["ls", "--limit", "2", "--after", "docs/guide"],
            listing(3..5),
        ),
        (
            &["ls", "--after", "orchestra://features/FEAT-010"],
            listing(6..8),
        ),
        // An id that is not stored is a place in key order all the same.
        (&["ls", "features", "--after", "FEAT-003"], listing(5..6)),
        (
            &["ls", "features", "--after", "orchestra://features/FEAT-001"],
            listing(4..6),
        ),
    ];
    for (args, expected) in cases {
        check(&p, args, 0, expected, &[]);
    }
}

#[test]
fn ls_pages_add_up_to_the_listing() {
    let p = project();
    for (under, expected) in [(None, listing(0..8)), (Some("features"), listing(3..6))] {
        let mut seen: Vec<String> = Vec::new();
        let mut after: Option<String> = None;
        for _ in 0..10 {
            let mut args = vec!["ls", "--limit", "3"];
            args.extend(under);
            if let Some(after) = &after {
                args.extend(["--after", after.as_str()]);
            }
            let out = run(&p, &args);
            if out.code == Some(1) {
                break;
            }
            out.assert_success();
            seen.extend(out.stdout_lines().iter().map(|l| l.to_string()));
            // The next page starts after the last URI.
            after = Some(seen.last().unwrap().split("  ").next().unwrap().to_string());
        }
        assert_eq!(seen, expected, "under {under:?}");
    }
}

#[test]
fn ls_json_has_one_object_per_document() {
    let p = project();
    let out = run(&p, &["ls", "--json"]);
    out.assert_success();
    let lines: Vec<Value> = out
        .stdout_lines()
        .iter()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let uris: Vec<&str> = lines.iter().map(|l| l["uri"].as_str().unwrap()).collect();
    let expected: Vec<&str> = LISTING
        .iter()
        .map(|l| l.split("  ").next().unwrap())
        .collect();
    assert_eq!(uris, expected);
    let expected = [
        json!({
            "uri": "orchestra://features/FEAT-001",
            "prefix": "features",
            "id": "FEAT-001",
            "title": "Offline work orders",
            "description": null,
            "size": 106,
            "updated": "2026-03-02T10:00:00Z",
            "frontmatter": {"title": "Offline work orders", "status": "shipped", "tags": ["offline", "sync"]},
        }),
        json!({
            "uri": "orchestra://docs/adr/0001",
            "prefix": "docs",
            "id": "adr/0001",
            "title": "ADR 0001: Record decisions",
            "description": "Why we write decisions down",
            "size": 78,
            "updated": "2026-03-02T10:00:00Z",
            "frontmatter": {"description": "Why we write decisions down"},
        }),
        json!({
            "uri": "orchestra://notes/caf%C3%A9%20notes",
            "prefix": "notes",
            "id": "café notes",
            "title": "Café offsite",
            "description": null,
            "size": 16,
            "updated": "2026-03-02T10:00:00Z",
            "frontmatter": null,
        }),
    ];
    for object in expected {
        assert!(lines.contains(&object), "{object} not in {lines:#?}");
    }
    let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    for line in &lines {
        assert_eq!(
            keys(line),
            keys(&expected_shape()),
            "every line has the same keys: {line}"
        );
    }
    // Paging works the same way.
    let out = run(
        &p,
        &["ls", "notes", "--json", "--limit", "1", "--after", "blob"],
    );
    out.assert_success();
    assert_eq!(out.stdout_lines().len(), 1);
    assert!(out.stdout.contains("\"id\":\"café notes\""), "{out:?}");
}

fn expected_shape() -> Value {
    json!({
        "uri": "", "prefix": "", "id": "", "title": "", "description": null,
        "size": 0, "updated": "", "frontmatter": null,
    })
}

#[test]
fn ls_exit_statuses() {
    let p = project();
    let cases: &[(&[&str], i32, &str)] = &[
        // Nothing to show: 1, one line saying so.
        (
            &["ls", "notes", "--after", "zzz"],
            1,
            "orchestra: no documents under notes after zzz",
        ),
        (
            &["ls", "docs/nothing"],
            1,
            "orchestra: no documents under docs/nothing",
        ),
        (
            &["ls", "--after", "notes/zzz"],
            1,
            "orchestra: no documents after notes/zzz",
        ),
        // Usage: 2, one line naming what is wrong.
        (
            &["ls", "featurez"],
            2,
            "orchestra: under \"featurez\" names no prefix: use features, notes or docs, optionally followed by a folder (docs/adr)",
        ),
        (
            &["ls", "docs/../x"],
            2,
            "orchestra: under \"docs/../x\" is not a folder of document ids: write PREFIX or PREFIX/FOLDER (docs/adr)",
        ),
        (
            &["ls", "--after", "FEAT-001"],
            2,
            "orchestra: --after: \"FEAT-001\" names no document: write prefix/id (features/FEAT-001) or an orchestra:// uri",
        ),
        (
            &["ls", "features", "--after", "orchestra://notes/blob"],
            2,
            "orchestra: --after: \"orchestra://notes/blob\" is not under features",
        ),
        (
            &["ls", "features", "--after", "a//b"],
            2,
            "orchestra: --after: \"a//b\" cannot be an id under features",
        ),
        (
            &["ls", "--db", "missing.db"],
            2,
            "orchestra: no database at missing.db: run `orchestra import DIR` first",
        ),
    ];
    for &(args, code, stderr) in cases {
        check(&p, args, code, &[], &[stderr]);
    }
    // clap's own usage errors.
    for limit in ["0", "1001", "x"] {
        let out = run(&p, &["ls", "--limit", limit]);
        assert_eq!(out.code, Some(2), "{out:?}");
        assert!(out.stderr.contains("--limit <N>"), "{out:?}");
    }
    // A database with no documents at all.
    let empty = Project::new();
    empty.import(&[]).assert_success();
    check(&empty, &["ls"], 1, &[], &["orchestra: no documents"]);
}

/// `orchestra ARGS` on a terminal of `rows` × `columns` with `env`: its stdout.
pub(crate) fn on_terminal(p: &Project, args: &[&str], (rows, columns): Screen, env: Env) -> String {
    let cmd = env
        .iter()
        .fold(cmd(p, args).env("TERM", "xterm"), |cmd, (key, value)| {
            cmd.env(key, value)
        });
    let out = cmd.run_on_terminal(rows, columns);
    out.assert_success();
    out.stdout
}

/// A terminal's rows and columns.
pub(crate) type Screen = (u16, u16);

/// Environment variables set for a run.
pub(crate) type Env = &'static [(&'static str, &'static str)];

/// No colour, and a pager that marks what it shows.
pub(crate) const MARKING_PAGER: Env = &[("NO_COLOR", "1"), ("PAGER", "sed s/^/paged:/")];

#[test]
fn ls_on_a_terminal_aligns_clips_pages_and_colours() {
    let p = project();
    let all = "\
orchestra://docs/adr/0001            ADR 0001: Record decisions      78 B   2026-03-02T10:00:00Z
orchestra://docs/adr/0002            ADR 0002: SQLite on the device  33 B   2026-03-02T10:00:00Z
orchestra://docs/guide               Getting started                 18 B   2026-03-02T10:00:00Z
orchestra://features/FEAT-001        Offline work orders             106 B  2026-03-02T10:00:00Z
orchestra://features/FEAT-002        Photo attachments               20 B   2026-03-02T10:00:00Z
orchestra://features/FEAT-010        Scheduling board                19 B   2026-03-02T10:00:00Z
orchestra://notes/blob               blob                            23 B   2026-03-02T10:00:00Z
orchestra://notes/caf%C3%A9%20notes  Café offsite                    16 B   2026-03-02T10:00:00Z
8 documents
";
    let paged: String = all.lines().map(|line| format!("paged:{line}\n")).collect();
    // A --db given is repeated (a PostgreSQL URL as orchestra shows it).
    let (db, shown) = (p.db_arg(), p.db_shown());
    let given_db = format!(
        "\
orchestra://notes/blob  blob  23 B  2026-03-02T10:00:00Z
1 of 2 documents under notes · next: orchestra ls notes --limit 1 --db {shown} --after blob
"
    );
    let cases: &[(&[&str], Screen, Env, &str)] = &[
        // Aligned; the footer gives the count and the next page's command.
        (
            &["ls", "features", "--limit", "2"],
            (24, 100),
            MARKING_PAGER,
            "\
orchestra://features/FEAT-001  Offline work orders  106 B  2026-03-02T10:00:00Z
orchestra://features/FEAT-002  Photo attachments    20 B   2026-03-02T10:00:00Z
2 of 3 documents under features · next: orchestra ls features --limit 2 --after FEAT-002
",
        ),
        (
            &["ls", "--limit", "7", "--after", "docs/adr/0001"],
            (24, 100),
            MARKING_PAGER,
            "\
orchestra://docs/adr/0002            ADR 0002: SQLite on the device  33 B   2026-03-02T10:00:00Z
orchestra://docs/guide               Getting started                 18 B   2026-03-02T10:00:00Z
orchestra://features/FEAT-001        Offline work orders             106 B  2026-03-02T10:00:00Z
orchestra://features/FEAT-002        Photo attachments               20 B   2026-03-02T10:00:00Z
orchestra://features/FEAT-010        Scheduling board                19 B   2026-03-02T10:00:00Z
orchestra://notes/blob               blob                            23 B   2026-03-02T10:00:00Z
orchestra://notes/caf%C3%A9%20notes  Café offsite                    16 B   2026-03-02T10:00:00Z
7 of 8 documents
",
        ),
        // A --db given is repeated.
        (
            &["ls", "notes", "--limit", "1", "--db", &db],
            (24, 100),
            MARKING_PAGER,
            &given_db,
        ),
        (
            &["ls", "--limit", "1", "--after", "notes/blob"],
            (24, 100),
            MARKING_PAGER,
            "\
orchestra://notes/caf%C3%A9%20notes  Café offsite  16 B  2026-03-02T10:00:00Z
1 of 8 documents
",
        ),
        // Narrow: the title gives way first, then the line is clipped.
        (
            &["ls", "features", "--limit", "1"],
            (24, 62),
            MARKING_PAGER,
            "\
orchestra://features/FEAT-001  Offline wor…  106 B  2026-03-0…
1 of 3 documents under features · next: orchestra ls features --limit 1 --after FEAT-001
",
        ),
        // Taller than the screen: through $PAGER, else directly when it cannot start.
        (&["ls"], (9, 120), MARKING_PAGER, &paged),
        (&["ls"], (10, 120), MARKING_PAGER, all),
        (
            &["ls"],
            (5, 120),
            &[("NO_COLOR", "1"), ("PAGER", "/nonexistent")],
            all,
        ),
        // Colour unless NO_COLOR: bold titles; dim sizes, times and footer.
        (
            &["ls", "features", "--limit", "1"],
            (24, 100),
            &[("PAGER", "cat")],
            "\
orchestra://features/FEAT-001  \u{1b}[1mOffline work orders\u{1b}[0m  \u{1b}[2m106 B\u{1b}[0m  \u{1b}[2m2026-03-02T10:00:00Z\u{1b}[0m
\u{1b}[2m1 of 3 documents under features · next: orchestra ls features --limit 1 --after FEAT-001\u{1b}[0m
",
        ),
    ];
    for &(args, screen, env, expected) in cases {
        assert_eq!(
            on_terminal(&p, args, screen, env),
            expected,
            "orchestra {} on {screen:?} with {env:?}",
            args.join(" ")
        );
    }
}

/// The bytes of the test project's file `path`.
fn file(path: &str) -> &'static [u8] {
    FILES.iter().find(|(p, _)| *p == path).unwrap().1
}

/// When the import `seq` of `p` committed, as `show` and `stats` print it.
pub(crate) fn import_time(p: &Project, seq: i64) -> String {
    let ms = Db::open(&p.db()).int("SELECT committed_ms FROM imports WHERE seq = $1", &[&seq]);
    humantime::format_rfc3339_seconds(UNIX_EPOCH + Duration::from_millis(ms as u64)).to_string()
}

#[test]
fn show_writes_the_stored_bytes_exactly() {
    let p = project();
    let cases = [
        ("features/FEAT-001", "features/FEAT-001.md"),
        ("orchestra://features/FEAT-001", "features/FEAT-001.md"),
        // Any spelling of the URI.
        ("ORCHESTRA://features/FEAT%2D001", "features/FEAT-001.md"),
        ("docs/adr/0001", "docs/adr/0001.md"),
        ("notes/café notes", "notes/café notes.md"),
        ("orchestra://notes/caf%C3%A9%20notes", "notes/café notes.md"),
        // Not UTF-8: the same bytes all the same.
        ("notes/blob", "notes/blob.md"),
        ("orchestra://notes/blob", "notes/blob.md"),
    ];
    for (reference, path) in cases {
        let out = cmd(&p, &["show", reference]).run_raw();
        assert_eq!(
            (out.code, out.stdout.as_slice(), out.stderr.as_slice()),
            (Some(0), file(path), &b""[..]),
            "show {reference}"
        );
    }
}

#[test]
fn show_meta_and_json() {
    let p = project();
    let time = import_time(&p, 1);
    let hash = |path: &str| blake3::hash(file(path)).to_hex().to_string();
    check(
        &p,
        &["show", "--meta", "features/FEAT-001"],
        0,
        &[
            "uri:         orchestra://features/FEAT-001",
            "title:       Offline work orders",
            r#"frontmatter: {"status":"shipped","tags":["offline","sync"],"title":"Offline work orders"}"#,
            "size:        106 bytes",
            &format!("hash:        {}", hash("features/FEAT-001.md")),
            "updated:     2026-03-02T10:00:00Z",
            &format!("import:      1 at {time}"),
        ],
        &[],
    );
    check(
        &p,
        &["show", "orchestra://docs/adr/0001", "--meta"],
        0,
        &[
            "uri:         orchestra://docs/adr/0001",
            "title:       ADR 0001: Record decisions",
            "description: Why we write decisions down",
            r#"frontmatter: {"description":"Why we write decisions down"}"#,
            "size:        78 bytes",
            &format!("hash:        {}", hash("docs/adr/0001.md")),
            "updated:     2026-03-02T10:00:00Z",
            &format!("import:      1 at {time}"),
        ],
        &[],
    );
    let base64 = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
    let cases: &[(&[&str], Value)] = &[
        (
            &["show", "features/FEAT-001", "--json"],
            json!({
                "uri": "orchestra://features/FEAT-001",
                "prefix": "features",
                "id": "FEAT-001",
                "title": "Offline work orders",
                "description": null,
                "frontmatter": {"title": "Offline work orders", "status": "shipped", "tags": ["offline", "sync"]},
                "size": 106,
                "hash": hash("features/FEAT-001.md"),
                "updated": "2026-03-02T10:00:00Z",
                "import": {"seq": 1, "time": time},
                "encoding": "utf-8",
                "body": std::str::from_utf8(file("features/FEAT-001.md")).unwrap(),
            }),
        ),
        (
            &["show", "notes/blob", "--json"],
            json!({
                "uri": "orchestra://notes/blob",
                "prefix": "notes",
                "id": "blob",
                "title": "blob",
                "description": null,
                "frontmatter": null,
                "size": 23,
                "hash": hash("notes/blob.md"),
                "updated": "2026-03-02T10:00:00Z",
                "import": {"seq": 1, "time": time},
                "encoding": "base64",
                "body": base64(file("notes/blob.md")),
            }),
        ),
        // --meta: the same without the body.
        (
            &["show", "docs/adr/0001", "--json", "--meta"],
            json!({
                "uri": "orchestra://docs/adr/0001",
                "prefix": "docs",
                "id": "adr/0001",
                "title": "ADR 0001: Record decisions",
                "description": "Why we write decisions down",
                "frontmatter": {"description": "Why we write decisions down"},
                "size": 78,
                "hash": hash("docs/adr/0001.md"),
                "updated": "2026-03-02T10:00:00Z",
                "import": {"seq": 1, "time": time},
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
fn show_exit_statuses() {
    let p = project();
    let cases: &[(&[&str], i32, &[&str])] = &[
        // Missing: 1, with the nearest ids of the prefix.
        (
            &["show", "features/FEAT-003"],
            1,
            &[
                "orchestra: no document features/FEAT-003",
                "did you mean: features/FEAT-001, features/FEAT-002, features/FEAT-010",
            ],
        ),
        (
            &["show", "orchestra://docs/adr/0003", "--meta"],
            1,
            &[
                "orchestra: no document docs/adr/0003",
                "did you mean: docs/adr/0001, docs/adr/0002, docs/guide",
            ],
        ),
        (
            &["show", "notes/cafe notes", "--json"],
            1,
            &[
                "orchestra: no document notes/cafe notes",
                "did you mean: notes/blob, notes/café notes",
            ],
        ),
        // Not a document's name: 2, saying why.
        (
            &["show", "FEAT-001"],
            2,
            &[
                "orchestra: \"FEAT-001\" names no document: write prefix/id (features/FEAT-001) or an orchestra:// uri",
            ],
        ),
        (
            &["show", "featurez/FEAT-001"],
            2,
            &["orchestra: \"featurez/FEAT-001\" names no prefix: use features, notes or docs"],
        ),
        (
            &["show", "orchestra://featurez/FEAT-001"],
            2,
            &[
                "orchestra: \"orchestra://featurez/FEAT-001\" is not a document uri: unknown prefix \"featurez\" in uri, expected docs, features or notes",
            ],
        ),
        (
            &["show", "features/a//b"],
            2,
            &["orchestra: \"features/a//b\" names no document: \"a//b\" cannot be an id"],
        ),
        (
            &["show", "features/FEAT-001", "--db", "missing.db"],
            2,
            &["orchestra: no database at missing.db: run `orchestra import DIR` first"],
        ),
    ];
    for &(args, code, stderr) in cases {
        check(&p, args, code, &[], stderr);
    }
    // No document of the prefix at all: nothing to suggest.
    let notes_only = project_of(&[("notes/a.md", b"# A\n")]);
    check(
        &notes_only,
        &["show", "features/FEAT-001"],
        1,
        &[],
        &["orchestra: no document features/FEAT-001"],
    );
}

#[test]
fn show_on_a_terminal_pages_text_only() {
    let p = project();
    let paged = |path: &str| -> String {
        let text = String::from_utf8_lossy(file(path));
        text.lines().map(|line| format!("paged:{line}\n")).collect()
    };
    let cases: &[(&[&str], Screen, Env, &str)] = &[
        // Text taller than the screen goes through the pager.
        (
            &["show", "features/FEAT-001"],
            (5, 80),
            MARKING_PAGER,
            &paged("features/FEAT-001.md"),
        ),
        (
            &["show", "features/FEAT-002"],
            (5, 80),
            MARKING_PAGER,
            "# Photo attachments\n",
        ),
        // Bytes that are not UTF-8 never do.
        (
            &["show", "notes/blob"],
            (2, 80),
            MARKING_PAGER,
            "# Blob\n\u{fffd}\u{fffd} not UTF-8 \0\u{1}\n",
        ),
        // --meta: keys dimmed with colour.
        (
            &["show", "features/FEAT-002", "--meta"],
            (24, 80),
            &[("PAGER", "cat")],
            "\u{1b}[2muri:\u{1b}[0m     orchestra://features/FEAT-002
\u{1b}[2mtitle:\u{1b}[0m   Photo attachments
\u{1b}[2msize:\u{1b}[0m    20 bytes
",
        ),
    ];
    for &(args, screen, env, expected) in cases {
        let out = on_terminal(&p, args, screen, env);
        // The lines after `size` hold the hash and times: compared above.
        let out: String = match args.contains(&"--meta") {
            true => out.split_inclusive('\n').take(3).collect(),
            false => out,
        };
        assert_eq!(out, expected, "orchestra {}", args.join(" "));
    }
}

/// The schema version this orchestra writes: its number of migrations
/// (for the store the tests run on).
pub fn migrations() -> usize {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("migrations")
        .join(if on_postgres() { "postgres" } else { "sqlite" });
    std::fs::read_dir(dir).unwrap().count()
}

#[test]
fn stats_counts_documents_and_bytes_per_prefix() {
    let p = project();
    let time = import_time(&p, 1);
    let root = p.dir().canonicalize().unwrap().display().to_string();
    // Documents and bytes of every prefix, from the files themselves.
    let count = |prefix: &str| {
        let files: Vec<&[u8]> = FILES
            .iter()
            .filter(|(path, _)| path.starts_with(&format!("{prefix}/")))
            .map(|(_, bytes)| *bytes)
            .collect();
        let bytes: usize = files.iter().map(|b| b.len()).sum();
        json!({"documents": files.len(), "bytes": bytes})
    };
    // A PostgreSQL database's size can move on its own (autovacuum):
    // `stats` saw it between these two.
    let size_before = database_bytes(&p.db());
    let out = run(&p, &["stats", "--json"]);
    let size_after = database_bytes(&p.db());
    out.assert_success();
    let mut stats: Value = serde_json::from_str(&out.stdout).unwrap();
    let (database, index) = (
        stats["database_bytes"].take().as_u64().unwrap(),
        stats["index_bytes"].take().as_u64().unwrap(),
    );
    assert_eq!(
        stats,
        json!({
            "documents": 8,
            "bytes": 313,
            "prefixes": {"docs": count("docs"), "features": count("features"), "notes": count("notes")},
            "history": {
                "versions": 8, "documents_with_history": 0, "bodies": 0,
                "stored_bytes": 0, "raw_bytes": 0, "compression_ratio": null,
            },
            "database_bytes": null,
            "index_bytes": null,
            "project_root": root,
            "schema_version": migrations(),
            "last_import": {"seq": 1, "time": time},
        })
    );
    let sizes = size_before.min(size_after)..=size_before.max(size_after);
    assert!(
        sizes.contains(&(database as i64)),
        "{database} not in {sizes:?}"
    );
    assert!(0 < index && index < database, "{index} of {database}");

    let out = run(&p, &["stats"]);
    out.assert_success();
    let lines = out.stdout_lines();
    let expected = [
        "documents:      8 (313 B)",
        "  docs:         3 (129 B)",
        "  features:     3 (145 B)",
        "  notes:        2 (39 B)",
        "history:        8 versions, 0 documents with more than one",
        "  past bodies:  0 (0 B stored, 0 B raw, ratio —)",
        "database:       <size> (search index <size>, <share>)",
        &format!("project:        {root}"),
        &format!("schema version: {}", migrations()),
        &format!("last import:    1 at {time}"),
    ];
    assert_eq!(lines.len(), expected.len(), "{out:?}");
    for (line, expected) in lines.iter().zip(expected) {
        match expected.strip_suffix(" <size> (search index <size>, <share>)") {
            Some(key) => assert!(
                line.starts_with(key) && line.contains(" (search index ") && line.ends_with("%)"),
                "{line}"
            ),
            None => assert_eq!(*line, expected),
        }
    }

    // Before any import: nothing counted, no last import.
    let empty = Project::new();
    empty.import(&[]).assert_success();
    let out = run(&empty, &["stats", "--json"]);
    out.assert_success();
    let stats: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(
        (&stats["documents"], &stats["bytes"], &stats["last_import"]),
        (&json!(0), &json!(0), &Value::Null)
    );
    check(
        &p,
        &["stats", "--db", "missing.db"],
        2,
        &[],
        &["orchestra: no database at missing.db: run `orchestra import DIR` first"],
    );
}

#[test]
fn off_a_terminal_there_is_no_colour_pager_or_clipping() {
    let long_title = format!("{}Long.", "Long ".repeat(59));
    assert_eq!(long_title.len(), 300);
    let body = format!("# {long_title}\n");
    let mut files = FILES.to_vec();
    files.push(("features/LONG.md", body.as_bytes()));
    let p = project_of(&files);
    let commands: &[&[&str]] = &[
        &["ls"],
        &["ls", "--json"],
        &["show", "features/FEAT-001"],
        &["show", "notes/blob"],
        &["show", "features/FEAT-001", "--meta"],
        &["show", "features/FEAT-001", "--json"],
        &["stats"],
        &["stats", "--json"],
    ];
    let insistent: &[Env] = &[
        &[("CLICOLOR_FORCE", "1"), ("PAGER", "false")],
        &[("CLICOLOR_FORCE", "1"), ("PAGER", "/nonexistent")],
        &[
            ("CLICOLOR", "1"),
            ("PAGER", "sed s/^/paged:/"),
            ("TERM", "xterm"),
        ],
    ];
    for args in commands {
        let plain = cmd(&p, args).run_raw();
        assert_eq!(plain.code, Some(0), "{args:?}: {plain:?}");
        assert!(!plain.stdout.contains(&0x1b), "{args:?}: no escape codes");
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
    // The whole title, however long.
    let out = run(&p, &["ls", "features"]);
    assert!(
        out.stdout_lines().contains(
            &format!("orchestra://features/LONG  {long_title}  303 B  2026-03-02T10:00:00Z")
                .as_str()
        ),
        "{out:?}"
    );
}

#[test]
fn the_commands_read_while_an_import_holds_the_write_lock() {
    let p = project();
    let mut writer = Db::writable(&p.db());
    writer.begin_as_import("FEAT-001");
    // Each sees the last commit.
    check(&p, &["ls", "features"], 0, &listing(3..6), &[]);
    let out = cmd(&p, &["show", "features/FEAT-001"]).run_raw();
    assert_eq!(out.stdout, file("features/FEAT-001.md"));
    let out = run(&p, &["stats", "--json"]);
    out.assert_success();
    assert!(out.stdout.starts_with("{\"documents\":8,"), "{out:?}");
    writer.batch("ROLLBACK");
}
