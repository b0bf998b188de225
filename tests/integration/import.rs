//! End-to-end tests of `orchestra import` on the real binary.
//!
//! What lands in the database, incremental runs, bad files, dry runs, fatal
//! errors and where the database goes. SIGKILL in the middle of an import is
//! in `faults.rs`.

use std::path::Path;

use crate::support::{
    Counts, Project, dump, keys, mtime_ns, on_postgres, pg_tables, project_row, row,
    stored_mtime_ns,
};

/// Every document of `fixtures/project`, in (prefix, id) order.
const FIXTURE_KEYS: &[&str] = &[
    "docs/adr/0001",
    "docs/adr/0002",
    "docs/adr/0003",
    "docs/adr/0004",
    "docs/adr/0005",
    "docs/adr/0006",
    "docs/guides/getting-started",
    "features/FEAT-001",
    "features/FEAT-002",
    "features/FEAT-003",
    "features/FEAT-004",
    "features/FEAT-005",
    "features/FEAT-006",
    "notes/café notes",
    "notes/customer-call-northwind",
    "notes/retro-sprint-14",
    "notes/standup-2026-03-02",
];

/// The file a key was imported from.
fn file_of(key: &str) -> String {
    format!("{key}.md")
}

fn sorted(mut lines: Vec<String>) -> Vec<String> {
    lines.sort();
    lines
}

// 1. The shipped fixture.

#[test]
fn fixture_is_imported_whole_and_byte_exact() {
    let p = Project::fixture();
    let before = p.snapshot();

    let out = p.import(&[]);

    out.assert_success();
    assert_eq!(out.stderr, "");
    assert_eq!(
        out.stdout_lines().len(),
        1,
        "one summary line: {}",
        out.stdout
    );
    assert_eq!(
        out.summary(),
        "imported project: 17 new, 0 updated, 0 removed, 0 unchanged, 0 skipped, 2 ignored in T s"
    );
    let rows = dump(&p.db());
    assert_eq!(keys(&p.db()), FIXTURE_KEYS);
    for r in &rows {
        let file = std::fs::read(p.path(&file_of(&r.key()))).unwrap();
        assert!(r.body == file, "{}: body differs from the file", r.key());
        assert!(r.is_text, "{}", r.key());
        assert_eq!(r.seq, 1, "{}", r.key());
    }
    // (key, title, description): frontmatter title, title from the first
    // `# ` heading when there is no frontmatter, a non-ASCII id.
    let expected = [
        (
            "features/FEAT-001",
            "Offline work orders",
            Some(
                "Technicians can open, edit and close work orders with no network, \
                 and changes sync when the device reconnects.",
            ),
        ),
        (
            "docs/adr/0001",
            "ADR 0001: Record architecture decisions",
            Some("We keep short, numbered architecture decision records in docs/adr."),
        ),
        (
            "notes/café notes",
            "Café Lumière offsite notes",
            Some(
                "Loose notes from the product offsite at Café Lumière \
                 — priorities for the next two quarters.",
            ),
        ),
        ("notes/retro-sprint-14", "Retro: sprint 14", None),
    ];
    for (key, title, description) in expected {
        let r = row(&p.db(), key);
        assert_eq!(
            (r.title.as_str(), r.description.as_deref()),
            (title, description),
            "{key}"
        );
    }
    let (root, seq) = project_row(&p.db());
    assert_eq!(root, p.dir().canonicalize().unwrap().to_str().unwrap());
    assert_eq!(seq, 1);
    assert!(
        p.snapshot() == before,
        "the import changed a source file (bytes or mtime)"
    );
}

#[test]
fn fixture_report_as_json() {
    let p = Project::fixture();

    let report = p.import_json(&[]);

    assert_eq!(
        report.counts(),
        Counts {
            new: 17,
            ignored: 2,
            ..Counts::default()
        }
    );
    assert_eq!(report.seq(), 1);
    assert_eq!(report.0["dry_run"], false);
    assert_eq!(report.0["dir"], "project");
    // On PostgreSQL, the database as the server the environment names
    // serves it: postgres://USER@HOST:PORT/NAME.
    let db = report.0["db"].as_str().unwrap();
    match p.db_arg().strip_prefix("postgres:///") {
        None => assert_eq!(db, ".orchestra/orchestra.db"),
        Some(name) => assert!(
            db.starts_with("postgres://") && db.ends_with(&format!("/{name}")),
            "{db}"
        ),
    }
    assert_eq!(report.warnings(), []);
    assert!(report.0["seconds"].as_f64().unwrap() >= 0.0);
}

