//! End-to-end tests of search on the real binary: `orchestra search` (output, exit status, read-only use beside a writer), `GET /search` over HTTP, and the upgrade of a database made before search.

use std::path::Path;

use rusqlite::Connection;
use serde_json::Value;

use crate::http::{HttpServer, encode, fixture_project};
use crate::support::{Db, Output, Project, search_check};

fn search(p: &Project, args: &[&str]) -> Output {
    let mut all = vec!["search"];
    all.extend_from_slice(args);
    p.run(&all)
}

/// The URIs of a plain (not terminal) search, in order.
fn uris(out: &Output) -> Vec<String> {
    out.stdout_lines()
        .iter()
        .map(|line| line.split("  ").next().unwrap().to_string())
        .collect()
}

#[test]
fn search_prints_one_hit_per_line_best_first() {
    let p = fixture_project();
    let cases: &[(&[&str], &[&str])] = &[
        (
            &["\"offline work orders\"", "--limit", "1"],
            &["orchestra://features/FEAT-001"],
        ),
        (
            &["offline", "work", "orders"],
            &[
                "orchestra://features/FEAT-001",
                "orchestra://docs/adr/0002",
                "orchestra://docs/adr/0003",
            ],
        ),
        (&["cafe lumiere"], &["orchestra://notes/caf%C3%A9%20notes"]),
        // The document named by the id first, then one that mentions it.
        (
            &["FEAT-001", "--under", "features"],
            &[
                "orchestra://features/FEAT-001",
                "orchestra://features/FEAT-004",
            ],
        ),
        (
            &[
                "",
                "--under",
                "docs/adr",
                "--where",
                "status=accepted",
                "--limit",
                "2",
            ],
            &["orchestra://docs/adr/0001", "orchestra://docs/adr/0002"],
        ),
        (
            &["", "--where", "tags=offline", "--where", "status=shipped"],
            &["orchestra://features/FEAT-001"],
        ),
    ];
    for (args, expected) in cases {
        let out = search(&p, args);
        out.assert_success();
        assert_eq!(uris(&out), *expected, "{args:?}: {out:?}");
        assert_eq!(out.stderr, "", "{args:?}");
    }
    // Not a terminal: no alignment, no footer; the line is URI, title, snippet.
    let out = search(&p, &["photo", "--limit", "1"]);
    let line = out.stdout_lines()[0].to_string();
    let columns: Vec<&str> = line.splitn(3, "  ").collect();
    assert_eq!(columns.len(), 3, "{line}");
    assert!(columns[2].to_lowercase().contains("**photo"), "{line}");
}

#[test]
fn search_json_lines_and_exit_statuses() {
    let p = fixture_project();
    let out = search(&p, &["sync", "--json"]);
    out.assert_success();
    let hits: Vec<Value> = out
        .stdout_lines()
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(hits.len() >= 3, "{out:?}");
    for pair in hits.windows(2) {
        assert!(
            pair[0]["score"].as_f64() >= pair[1]["score"].as_f64(),
            "{pair:?}"
        );
    }
    for hit in &hits {
        assert!(hit["uri"].as_str().unwrap().starts_with("orchestra://"));
        assert!(hit["title"].is_string() && hit["snippet"].is_string());
    }

    // Nothing matched: 1, as grep; nothing printed.
    let out = search(&p, &["xylophone"]);
    assert_eq!(
        (out.code, out.stdout.as_str(), out.stderr.as_str()),
        (Some(1), "", "")
    );

    // Usage errors: 2, one line naming what to change.
    let usage: &[(&[&str], &str)] = &[
        (
            &["x", "--limit", "0"],
            "limit must be an integer from 1 to 100",
        ),
        (
            &["x", "--limit", "101"],
            "limit must be an integer from 1 to 100",
        ),
        (&["x", "--under", "featurez"], "names no prefix"),
        (&["x", "--where", "status"], "KEY=VALUE"),
        (&["x", "--cursor", "AAAA"], "invalid cursor"),
        (&["x", "--db", "missing.db"], "no database at missing.db"),
    ];
    for (args, says) in usage {
        let out = search(&p, args);
        assert_eq!(out.code, Some(2), "{args:?}: {out:?}");
        assert_eq!(out.stdout, "", "{args:?}");
        let lines = out.stderr_lines();
        assert_eq!(lines.len(), 1, "{args:?}: {out:?}");
        assert!(
            lines[0].starts_with("orchestra: ") && lines[0].contains(says),
            "{args:?}: {out:?}"
        );
    }
    let out = search(&p, &[]);
    assert_eq!(out.code, Some(2), "a missing query is a clap usage error");
    // An exclusion after `--`.
    let out = search(&p, &["sync", "--json", "--", "-offline"]);
    out.assert_success();
    assert!(out.stdout_lines().len() < hits.len(), "{out:?}");
    assert!(
        !out.stdout.contains("orchestra://features/FEAT-001\""),
        "{out:?}"
    );
}

