//! The viewer for a caller with partial grants (issue 36): a caller granted `features` and `docs` learns nothing about `notes` from any page (its answers on a project with notes are its answers on the same project without them, byte for byte), and the forms that write need the grant to write. Both stores; under `viewer::` so that the PostgreSQL run takes them too.

use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use crate::http::{HttpServer, Resp};
use crate::support::Project;

/// Project A (`with_notes`): the fixture project, with links and mentions
/// both ways between notes and the other prefixes, imported twice (so
/// that documents of both have a history and a diff), then twice more with
/// changes to notes only, which move the store's feed sequence on (the
/// pages and events must not show it). Project B: the same without any
/// `notes/` file, imported twice. Every file but those last notes has the
/// same mtime in both.
fn project(with_notes: bool) -> Project {
    let p = Project::fixture();
    append(
        &p,
        "features/FEAT-001.md",
        "\n## Related\n\nSee [the retro](../notes/retro-sprint-14.md), \
         [a field note](../notes/NOTE-001.md) and NOTE-001. Zebrafish.\n",
    );
    append(
        &p,
        "docs/guides/getting-started.md",
        "\nThe team's notes: [the retro](../../notes/retro-sprint-14.md).\n",
    );
    p.file(
        "notes/NOTE-001.md",
        "# Field note\n\nOn [offline work orders](../features/FEAT-001.md) and FEAT-002. \
         Zebrafish.\n",
    );
    append(
        &p,
        "notes/retro-sprint-14.md",
        "\nFollow-up: FEAT-003 and [the guide](../docs/guides/getting-started.md).\n",
    );
    if !with_notes {
        std::fs::remove_dir_all(p.path("notes")).unwrap();
    }
    set_mtimes(&p.dir(), 1_780_000_000);
    p.import(&[]).assert_success();
    append(&p, "features/FEAT-001.md", "\nA second version.\n");
    if with_notes {
        append(&p, "notes/NOTE-001.md", "\nA second version.\n");
    }
    set_mtimes(&p.dir(), 1_780_086_400);
    p.import(&[]).assert_success();
    if with_notes {
        for note in ["notes/NOTE-001.md", "notes/retro-sprint-14.md"] {
            append(&p, note, "\nOnly notes change in this import.\n");
            p.import(&[]).assert_success();
        }
    }
    p
}

fn append(p: &Project, rel: &str, text: &str) {
    let mut all = std::fs::read_to_string(p.path(rel)).unwrap();
    all.push_str(text);
    p.file(rel, all);
}

/// Gives every file under `dir` the mtime `secs` (since the epoch).
fn set_mtimes(dir: &Path, secs: u64) {
    let time = SystemTime::UNIX_EPOCH + Duration::from_secs(secs);
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            set_mtimes(&path, secs);
        } else {
            let file = std::fs::File::options().write(true).open(&path).unwrap();
            file.set_modified(time).unwrap();
        }
    }
}

/// `orchestra token create --scope … --name NAME`: the key it prints.
fn create_key(p: &Project, name: &str, scopes: &[&str]) -> String {
    let db = p.db_arg();
    let mut args = vec!["token", "create", "--name", name, "--db", &db];
    for scope in scopes {
        args.extend(["--scope", scope]);
    }
    let out = p.run(&args);
    out.assert_success();
    out.stdout.trim().to_string()
}

/// The scopes of the caller compared: features and docs, never notes.
const PARTIAL: &[&str] = &[
    "orchestra:read:features",
    "orchestra:read:docs",
    "orchestra:search",
];
/// The same reads, and writes in docs only.
const WRITER: &[&str] = &[
    "orchestra:read:features",
    "orchestra:write:docs",
    "orchestra:search",
];

/// A project served with API keys by a server that writes, and its keys.
struct Served {
    p: Project,
    server: HttpServer,
    partial: String,
    writer: String,
    full: String,
}