// 2. Idempotence.

#[test]
fn reimport_changes_nothing() {
    let p = Project::fixture();
    p.import(&[]).assert_success();
    let rows = dump(&p.db());
    let project = project_row(&p.db());

    let report = p.import_json(&[]);

    assert_eq!(
        report.counts(),
        Counts {
            unchanged: 17,
            ignored: 2,
            ..Counts::default()
        }
    );
    assert_eq!(report.seq(), 0, "an import that changed nothing has seq 0");
    assert_eq!(dump(&p.db()), rows);
    assert_eq!(project_row(&p.db()), project);
    let out = p.import(&[]);
    assert_eq!(
        out.summary(),
        "imported project: 0 new, 0 updated, 0 removed, 17 unchanged, 0 skipped, 2 ignored in T s"
    );
}

// 3. Incremental changes.

#[test]
fn add_modify_delete_rename_and_touch_are_exactly_those_changes() {
    let p = Project::new();
    p.file("features/FEAT-001.md", "# One\n")
        .file("features/FEAT-002.md", "# Two\n")
        .file("features/FEAT-003.md", "# Three\n")
        .file("notes/a.md", "# A\n\nfirst\n")
        .file("notes/b.md", "# B\n")
        .file("docs/x.md", "# X\n");
    assert_eq!(p.import_json(&[]).counts().new, 6);
    let touched_before = row(&p.db(), "features/FEAT-002");

    p.file("features/FEAT-004.md", "# Four\n") // added
        .file("notes/a.md", "# A\n\nsecond, longer\n") // modified
        .remove("docs/x.md") // deleted
        .rename("notes/b.md", "notes/c.md") // renamed: removed + new
        .touch("features/FEAT-002.md"); // same bytes, new mtime
    let report = p.import_json(&[]);

    assert_eq!(
        report.counts(),
        Counts {
            new: 2,
            updated: 1,
            removed: 2,
            unchanged: 3,
            ..Counts::default()
        }
    );
    assert_eq!(report.seq(), 2);
    let got: Vec<(String, String, String, i64)> = dump(&p.db())
        .iter()
        .map(|r| {
            let body = String::from_utf8(r.body.clone()).unwrap();
            (r.key(), body, r.title.clone(), r.seq)
        })
        .collect();
    // (key, body, title, seq of the import that last changed it)
    let expected = [
        ("features/FEAT-001", "# One\n", "One", 1),
        ("features/FEAT-002", "# Two\n", "Two", 1),
        ("features/FEAT-003", "# Three\n", "Three", 1),
        ("features/FEAT-004", "# Four\n", "Four", 2),
        ("notes/a", "# A\n\nsecond, longer\n", "A", 2),
        ("notes/c", "# B\n", "B", 2),
    ];
    assert_eq!(
        got,
        expected.map(|(key, body, title, seq)| (key.into(), body.into(), title.into(), seq))
    );
    // The touched file's row was not rewritten, only its mtime recorded, so
    // the next import does not even read it.
    assert_eq!(row(&p.db(), "features/FEAT-002"), touched_before);
    assert_eq!(
        stored_mtime_ns(&p.db(), "features/FEAT-002"),
        mtime_ns(&p.path("features/FEAT-002.md"))
    );
    assert_eq!(project_row(&p.db()).1, 2);
}

#[test]
fn a_same_size_edit_is_an_update() {
    let p = Project::new();
    p.file("notes/n.md", "# Title\nversion 1\n");
    p.import(&[]).assert_success();

    p.file("notes/n.md", "# Title\nversion 2\n");
    let report = p.import_json(&[]);

    assert_eq!(
        report.counts(),
        Counts {
            updated: 1,
            ..Counts::default()
        }
    );
    assert_eq!(row(&p.db(), "notes/n").body, b"# Title\nversion 2\n");
    assert_eq!(row(&p.db(), "notes/n").seq, 2);
}