#[test]
fn search_reads_while_an_import_holds_the_write_lock() {
    let p = fixture_project();
    let mut writer = Db::writable(&p.db());
    writer.begin_as_import("FEAT-001");
    let out = search(&p, &["offline", "work", "orders"]);
    out.assert_success();
    assert_eq!(
        uris(&out),
        [
            "orchestra://features/FEAT-001",
            "orchestra://docs/adr/0002",
            "orchestra://docs/adr/0003"
        ],
        "the last commit: {out:?}"
    );
    writer.batch("ROLLBACK");
}

/// A database as orchestra wrote it before search (schema version 3).
fn database_before_search(p: &Project, docs: usize) {
    let db = p.db();
    std::fs::create_dir_all(db.parent().unwrap()).unwrap();
    let conn = Connection::open(&db).unwrap();
    for migration in [
        "0001_documents.sql",
        "0002_changes.sql",
        "0003_listing_index.sql",
    ] {
        let sql = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("migrations/sqlite")
                .join(migration),
        )
        .unwrap();
        conn.execute_batch(&sql).unwrap();
    }
    conn.pragma_update(None, "user_version", 3).unwrap();
    let root = p.dir().canonicalize().unwrap();
    conn.execute(
        "INSERT INTO project (singleton, root, seq) VALUES (1, ?1, 1)",
        [root.to_str().unwrap()],
    )
    .unwrap();
    for i in 0..docs {
        let body = format!("---\nstatus: open\n---\n# Old {i}\n\nquartz number {i}\n");
        conn.execute(
            "INSERT INTO documents VALUES ('notes', ?1, ?2, 0, zeroblob(32), 1, ?3, NULL,
                 '{\"status\":\"open\"}', 1, CAST(?4 AS BLOB))",
            rusqlite::params![
                format!("old-{i}"),
                body.len() as i64,
                format!("Old {i}"),
                body
            ],
        )
        .unwrap();
    }
}

#[test]
fn a_database_from_before_search_is_indexed_on_the_next_serve_or_import() {
    for command in ["import", "serve"] {
        let p = Project::new();
        p.file("notes/new.md", "# New\n\nquartz too\n");
        database_before_search(&p, 50);

        // Read-only commands do not upgrade: they say how.
        let out = search(&p, &["quartz"]);
        assert_eq!(out.code, Some(2), "{out:?}");
        assert!(
            out.stderr
                .contains("run `orchestra import DIR` or `orchestra serve` once")
        );

        let out = match command {
            "import" => p.import(&[]),
            _ => p
                .cmd(&["serve", "--db", ".orchestra/orchestra.db"])
                .input(Vec::new())
                .run(),
        };
        out.assert_success();
        assert!(
            out.stderr.contains(&format!(
                "upgrading the database from schema 3 to {} (50 documents)",
                crate::cli::migrations()
            )),
            "{command}: {out:?}"
        );
        assert_eq!(search_check(&p.db()), "ok");
        let out = search(&p, &["quartz", "--limit", "100", "--json"]);
        out.assert_success();
        // The import also removed the stored notes the folder lacks.
        let expected = if command == "import" { 1 } else { 50 };
        assert_eq!(out.stdout_lines().len(), expected, "{command}: {out:?}");
        let out = search(
            &p,
            &["", "--where", "status=open", "--limit", "100", "--json"],
        );
        assert_eq!(
            out.stdout_lines().len(),
            expected - (command == "import") as usize
        );
        // Once only.
        let out = p
            .cmd(&["serve", "--db", ".orchestra/orchestra.db"])
            .input(Vec::new())
            .run();
        assert!(!out.stderr.contains("upgrading"), "{out:?}");
    }
}