fn serve(with_notes: bool) -> Served {
    let p = project(with_notes);
    let partial = create_key(&p, "partial", PARTIAL);
    let writer = create_key(&p, "writer", WRITER);
    let full = create_key(&p, "full", &["orchestra:read"]);
    let dir = p.dir();
    let server = HttpServer::start(&p, &["--api-keys", "--project", dir.to_str().unwrap()]);
    Served {
        p,
        server,
        partial,
        writer,
        full,
    }
}

fn get(server: &HttpServer, key: &str, path: &str) -> Resp {
    server
        .request("GET", path)
        .header("Accept", "text/html,application/xhtml+xml")
        .header("Authorization", &format!("Bearer {key}"))
        .send()
}

fn post_form(server: &HttpServer, key: &str, path: &str, body: &str) -> Resp {
    server
        .request("POST", path)
        .header("Accept", "text/html")
        .header("Content-Type", "application/x-www-form-urlencoded")
        .header("Authorization", &format!("Bearer {key}"))
        .origin(&format!("http://127.0.0.1:{}", server.port))
        .body(body)
        .send()
}

/// What a caller learns from an answer: its status, type and body. Only
/// what legitimately differs between the two projects is normalised: the
/// project's folder (the home page names it; the two are different temp
/// folders) and the times of day (the imports that stored the versions
/// ran at different moments; the files' mtimes are the same).
fn learned(resp: &Resp, p: &Project) -> String {
    let body = resp
        .text()
        .replace(&p.dir().display().to_string(), "PROJECT");
    format!(
        "{} {}\n{}",
        resp.status,
        resp.header("content-type").unwrap_or_default(),
        without_times(&body)
    )
}

