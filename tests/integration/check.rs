//! `orchestra check` on the real binary: a project with one planted problem of each kind, each reported once on its file and line (as lines and as JSON Lines), exit 1; the same project repaired, exit 0; and the errors, exit 2.

use serde_json::Value;

use crate::cli::{check, run};
use crate::support::Project;

/// A project with no problem: links of every kind that resolve, a bare id
/// that is no document's (no link), frontmatter that parses, and a link
/// to a missing document inside code, which is no link.
fn clean() -> Project {
    let p = Project::new();
    p.file(
        "features/FEAT-001.md",
        "---\ntitle: Sync\nstatus: open\n---\n# Sync\n\nSee [the note](../notes/sync.md), FEAT-002 and <orchestra://docs/adr/0006>.\n\
         Not FEAT-999, and not `[x](FEAT-404.md)`.\n",
    );
    p.file("features/FEAT-002.md", "# Offline\n");
    p.file("notes/sync.md", "# Sync notes\n");
    p.file("docs/adr/0006.md", "# Decision\n");
    p
}

/// The problems planted into the clean project, one of each kind, and the
/// line each must be reported as.
fn plant(p: &Project) -> Vec<&'static str> {
    // A broken link on line 3.
    p.file(
        "notes/links.md",
        "# Links\n\nSee [gone](../features/FEAT-404.md).\n",
    );
    // Frontmatter whose list is never closed: the parser notices at the
    // block's end, the fourth line.
    p.file(
        "notes/bad.md",
        "---\ntitle: Bad\nlist: [unclosed\n---\n# Bad\n",
    );
    // Not UTF-8 from its second line.
    p.file("notes/latin1.md", b"# Caf\n\nd\xe9j\xe0 vu\n");
    // An id that differs from another only in case.
    p.file("docs/adr/0006-Decision.md", "# ADR six\n");
    p.file("docs/adr/0006-decision.md", "# ADR six, again\n");
    // A file the import skips: over --max-file-size.
    p.file("docs/huge.md", "x".repeat(5000));
    // A second document of features titled "Sync" (its frontmatter's line 2).
    p.file("features/FEAT-003.md", "---\ntitle: Sync\n---\n# Sync\n");
    vec![
        "project/docs/adr/0006-decision.md:1: case-collision: its name differs from docs/adr/0006-Decision.md only in case: they are one file on a case-insensitive file system (macOS, Windows)",
        "project/docs/huge.md:1: skipped: the last import left it out: 5000 bytes is over the limit of 4096",
        "project/features/FEAT-003.md:2: duplicate-title: \"Sync\" is also the title of features/FEAT-001.md: in lists and search the two differ only by their ids",
        "project/notes/bad.md:4: frontmatter: malformed frontmatter: did not find expected ',' or ']' at line 3 column 1, while parsing a flow sequence at line 2 column 7: its title, description and fields are not read",
        "project/notes/latin1.md:3: not-utf8: not UTF-8 (byte 8 is not): imported as a binary document, which is not searched, linked or shown as text",
        "project/notes/links.md:3: broken-link: \"gone\" links to orchestra://features/FEAT-404, which is not in the project (features/FEAT-404.md is missing)",
    ]
}

#[test]
fn a_clean_project_passes() {
    let p = clean();
    p.import(&[]).assert_success();
    check(&p, &["check", "project"], 0, &[], &[]);
    check(&p, &["check", "project", "--json"], 0, &[], &[]);
}

#[test]
fn each_planted_problem_is_reported_once_on_its_line() {
    let p = clean();
    let expected = plant(&p);
    p.import(&["--max-file-size", "4096"]).assert_success();
    check(
        &p,
        &["check", "project"],
        1,
        &expected,
        &["orchestra: 6 problems in 6 files"],
    );

    // The same as JSON Lines, with the broken link's target.
    let out = run(&p, &["check", "project", "--json"]);
    assert_eq!(out.code, Some(1), "{out:?}");
    let lines: Vec<Value> = out
        .stdout_lines()
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let as_text: Vec<String> = lines
        .iter()
        .map(|l| {
            format!(
                "{}:{}: {}: {}",
                l["path"].as_str().unwrap(),
                l["line"],
                l["kind"].as_str().unwrap(),
                l["message"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(as_text, expected);
    let targets: Vec<&Value> = lines.iter().map(|l| &l["target"]).collect();
    assert_eq!(
        targets.iter().filter(|t| !t.is_null()).collect::<Vec<_>>(),
        [&&Value::from("orchestra://features/FEAT-404")]
    );

    // Repaired and imported again: clean, and the skipped list is the last
    // import's.
    p.file("features/FEAT-404.md", "# Back\n");
    p.remove("notes/bad.md");
    p.file("notes/latin1.md", "# Café\n");
    p.remove("docs/adr/0006-Decision.md");
    p.remove("docs/huge.md");
    p.file("features/FEAT-003.md", "---\ntitle: Sync, again\n---\n");
    p.import(&["--max-file-size", "4096"]).assert_success();
    check(&p, &["check", "project"], 0, &[], &[]);
}

#[test]
fn paths_follow_the_folder_named_and_errors_exit_2() {
    let p = clean();
    p.file("notes/links.md", "[gone](orchestra://notes/none)\n");
    // No database yet.
    let out = run(&p, &["check"]);
    assert_eq!(out.code, Some(2), "{out:?}");
    assert_eq!(out.stdout, "");
    p.import(&[]).assert_success();
    // Without DIR, from outside the project: paths under the project's own
    // (absolute) folder.
    let out = run(&p, &["check"]);
    assert_eq!(out.code, Some(1), "{out:?}");
    let dir = p.dir().canonicalize().unwrap();
    assert_eq!(
        out.stdout_lines(),
        [format!(
            "{}/notes/links.md:1: broken-link: \"gone\" links to orchestra://notes/none, which is not in the project (notes/none.md is missing)",
            dir.display()
        )]
    );
    // A folder that is not the project the database holds.
    std::fs::create_dir(p.root_path("elsewhere")).unwrap();
    let out = run(&p, &["check", "elsewhere"]);
    assert_eq!(out.code, Some(2), "{out:?}");
    assert!(
        out.stderr
            .contains("elsewhere is not the project the database holds"),
        "{out:?}"
    );
}