#[test]
fn the_search_check_sees_an_index_that_differs_from_the_documents() {
    let p = fixture_project();
    assert_eq!(search_check(&p.db()), "ok");
    let conn = Connection::open(p.db()).unwrap();
    conn.execute(
        "DELETE FROM fields WHERE rowid = (SELECT min(id) FROM fields_docsize)",
        [],
    )
    .unwrap();
    assert!(search_check(&p.db()).contains("field rows differ"));
    let p = fixture_project();
    let conn = Connection::open(p.db()).unwrap();
    conn.execute(
        "INSERT INTO fields (rowid, pairs) VALUES (1000000, '0123456789abcdef0123456789abcdef')",
        [],
    )
    .unwrap();
    assert!(search_check(&p.db()).contains("1 frontmatter field rows differ"));
    let p = fixture_project();
    let conn = Connection::open(p.db()).unwrap();
    // The trap of external-content tables: a delete without the old values.
    conn.execute(
        "INSERT INTO search (search, rowid) VALUES ('delete', 1)",
        [],
    )
    .unwrap();
    conn.execute(
        "UPDATE documents SET title = 'changed behind the index' WHERE rowid = 2",
        [],
    )
    .unwrap();
    assert_ne!(search_check(&p.db()), "ok");
}

fn search_path(params: &[(&str, &str)]) -> String {
    let query: Vec<String> = params
        .iter()
        .map(|(k, v)| format!("{k}={}", encode(v, b"")))
        .collect();
    format!("/search?{}", query.join("&"))
}

#[test]
fn the_search_endpoint_answers_the_tool_shape() {
    let p = fixture_project();
    let s = HttpServer::start(&p, &[]);
    let resp = s
        .request("GET", &search_path(&[("q", "sync"), ("limit", "2")]))
        .send();
    resp.expect(200);
    let page = resp.json();
    let total = page["total"].as_u64().unwrap();
    assert!(total > 2, "{page}");
    let mut seen: Vec<Value> = page["hits"].as_array().unwrap().clone();
    let mut cursor = page["nextCursor"].as_str().map(str::to_string);
    while let Some(c) = cursor {
        let page = s
            .request(
                "GET",
                &search_path(&[("q", "sync"), ("limit", "2"), ("cursor", &c)]),
            )
            .send()
            .json();
        seen.extend(page["hits"].as_array().unwrap().iter().cloned());
        cursor = page["nextCursor"].as_str().map(str::to_string);
    }
    assert_eq!(seen.len() as u64, total);
    let mut uris: Vec<&str> = seen.iter().map(|h| h["uri"].as_str().unwrap()).collect();
    uris.sort();
    uris.dedup();
    assert_eq!(uris.len() as u64, total, "no hit twice");

    let page = s
        .request(
            "GET",
            &search_path(&[
                ("q", ""),
                ("where", "status=shipped"),
                ("where", "tags=offline"),
            ]),
        )
        .send()
        .json();
    assert_eq!(
        page["hits"][0]["uri"], "orchestra://features/FEAT-001",
        "{page}"
    );
    assert_eq!(page["total"], 1);

    for bad in [
        search_path(&[("q", "x"), ("limit", "0")]),
        search_path(&[("q", "x"), ("under", "nope")]),
        search_path(&[("q", "x"), ("where", "novalue")]),
        search_path(&[("q", "x"), ("cursor", "AAAA")]),
        search_path(&[("q", "x"), ("other", "1")]),
        search_path(&[("q", &"x".repeat(4097))]),
    ] {
        let resp = s.request("GET", &bad).send();
        assert_eq!(resp.status, 400, "{bad}: {resp:?}");
        assert!(resp.json()["error"].is_string(), "{resp:?}");
    }
    // The same gate as every route.
    let resp = s
        .request("GET", &search_path(&[("q", "x")]))
        .origin("http://evil.example")
        .send();
    assert_eq!(resp.status, 403);
}