/// `2026-07-28 14:02 UTC` → `TIME`, as the pages write a time.
fn without_times(text: &str) -> String {
    const SHAPE: &[u8] = b"dddd-dd-dd dd:dd UTC";
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < bytes.len() {
        let fits = bytes.len() - i >= SHAPE.len()
            && SHAPE.iter().zip(&bytes[i..]).all(|(&s, &b)| match s {
                b'd' => b.is_ascii_digit(),
                _ => s == b,
            });
        if fits {
            out.push_str("TIME");
            i += SHAPE.len();
        } else {
            let c = text[i..].chars().next().unwrap();
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// Each page with the status the caller must get, so that equal answers
/// are also the right ones (two crashes would be equal too).
#[track_caller]
fn check_same(a: &Served, b: &Served, key: fn(&Served) -> &str, pages: &[(&str, u16)]) {
    for &(path, status) in pages {
        let (in_a, in_b) = (get(&a.server, key(a), path), get(&b.server, key(b), path));
        assert_eq!(in_a.status, status, "{path} on A: {in_a:?}");
        assert_eq!(
            learned(&in_a, &a.p),
            learned(&in_b, &b.p),
            "{path}: a caller without notes tells A (with notes) from B (without)"
        );
    }
}

#[test]
fn a_caller_granted_features_and_docs_learns_nothing_of_notes_from_any_page() {
    let (a, b) = (serve(true), serve(false));
    check_same(
        &a,
        &b,
        |s| &s.partial,
        &[
            ("/", 200),
            ("/ls/features", 200),
            ("/ls/docs", 200),
            ("/ls/docs/guides", 200),
            ("/ls/notes", 200),
            ("/ls/notes?after=NOTE-001", 200),
            // Linked to from notes, linking to them, mentioning one.
            ("/doc/features/FEAT-001", 200),
            ("/doc/features/FEAT-001?version=1", 200),
            // Mentioned by notes.
            ("/doc/features/FEAT-002", 200),
            ("/doc/features/FEAT-003", 200),
            ("/doc/docs/guides/getting-started", 200),
            // Notes that exist in A, and their versions; and near misses,
            // whose "did you mean" must not name them.
            ("/doc/notes/NOTE-001", 404),
            ("/doc/notes/NOTE-001?version=1", 404),
            ("/doc/notes/retro-sprint-14", 404),
            ("/doc/notes/caf%C3%A9%20notes", 404),
            ("/doc/notes/NOTE-002", 404),
            ("/doc/notes/retro", 404),
            ("/raw/features/FEAT-001", 200),
            ("/raw/notes/NOTE-001", 404),
            ("/raw/notes/NOTE-001?version=1", 404),
            ("/diff/features/FEAT-001", 200),
            ("/diff/notes/NOTE-001", 404),
            ("/diff/notes/NOTE-001?from=1&to=2", 404),
            // One hit in features, one in notes: the total and the hits
            // count only what the caller may read.
            ("/search?q=zebrafish", 200),
            ("/search?q=zebrafish&under=notes", 200),
            // Refused before the viewer: this caller writes nothing.
            ("/edit/features/FEAT-001", 403),
            ("/edit/notes/NOTE-001", 403),
            ("/new/notes", 403),
        ],
    );
    // What it does see, it sees.
    let feature = get(&a.server, &a.partial, "/doc/features/FEAT-001").text();
    assert!(feature.contains("Zebrafish"), "{feature}");
    let hits = get(&a.server, &a.partial, "/search?q=zebrafish").text();
    assert!(
        hits.contains("/doc/features/FEAT-001") && hits.contains("1 hit"),
        "{hits}"
    );
    assert!(!hits.contains("NOTE-001\">"), "{hits}");
}

#[test]
fn the_forms_need_the_grant_to_write_and_hide_what_the_caller_may_not_read() {
    let (a, b) = (serve(true), serve(false));
    check_same(
        &a,
        &b,
        |s| &s.writer,
        &[
            // Neither read nor write: as a missing document.
            ("/edit/notes/NOTE-001", 404),
            ("/edit/notes/NOTE-404", 404),
            // Read, not write: 403 naming the scope.
            ("/edit/features/FEAT-001", 403),
            ("/edit/docs/guides/getting-started", 200),
            ("/new/notes", 403),
            ("/new/features", 403),
            ("/new/docs/guides", 200),
            // "Edit" and "New" only where the caller may write.
            ("/doc/features/FEAT-001", 200),
            ("/doc/docs/guides/getting-started", 200),
            ("/ls/features", 200),
            ("/ls/docs", 200),
            ("/ls/notes", 200),
        ],
    );
    let refused = get(&a.server, &a.writer, "/edit/features/FEAT-001");
    assert!(
        refused.text().contains("orchestra:write:features"),
        "{refused:?}"
    );
    let refused = get(&a.server, &a.writer, "/new/notes");
    assert!(
        refused.text().contains("orchestra:write:notes"),
        "{refused:?}"
    );
    let feature = get(&a.server, &a.writer, "/doc/features/FEAT-001").text();
    assert!(!feature.contains("/edit/"), "{feature}");
    let guide = get(&a.server, &a.writer, "/doc/docs/guides/getting-started").text();
    assert!(
        guide.contains("/edit/docs/guides/getting-started"),
        "{guide}"
    );
    assert!(
        !get(&a.server, &a.writer, "/ls/features")
            .text()
            .contains("/new/")
    );
    assert!(
        get(&a.server, &a.writer, "/ls/docs")
            .text()
            .contains("/new/docs")
    );

    // The POSTs answer as the forms do, and write nothing.
    let note = std::fs::read(a.p.path("notes/NOTE-001.md")).unwrap();
    let feature = std::fs::read(a.p.path("features/FEAT-001.md")).unwrap();
    for (path, body, status) in [
        ("/edit/notes/NOTE-001", "version=2&content=mine", 404),
        ("/edit/features/FEAT-001", "version=2&content=mine", 403),
        ("/new/notes", "title=Mine&content=mine", 403),
    ] {
        let (in_a, in_b) = (
            post_form(&a.server, &a.writer, path, body),
            post_form(&b.server, &b.writer, path, body),
        );
        assert_eq!(in_a.status, status, "POST {path}: {in_a:?}");
        assert_eq!(learned(&in_a, &a.p), learned(&in_b, &b.p), "POST {path}");
    }
    assert_eq!(std::fs::read(a.p.path("notes/NOTE-001.md")).unwrap(), note);
    assert_eq!(
        std::fs::read(a.p.path("features/FEAT-001.md")).unwrap(),
        feature
    );
    assert_eq!(std::fs::read_dir(a.p.path("notes")).unwrap().count(), 5);
    // Where it may write, it writes.
    let saved = post_form(
        &a.server,
        &a.writer,
        "/new/docs/guides",
        "title=Written+by+a+key&content=Text.",
    );
    saved.expect(303);
}

/// The feed sequence a page was rendered at, for a caller told it.
fn page_seq(server: &HttpServer, key: &str) -> i64 {
    let home = get(server, key, "/").text();
    home.split("data-seq=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no data-seq in:\n{home}"))
}

#[test]
fn live_updates_leave_out_the_changes_the_caller_may_not_read() {
    let (a, b) = (serve(true), serve(false));
    // The imports of notes alone moved A's feed on: a reader of everything
    // is told so, and resumes after its page's sequence.
    assert_eq!(
        page_seq(&a.server, &a.full),
        page_seq(&b.server, &b.full) + 2
    );
    let mut firsts = Vec::new();
    for s in [&a, &b] {
        // A caller with partial grants is told no sequence...
        let home = get(&s.server, &s.partial, "/").text();
        assert!(home.contains("<body data-seq=\"\" "), "{home}");
        // ... and one it sends anyway replays nothing: the backlog after 1
        // would be the next import's event, first.
        let mut stream = s
            .server
            .request("GET", "/events?after=1")
            .header("Accept", "text/event-stream")
            .header("Last-Event-ID", "1")
            .header("Authorization", &format!("Bearer {}", s.partial))
            .open();
        // A note changes (in B, where there are none, the import finds
        // nothing), then a feature.
        if s.p.path("notes").exists() {
            append(&s.p, "notes/NOTE-001.md", "\nA third version.\n");
        }
        s.p.import(&[]).assert_success();
        append(&s.p, "features/FEAT-002.md", "\nEdited.\n");
        s.p.import(&[]).assert_success();
        let event = stream
            .next_event(Instant::now() + Duration::from_secs(10))
            .unwrap()
            .expect("an event");
        // Compared as sent, byte for byte: no id, no sequence.
        firsts.push((event.event, event.id, event.data));
    }
    assert_eq!(firsts[0].0.as_deref(), Some("change"));
    assert_eq!(firsts[0].1, None, "an id is the store's feed sequence");
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&firsts[0].2).unwrap(),
        serde_json::json!({"seq": null, "all": false, "keys": ["~features/FEAT-002"]})
    );
    assert_eq!(
        firsts[0], firsts[1],
        "a caller without notes tells A (with notes) from B (without) by its events"
    );
}