#[test]
fn only_touched_files_change_nothing_and_keep_seq() {
    let p = Project::fixture();
    p.import(&[]).assert_success();
    let rows = dump(&p.db());

    p.touch("features/FEAT-003.md").touch("notes/café notes.md");
    let report = p.import_json(&[]);

    assert_eq!(
        report.counts(),
        Counts {
            unchanged: 17,
            ignored: 2,
            ..Counts::default()
        }
    );
    assert_eq!(report.seq(), 0);
    assert_eq!(dump(&p.db()), rows);
    assert_eq!(project_row(&p.db()).1, 1);
    assert_eq!(
        stored_mtime_ns(&p.db(), "notes/café notes"),
        mtime_ns(&p.path("notes/café notes.md"))
    );
}

#[test]
fn a_removed_prefix_folder_removes_its_documents() {
    let p = Project::fixture();
    p.import(&[]).assert_success();

    std::fs::remove_dir_all(p.path("docs")).unwrap();
    let report = p.import_json(&[]);

    assert_eq!(
        report.counts(),
        Counts {
            removed: 7,
            unchanged: 10,
            ignored: 2,
            ..Counts::default()
        }
    );
    assert_eq!(keys(&p.db()), FIXTURE_KEYS[7..]);
}

// 4. Bad input.

/// `(path as reported, words the reason must contain)`.
type Expected = (&'static str, &'static str);

#[test]
fn bad_files_are_warned_about_and_good_files_imported() {
    let p = Project::new();
    let feat = "# One\n\nThe first feature.\n";
    p.file("features/FEAT-001.md", feat)
        .file("features/sub/FEAT-100.md", "# Hundred\n")
        .outside_file("outside/secret.md", "# Secret\n")
        .outside_file("outside/folder/x.md", "# X\n")
        .symlink(
            "features/to-outside-file.md",
            p.root_path("outside/secret.md"),
        )
        .symlink("notes/to-outside-folder", p.root_path("outside/folder"))
        .symlink("notes/alias.md", "../features/FEAT-001.md")
        .symlink("features/sub/up", "..")
        .symlink("docs/here", ".")
        .file("features/limit.md", vec![b'a'; 1000])
        .file("features/big.md", vec![b'a'; 1001])
        .file("notes/locked.md", "# Locked\n")
        .chmod("notes/locked.md", 0o000)
        .file("notes/latin1.md", b"# Caf\xe9\n")
        .file("notes/empty.md", "")
        .file(
            "docs/bad-frontmatter.md",
            "---\ntitle: [unclosed\n---\n# Heading Title\n\nBody.\n",
        )
        .file(".git/x.md", "# hidden folder\n")
        .file("features/.draft.md", "# hidden file\n")
        .file("docs/.obsidian/y.md", "# hidden folder\n")
        .file("features/diagram.png", "not markdown")
        .file("notes/todo.txt", "not markdown")
        .file("README.md", "not under a prefix");
    // Root reads a chmod 000 file anyway: then it is a good file.
    let locked_unreadable = std::fs::read(p.path("notes/locked.md")).is_err();

    let out = p.import(&["--json", "--max-file-size", "1000"]);

    out.assert_success();
    let report = out.report();
    let mut expected_warnings: Vec<Expected> = vec![
        ("project/docs/bad-frontmatter.md", "malformed frontmatter"),
        ("project/docs/here", "symlink loop"),
        (
            "project/features/big.md",
            "1001 bytes is over the limit of 1000",
        ),
        ("project/features/sub/up", "symlink loop"),
        ("project/features/to-outside-file.md", "outside the project"),
        ("project/notes/empty.md", "empty file"),
        ("project/notes/latin1.md", "not UTF-8"),
        ("project/notes/to-outside-folder", "outside the project"),
    ];
    let mut expected_keys = vec![
        "docs/bad-frontmatter",
        "features/FEAT-001",
        "features/limit",
        "features/sub/FEAT-100",
        "notes/alias",
        "notes/empty",
        "notes/latin1",
    ];
    if locked_unreadable {
        expected_warnings.push(("project/notes/locked.md", "cannot read"));
        expected_warnings.sort();
    } else {
        expected_keys.push("notes/locked");
    }
    let warnings = report.warnings();
    assert_eq!(
        warnings
            .iter()
            .map(|(path, _)| path.as_str())
            .collect::<Vec<_>>(),
        expected_warnings
            .iter()
            .map(|(path, _)| *path)
            .collect::<Vec<_>>(),
        "warned paths: {warnings:#?}"
    );
    for ((path, reason), (_, words)) in warnings.iter().zip(&expected_warnings) {
        assert!(reason.contains(words), "{path}: {reason:?} lacks {words:?}");
    }
    // The same warnings on stderr, one line each.
    assert_eq!(
        sorted(out.stderr_lines().iter().map(|s| s.to_string()).collect()),
        sorted(
            warnings
                .iter()
                .map(|(path, reason)| format!("warning: {path}: {reason}"))
                .collect()
        )
    );
    let skipped = 5 + u64::from(locked_unreadable);
    assert_eq!(
        report.counts(),
        Counts {
            new: expected_keys.len() as u64,
            skipped,
            // README.md, features/diagram.png, notes/todo.txt
            ignored: 3,
            ..Counts::default()
        }
    );
    assert_eq!(keys(&p.db()), expected_keys);

    let db = p.db();
    let alias = row(&db, "notes/alias");
    assert_eq!(
        (alias.body.as_slice(), alias.title.as_str()),
        (feat.as_bytes(), "One")
    );
    let latin1 = row(&db, "notes/latin1");
    assert_eq!(
        (latin1.body.as_slice(), latin1.is_text),
        (&b"# Caf\xe9\n"[..], false)
    );
    let empty = row(&db, "notes/empty");
    assert_eq!((empty.body.as_slice(), empty.is_text), (&b""[..], true));
    let bad = row(&db, "docs/bad-frontmatter");
    assert_eq!(bad.title, "Heading Title");
    assert_eq!(
        bad.body,
        std::fs::read(p.path("docs/bad-frontmatter.md")).unwrap()
    );
    assert_eq!(row(&db, "features/limit").body.len(), 1000);
    if !locked_unreadable {
        assert_eq!(row(&db, "notes/locked").body, b"# Locked\n");
    }
}