#[test]
fn a_question_is_relaxed_and_a_long_query_answered_from_the_terminal_and_http() {
    let p = fixture_project();
    let json_hits = |out: &Output| -> Vec<Value> {
        out.stdout_lines()
            .iter()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let uri_set = |hits: &[Value]| {
        let mut uris: Vec<String> = hits
            .iter()
            .map(|h| h["uri"].as_str().unwrap().to_string())
            .collect();
        uris.sort();
        uris
    };
    let sync = search(&p, &["sync", "--json", "--limit", "100"]);
    sync.assert_success();
    let sync = json_hits(&sync);
    assert!(sync.iter().all(|h| h.get("relaxed").is_none()));
    // No document holds `xylophone`: the documents with `sync`, said so on
    // stderr and on every JSON line.
    let out = search(&p, &["xylophone", "sync", "--json", "--limit", "100"]);
    out.assert_success();
    let relaxed = json_hits(&out);
    assert_eq!(uri_set(&relaxed), uri_set(&sync));
    assert!(relaxed.iter().all(|h| h["relaxed"] == true), "{out:?}");
    assert_eq!(
        out.stderr,
        "No document has all of these words; these have some of them.\n"
    );
    let out = search(&p, &["xylophone", "sync"]);
    out.assert_success();
    assert_eq!(uris(&out).len(), sync.len().min(20));
    assert!(out.stderr.contains("some of them"), "{out:?}");
    // A phrase is not relaxed: nothing, exit 1.
    let out = search(&p, &["\"xylophone sync\""]);
    assert_eq!(
        (out.code, out.stdout.as_str(), out.stderr.as_str()),
        (Some(1), "", "")
    );

    let s = HttpServer::start(&p, &[]);
    let mut seen = Vec::new();
    let mut cursor = None::<String>;
    loop {
        let mut params = vec![("q", "xylophone sync"), ("limit", "2")];
        if let Some(c) = &cursor {
            params.push(("cursor", c));
        }
        let page = s.request("GET", &search_path(&params)).send().json();
        assert_eq!(page["relaxed"], true, "{page}");
        assert_eq!(page["total"].as_u64(), Some(sync.len() as u64));
        seen.extend(page["hits"].as_array().unwrap().iter().cloned());
        cursor = page["nextCursor"].as_str().map(str::to_string);
        if cursor.is_none() {
            break;
        }
    }
    assert_eq!(
        uri_set(&seen),
        uri_set(&sync),
        "the cursors resume the relaxed search"
    );
    // 60 words are answered, from 32 of them, named.
    let words: Vec<String> = (0..60).map(|i| format!("pasted{i}")).collect();
    let page = s
        .request("GET", &search_path(&[("q", &words.join(" "))]))
        .send();
    page.expect(200);
    let page = page.json();
    assert_eq!(page["terms"], serde_json::json!(words[..32]), "{page}");
    let out = search(&p, &[&words.join(" ")]);
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(
        out.stderr
            .starts_with("The query has 60 different terms; it was answered from the 32 found in the fewest documents: pasted0 pasted1"),
        "{out:?}"
    );
}