#[test]
fn a_full_reader_sees_the_notes() {
    let a = serve(true);
    let get = |path: &str| get(&a.server, &a.full, path);
    let home = get("/");
    home.expect(200);
    assert!(
        home.text()
            .contains(r#"<a href="/ls/notes">notes</a></td><td class="num">5</td>"#),
        "{home:?}"
    );
    let notes = get("/ls/notes");
    assert!(notes.text().contains("/doc/notes/NOTE-001"), "{notes:?}");
    get("/doc/notes/NOTE-001").expect(200);
    get("/raw/notes/NOTE-001").expect(200);
    get("/diff/notes/NOTE-001").expect(200);
    let feature = get("/doc/features/FEAT-001").text();
    assert!(
        feature.contains(r#"href="/doc/notes/NOTE-001""#)
            && !feature.contains("no such document: orchestra://notes/NOTE-001"),
        "{feature}"
    );
    assert!(notes.text().contains("5 documents"), "{notes:?}");
    // The counts cached for it are its own: another caller's are counted
    // for that caller's areas.
    let partial = get_with(&a, &a.partial, "/ls/notes").text();
    assert!(partial.contains("0 documents"), "{partial}");
    let partial = get_with(&a, &a.partial, "/").text();
    assert!(
        partial.contains(r#"<a href="/ls/notes">notes</a></td><td class="num">0</td>"#),
        "{partial}"
    );
    // Without orchestra:write, the forms are refused before the viewer.
    get("/edit/notes/NOTE-001").expect(403);
}

fn get_with(s: &Served, key: &str, path: &str) -> Resp {
    get(&s.server, key, path)
}