#[test]
fn a_file_name_that_is_not_utf8_is_skipped_with_a_warning() {
    use std::os::unix::ffi::OsStrExt;
    for json in [false, true] {
        let p = Project::new();
        p.file("notes/good.md", "# Good\n");
        let name = std::ffi::OsStr::from_bytes(b"bad-\xff.md");
        std::fs::write(p.path("notes").join(name), "# Bad name\n").unwrap();

        let out = p.import(if json { &["--json"] } else { &[] });

        assert_eq!(out.code, Some(0), "json: {json}: {out:#?}");
        let warnings = out.stderr_lines();
        assert_eq!(warnings.len(), 1, "json: {json}: {warnings:?}");
        assert!(
            warnings[0].starts_with("warning: project/notes/bad-")
                && warnings[0].contains("not UTF-8"),
            "{warnings:?}"
        );
        if json {
            let report = out.report();
            assert_eq!(
                report.counts(),
                Counts {
                    new: 1,
                    skipped: 1,
                    ..Counts::default()
                }
            );
            let warnings = report.warnings();
            assert_eq!(warnings.len(), 1, "{warnings:?}");
            assert!(
                warnings[0].0.starts_with("project/notes/bad-"),
                "{warnings:?}"
            );
            assert!(warnings[0].1.contains("not UTF-8"), "{warnings:?}");
        } else {
            assert_eq!(
                out.summary(),
                "imported project: 1 new, 0 updated, 0 removed, 0 unchanged, 1 skipped (warnings above), 0 ignored in T s"
            );
        }
        assert_eq!(keys(&p.db()), ["notes/good"]);
    }
}

#[test]
fn a_stored_document_grown_over_the_limit_is_skipped_and_kept() {
    // As for an unreadable file: skipped, and the stored copy is kept (a
    // file that grows between the walk and its read is already treated so).
    let p = Project::new();
    p.file("notes/n.md", "# N\n").file("notes/m.md", "# M\n");
    p.import(&[]).assert_success();
    let rows = dump(&p.db());

    p.file("notes/n.md", vec![b'x'; 200]);
    let report = p.import_json(&["--max-file-size", "100"]);

    assert_eq!(
        report.counts(),
        Counts {
            unchanged: 1,
            skipped: 1,
            ..Counts::default()
        },
        "{:?}",
        report.warnings()
    );
    assert_eq!(dump(&p.db()), rows);
}

#[test]
fn a_stored_document_that_became_unreadable_is_skipped_and_kept() {
    let p = Project::new();
    p.file("notes/n.md", "# N\n").file("notes/m.md", "# M\n");
    p.import(&[]).assert_success();
    let rows = dump(&p.db());

    p.file("notes/n.md", "# N\n\nedited, then locked\n")
        .chmod("notes/n.md", 0o000);
    // Root reads a chmod 000 file anyway: then it is a plain update.
    let unreadable = std::fs::read(p.path("notes/n.md")).is_err();
    let report = p.import_json(&[]);

    if unreadable {
        assert_eq!(
            report.counts(),
            Counts {
                unchanged: 1,
                skipped: 1,
                ..Counts::default()
            }
        );
        let warnings = report.warnings();
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert_eq!(warnings[0].0, "project/notes/n.md");
        assert!(warnings[0].1.contains("cannot read"), "{warnings:?}");
        assert_eq!(dump(&p.db()), rows, "the stored copy is kept");
    } else {
        assert_eq!(
            report.counts(),
            Counts {
                updated: 1,
                unchanged: 1,
                ..Counts::default()
            }
        );
        assert_eq!(
            row(&p.db(), "notes/n").body,
            b"# N\n\nedited, then locked\n"
        );
    }
}

// 5. Exit status with skipped files.

#[test]
fn skipped_files_still_exit_0_and_the_summary_points_at_the_warnings() {
    let p = Project::new();
    p.file("features/FEAT-001.md", "# small\n")
        .file("features/FEAT-002.md", vec![b'x'; 101]);

    let out = p.import(&["--max-file-size", "100"]);

    out.assert_success();
    assert_eq!(
        out.summary(),
        "imported project: 1 new, 0 updated, 0 removed, 0 unchanged, 1 skipped (warnings above), 0 ignored in T s"
    );
    assert_eq!(
        out.stderr_lines(),
        ["warning: project/features/FEAT-002.md: 101 bytes is over the limit of 100: skipped"]
    );
    assert_eq!(keys(&p.db()), ["features/FEAT-001"]);
}

// 6. Dry runs.

#[test]
fn dry_run_on_a_fresh_folder_creates_no_database() {
    let p = Project::fixture();

    let out = p.import(&["--dry-run"]);

    out.assert_success();
    let mut lines: Vec<String> = out.stdout_lines().iter().map(|s| s.to_string()).collect();
    let summary = super::support::mask_seconds(&lines.pop().unwrap());
    assert_eq!(
        summary,
        "would import project: 17 new, 0 updated, 0 removed, 0 unchanged, 0 skipped, 2 ignored in T s"
    );
    assert_eq!(
        sorted(lines),
        FIXTURE_KEYS
            .iter()
            .map(|k| format!("new {k}"))
            .collect::<Vec<_>>()
    );
    assert!(!p.db().exists(), "--dry-run created the database");
    assert!(
        !p.root_path(".orchestra").exists(),
        "--dry-run created the database folder"
    );
    if on_postgres() {
        assert_eq!(pg_tables(&p.db()), [], "--dry-run wrote a schema");
    }
}

/// What a dry run leaves as it was: the bytes of the database file and of
/// its WAL (empty when there is none); on PostgreSQL, every row of every
/// table.
#[derive(PartialEq)]
enum DbFiles {
    Sqlite(Vec<u8>, Vec<u8>),
    Postgres(Vec<(String, Vec<String>)>),
}

fn db_files(db: &Path) -> DbFiles {
    if on_postgres() {
        return DbFiles::Postgres(pg_tables(db));
    }
    let wal = db.with_file_name(format!("{}-wal", db.file_name().unwrap().to_str().unwrap()));
    DbFiles::Sqlite(
        std::fs::read(db).unwrap(),
        std::fs::read(wal).unwrap_or_default(),
    )
}

#[test]
fn dry_run_lists_exactly_the_changes_and_writes_nothing() {
    let p = Project::fixture();
    p.import(&[]).assert_success();
    p.file("features/FEAT-007.md", "# Seven\n")
        .file(
            "notes/retro-sprint-14.md",
            "# Retro: sprint 14\n\nRewritten.\n",
        )
        .remove("docs/adr/0006.md")
        .touch("features/FEAT-001.md");
    let files = db_files(&p.db());
    let rows = dump(&p.db());
    let project = project_row(&p.db());

    let out = p.import(&["--dry-run"]);

    out.assert_success();
    let mut lines: Vec<String> = out.stdout_lines().iter().map(|s| s.to_string()).collect();
    let summary = super::support::mask_seconds(&lines.pop().unwrap());
    assert_eq!(
        sorted(lines),
        [
            "new features/FEAT-007",
            "removed docs/adr/0006",
            "updated notes/retro-sprint-14",
        ]
    );
    assert_eq!(
        summary,
        "would import project: 1 new, 1 updated, 1 removed, 15 unchanged, 0 skipped, 2 ignored in T s"
    );
    assert!(
        db_files(&p.db()) == files,
        "--dry-run wrote to the database"
    );
    assert_eq!(dump(&p.db()), rows);
    assert_eq!(project_row(&p.db()), project);
    // The touched file's new mtime is not recorded either.
    assert_ne!(
        stored_mtime_ns(&p.db(), "features/FEAT-001"),
        mtime_ns(&p.path("features/FEAT-001.md"))
    );

    // The JSON form says the same, and the real import then does just that.
    let preview = p.import_json(&["--dry-run"]);
    assert_eq!(preview.0["dry_run"], true);
    assert_eq!(preview.seq(), 0);
    assert!(db_files(&p.db()) == files, "--dry-run --json wrote");
    let real = p.import_json(&[]);
    assert_eq!(real.0["dry_run"], false);
    assert_eq!(real.counts(), preview.counts());
    assert_eq!(
        real.counts(),
        Counts {
            new: 1,
            updated: 1,
            removed: 1,
            unchanged: 15,
            ignored: 2,
            ..Counts::default()
        }
    );
}

// 7. One database, one project.

#[test]
fn another_project_is_refused_then_replaced_with_replace() {
    let p = Project::fixture();
    p.outside_file("other/features/B-1.md", "# B one\n")
        .outside_file("other/notes/b.md", "# B note\n");
    p.import(&[]).assert_success();
    let rows = dump(&p.db());
    let project = project_row(&p.db());
    let a = p.dir().canonicalize().unwrap();
    let b = p.root_path("other").canonicalize().unwrap();

    for args in [&["import", "other"][..], &["import", "other", "--dry-run"]] {
        let line = p.run(args).fatal_line();
        assert!(
            line.contains(a.to_str().unwrap()) && line.contains(b.to_str().unwrap()),
            "{args:?}: the error names both projects: {line}"
        );
        assert!(line.contains("--replace"), "{line}");
        assert_eq!(dump(&p.db()), rows, "{args:?} changed the database");
        assert_eq!(project_row(&p.db()), project);
    }

    let out = p.run(&["import", "other", "--replace", "--json"]);

    out.assert_success();
    assert_eq!(out.report().counts().new, 2);
    assert_eq!(keys(&p.db()), ["features/B-1", "notes/b"]);
    assert_eq!(row(&p.db(), "notes/b").body, b"# B note\n");
    assert_eq!(project_row(&p.db()).0, b.to_str().unwrap());
}

// 8. Fatal errors.

#[test]
fn a_missing_folder_is_one_line_and_no_database() {
    let p = Project::new();

    let line = p.run(&["import", "missing"]).fatal_line();

    assert!(line.contains("missing"), "{line}");
    assert!(line.contains("no such folder"), "{line}");
    assert!(!p.root_path(".orchestra").exists());
}

#[test]
fn a_file_given_as_the_folder_is_one_line_and_no_database() {
    let p = Project::new();
    p.outside_file("notes.md", "# not a folder\n");

    let line = p.run(&["import", "notes.md"]).fatal_line();

    assert!(line.contains("notes.md"), "{line}");
    assert!(line.contains("not a folder"), "{line}");
    assert!(!p.root_path(".orchestra").exists());
}

#[test]
fn a_database_that_cannot_be_created_is_one_line() {
    // A regular file as the parent folder: fails for root too.
    let p = Project::fixture();
    p.outside_file("blocker", "a file, not a folder");

    let line = p
        .run(&["import", "project", "--db", "blocker/orchestra.db"])
        .fatal_line();

    assert!(line.contains("blocker"), "{line}");
    assert_eq!(
        std::fs::read(p.root_path("blocker")).unwrap(),
        b"a file, not a folder"
    );
    assert!(!p.db().exists());
}

#[test]
fn a_file_that_is_not_a_database_is_refused_and_left_alone() {
    let p = Project::fixture();
    p.outside_file("notes.db", "these are notes, not SQLite\n");

    let line = p
        .run(&["import", "project", "--db", "notes.db"])
        .fatal_line();

    assert!(line.contains("not a database"), "{line}");
    assert_eq!(
        std::fs::read(p.root_path("notes.db")).unwrap(),
        b"these are notes, not SQLite\n"
    );
}

#[test]
fn usage_errors_exit_2() {
    let p = Project::fixture();
    for args in [
        &["import", "project", "--frobnicate"][..],
        &["import"],
        &["import", "project", "--max-file-size", "lots"],
    ] {
        let out = p.run(args);
        assert_eq!(out.code, Some(2), "{args:?}: {out:#?}");
        assert!(!out.stderr.is_empty(), "{args:?}");
        assert!(!p.root_path(".orchestra").exists(), "{args:?}");
    }
}

// 9. Where the database goes.

#[test]
fn db_flag_then_env_then_default_under_the_working_folder() {
    let p = Project::fixture();
    let default_db = p.db();

    // --db, parents created; reported as given.
    let out = p.run(&["import", "project", "--db", "custom/sub/x.db", "--json"]);
    out.assert_success();
    assert_eq!(out.report().0["db"], "custom/sub/x.db");
    assert_eq!(keys(&p.root_path("custom/sub/x.db")), FIXTURE_KEYS);
    assert!(!default_db.exists());

    // $ORCHESTRA_DB.
    let out = p
        .cmd(&["import", "project"])
        .env("ORCHESTRA_DB", "env/y.db")
        .run();
    out.assert_success();
    assert_eq!(keys(&p.root_path("env/y.db")), FIXTURE_KEYS);
    assert!(!default_db.exists());

    // --db wins over $ORCHESTRA_DB.
    let out = p
        .cmd(&["import", "project", "--db", "flag.db"])
        .env("ORCHESTRA_DB", "env/z.db")
        .run();
    out.assert_success();
    assert!(p.root_path("flag.db").exists());
    assert!(!p.root_path("env/z.db").exists());
    assert!(!default_db.exists());

    // Neither: .orchestra/orchestra.db under the working folder, not the project.
    std::fs::create_dir(p.root_path("work")).unwrap();
    let out = p
        .cmd(&["import", "../project"])
        .current_dir(p.root_path("work"))
        .run();
    out.assert_success();
    assert_eq!(
        keys(&p.root_path("work/.orchestra/orchestra.db")),
        FIXTURE_KEYS
    );
    assert!(!p.path(".orchestra").exists());
    assert!(!default_db.exists());

    // The .orchestra/ folder keeps itself out of git: a .gitignore of `*`
    // there, none in the folders a --db names, and a .gitignore already in
    // .orchestra/ (or beside it) left as it was.
    let ignore = std::fs::read_to_string(p.root_path("work/.orchestra/.gitignore")).unwrap();
    assert_eq!(
        ignore
            .lines()
            .filter(|l| !l.starts_with('#'))
            .collect::<Vec<_>>(),
        ["*"]
    );
    assert!(!p.root_path("work/.gitignore").exists());
    assert!(!p.root_path("custom/sub/.gitignore").exists());
    assert!(!p.root_path("env/.gitignore").exists());
    p.outside_file("mine/.orchestra/.gitignore", "orchestra.db\n");
    p.outside_file("mine/.gitignore", "target/\n");
    let out = p.run(&["import", "project", "--db", "mine/.orchestra/orchestra.db"]);
    out.assert_success();
    let kept = |rel: &str| std::fs::read_to_string(p.root_path(rel)).unwrap();
    assert_eq!(kept("mine/.orchestra/.gitignore"), "orchestra.db\n");
    assert_eq!(kept("mine/.gitignore"), "target/\n");
}

// 10. SIGKILL at any moment leaves the last committed state: see
// faults::sigkill_at_random_moments_of_a_20k_document_import_leaves_the_old_or_the_new_state.
