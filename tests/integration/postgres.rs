//! End-to-end tests of the PostgreSQL store on the real binary: imports and servers in separate processes on one database, the terminal commands beside SQLite's answers, and the errors a team sees (an unreachable server, a password that must not show, PostgreSQL restarting or crashing under a server). The golden exchanges run on PostgreSQL too (serve.rs).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::{BIN, PgDatabase, PrivateCluster, Project, Server};

/// The fixture project, imported into its default SQLite file and into a
/// fresh PostgreSQL database.
fn fixture_on_both() -> (Project, PgDatabase) {
    let p = Project::fixture();
    p.import(&[]).assert_success();
    let pg = PgDatabase::new();
    p.run(&["import", "project", "--db", &pg.url()])
        .assert_success();
    (p, pg)
}

/// `out` with every time (`2026-03-02T10:00:00Z`) masked: the two stores
/// were written by two imports, a second or so apart.
fn import_time_masked(out: &str) -> String {
    let bytes = out.as_bytes();
    let shape = b"dddd-dd-ddTdd:dd:ddZ";
    let mut masked = String::with_capacity(out.len());
    let mut i = 0;
    while i < bytes.len() {
        let is_time = bytes.len() - i >= shape.len()
            && shape.iter().zip(&bytes[i..]).all(|(want, got)| match want {
                b'd' => got.is_ascii_digit(),
                want => want == got,
            });
        if is_time {
            masked.push_str("<time>");
            i += shape.len();
        } else {
            let c = out[i..].chars().next().unwrap_or_default();
            masked.push(c);
            i += c.len_utf8();
        }
    }
    masked
}

#[test]
fn the_terminal_commands_answer_on_postgres_as_on_sqlite() {
    let (p, pg) = fixture_on_both();
    let url = pg.url();
    for args in [
        &["ls"][..],
        &["ls", "features", "--limit", "2"],
        &["ls", "docs/adr", "--json"],
        &["ls", "notes", "--after", "zzz"],
        &["show", "features/FEAT-001"],
        &["show", "orchestra://notes/caf%C3%A9%20notes", "--meta"],
        &["show", "features/FEAT-999"],
        &["log", "features/FEAT-001"],
    ] {
        let sqlite = p.run(args);
        let mut on_pg = args.to_vec();
        on_pg.extend(["--db", &url]);
        let postgres = p.run(&on_pg);
        assert_eq!(
            (
                postgres.code,
                import_time_masked(&postgres.stdout),
                &postgres.stderr
            ),
            (
                sqlite.code,
                import_time_masked(&sqlite.stdout),
                &sqlite.stderr
            ),
            "orchestra {}",
            args.join(" ")
        );
    }
}

#[test]
fn a_reimport_on_postgres_changes_only_what_changed() {
    let (p, pg) = fixture_on_both();
    let url = pg.url();
    let nothing = p.run(&["import", "project", "--db", &url, "--json"]);
    nothing.assert_success();
    let counts = nothing.report().counts();
    assert_eq!((counts.new, counts.updated, counts.removed), (0, 0, 0));
    p.file("features/FEAT-001.md", "# Offline, rewritten\n")
        .remove("notes/retro-sprint-14.md");
    for db in [None, Some(url.as_str())] {
        let mut args = vec!["import", "project", "--json"];
        args.extend(db.iter().flat_map(|db| ["--db", db]));
        let counts = p.run(&args).report().counts();
        assert_eq!(
            (counts.new, counts.updated, counts.removed, counts.unchanged),
            (0, 1, 1, 15),
            "{db:?}"
        );
    }
    let mut client = pg.client();
    let versions: i64 = client
        .query_one(
            "SELECT count(*) FROM versions WHERE prefix = 'features' AND id = 'FEAT-001'",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(versions, 2);
}

/// Initializes a session of the handshake era.
fn initialize(server: &mut Server) {
    server.request(&json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "postgres-test", "version": "1"}}}));
    server.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
}

/// A server of `url`, initialized, its client subscribed to `uri`.
fn subscribed_server(url: &str, uri: &str) -> Server {
    let mut server = Server::start(std::path::Path::new(url), &[]);
    initialize(&mut server);
    let subscribed = server.request(&json!({"jsonrpc": "2.0", "id": 1,
        "method": "resources/subscribe", "params": {"uri": uri}}));
    assert_eq!(subscribed["result"], json!({}), "{subscribed}");
    server
}

/// Rewrites FEAT-002 as `text`, imports the project into `url` and waits
/// until `server`, subscribed to it, is told.
fn edit_import_and_hear(p: &Project, url: &str, server: &mut Server, text: &str) {
    p.file("features/FEAT-002.md", text);
    let started = Instant::now();
    p.run(&["import", "project", "--db", url]).assert_success();
    let heard: Value = serde_json::from_str(&server.recv()).unwrap();
    eprintln!("heard after {:?}: {heard}", started.elapsed());
    assert_eq!(
        heard,
        json!({"jsonrpc": "2.0", "method": "notifications/resources/updated",
               "params": {"uri": "orchestra://features/FEAT-002"}})
    );
}

/// A server on PostgreSQL hears the commit of an import run by another
/// process (through NOTIFY): a subscribed client is told, promptly.
#[test]
fn a_server_on_postgres_hears_an_import_by_another_process() {
    let (p, pg) = fixture_on_both();
    let url = pg.url();
    let uri = "orchestra://features/FEAT-002";
    let mut server = subscribed_server(&url, uri);
    p.file("features/FEAT-002.md", "# Photos, changed\n");
    let started = Instant::now();
    let status = Command::new(BIN)
        .args(["import", "project", "--db", &url])
        .current_dir(p.root())
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    let committed = started.elapsed();
    let heard: Value = serde_json::from_str(&server.recv()).unwrap();
    eprintln!(
        "import took {committed:?}; heard after {:?}: {heard}",
        started.elapsed()
    );
    assert_eq!(
        heard,
        json!({"jsonrpc": "2.0", "method": "notifications/resources/updated",
               "params": {"uri": uri}})
    );
    assert!(
        started.elapsed() < committed + Duration::from_secs(2),
        "a notification, not the poll every few seconds, woke the server"
    );
    let read = server.request(&json!({"jsonrpc": "2.0", "id": 2,
        "method": "resources/read", "params": {"uri": uri}}));
    assert_eq!(
        read["result"]["contents"][0]["text"], "# Photos, changed\n",
        "{read}"
    );
    let (_, status) = server.close();
    assert!(status.success());
}

/// An unreachable PostgreSQL is one line naming the database, never its
/// password, for every command; nothing is written anywhere.
#[test]
fn an_unreachable_postgres_is_one_line_that_never_shows_the_password() {
    let p = Project::fixture();
    let before = std::fs::read_dir(p.root()).unwrap().count();
    // Port 1 on loopback: refused at once.
    let url = "postgres://ann:s3cret-771@127.0.0.1:1/backlog";
    let shown = "postgres://ann@127.0.0.1:1/backlog";
    for args in [
        &["import", "project"][..],
        &["serve"],
        &["prune", "--keep", "1"],
        &["ls"],
        &["search", "offline"],
        &["show", "features/FEAT-001"],
        &["stats"],
        &["log", "features/FEAT-001"],
        &["diff", "features/FEAT-001"],
    ] {
        let mut args = args.to_vec();
        args.extend(["--db", url]);
        let out = p.run(&args);
        let lines = out.stderr_lines();
        assert!(out.code.is_some_and(|c| c != 0), "{args:?}: {out:?}");
        assert_eq!(lines.len(), 1, "{args:?}: {out:?}");
        assert!(
            lines[0].starts_with(&format!("orchestra: cannot connect to {shown}")),
            "{args:?}: {}",
            lines[0]
        );
        assert!(!out.stderr.contains("s3cret") && !out.stdout.contains("s3cret"));
    }
    assert_eq!(std::fs::read_dir(p.root()).unwrap().count(), before);
}

/// The password can come from a file instead of the URL (a team's secret
/// store mounts one); a wrong one is refused and never shown.
#[test]
fn the_password_may_come_from_a_file() {
    let p = Project::fixture();
    let pg = PgDatabase::new();
    let (Ok(host), Ok(password)) = (std::env::var("PGHOST"), std::env::var("PGPASSWORD")) else {
        panic!("pg_virtualenv sets PGHOST and PGPASSWORD");
    };
    let port = std::env::var("PGPORT").unwrap_or_else(|_| "5432".into());
    let user = std::env::var("PGUSER").unwrap_or_else(|_| "postgres".into());
    let url = format!(
        "postgres://{user}@{host}:{port}/{}",
        pg.url().trim_start_matches("postgres:///")
    );
    let file = p.root().join("pw");
    for (written, succeeds) in [
        ("wrong-password-5521\n", false),
        (&*format!("{password}\n"), true),
    ] {
        std::fs::write(&file, written).unwrap();
        let out = p
            .cmd(&[
                "import",
                "project",
                "--db",
                &url,
                "--db-password-file",
                "pw",
            ])
            .env_remove("PGPASSWORD")
            .env("PGPASSFILE", "/nonexistent")
            .run();
        assert_eq!(out.code == Some(0), succeeds, "{out:?}");
        assert!(
            !out.stderr.contains("wrong-password-5521"),
            "{}",
            out.stderr
        );
        if !succeeds {
            assert!(
                out.stderr.contains("password authentication failed"),
                "{}",
                out.stderr
            );
        }
    }
}

/// The database going away under a running server (its sessions ended,
/// new ones refused): requests get `-32603` with a message, promptly, and
/// the server lives; when the database is back, it serves again without a
/// restart, and its LISTEN connection, reopened, hears the next import.
#[test]
fn a_server_on_postgres_outlives_the_database_going_away() {
    let (p, pg) = fixture_on_both();
    let url = pg.url();
    let uri = "orchestra://features/FEAT-002";
    let mut server = subscribed_server(&url, uri);

    let mut admin = pg.admin();
    let name = pg.name();
    admin
        .batch_execute(&format!(
            "ALTER DATABASE {name} ALLOW_CONNECTIONS false;
             SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}';"
        ))
        .unwrap();
    // Ending a session is asynchronous: wait until the server has none.
    // Only clients' sessions: PostgreSQL's own workers (autovacuum) may visit
    // the database still.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let open: Vec<String> = admin
            .query(
                "SELECT format('%s %s %s', pid, state, query) FROM pg_stat_activity
                 WHERE datname = $1 AND backend_type = 'client backend'",
                &[&name],
            )
            .unwrap()
            .iter()
            .map(|row| row.get(0))
            .collect();
        if open.is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "sessions still open: {open:?}");
        // A connection that was being made while the database was closed
        // to new ones was not there to terminate: terminate it now.
        admin
            .execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                 WHERE datname = $1 AND backend_type = 'client backend'",
                &[&name],
            )
            .unwrap();
        std::thread::sleep(Duration::from_millis(20));
    }
    let asked = Instant::now();
    let refused = server.request(&json!({"jsonrpc": "2.0", "id": 2,
        "method": "resources/read", "params": {"uri": uri}}));
    eprintln!(
        "while the database is away, after {:?}: {refused}",
        asked.elapsed()
    );
    assert_eq!(
        refused["error"],
        json!({"code": -32603, "message": "the database is unavailable; try again shortly"})
    );
    assert!(asked.elapsed() < Duration::from_secs(10), "no hang");

    admin
        .batch_execute(&format!("ALTER DATABASE {name} ALLOW_CONNECTIONS true"))
        .unwrap();
    let read = server.request(&json!({"jsonrpc": "2.0", "id": 3,
        "method": "resources/read", "params": {"uri": uri}}));
    assert!(read["result"]["contents"][0]["text"].is_string(), "{read}");

    edit_import_and_hear(&p, &url, &mut server, "# Photos, after the outage\n");
    let (_, status) = server.close();
    assert!(status.success());
}

/// A small document, `version` its edit.
fn small_doc(i: usize, version: usize) -> String {
    format!(
        "---\ntitle: Doc {i}\nstatus: {}\n---\n# Doc {i}, version {version}\n\nWords of document {i}: \
         offline sync kiwi mango {}.\n",
        ["open", "done", "draft"][i % 3],
        "filler ".repeat(i % 7)
    )
}

fn small_path(i: usize) -> String {
    format!("notes/n{:02}/doc-{i:05}.md", i % 37)
}

/// Everything an import writes, as one digest: the documents (keys,
/// hashes, sequence, search vector, `where` terms), their versions, the
/// kept bodies, the feed, the imports and the project's sequence.
fn pg_digest(pg: &PgDatabase) -> String {
    let mut client = pg.client();
    let parts: Vec<String> = [
        "SELECT string_agg(prefix || '/' || id || ' ' || encode(hash, 'hex') || ' ' || seq || ' '
                || search::text || ' ' || fields::text, E'\\n' ORDER BY prefix, id) FROM documents",
        "SELECT string_agg(prefix || '/' || id || ' ' || version || ' '
                || coalesce(encode(hash, 'hex'), '-') || ' ' || seq, E'\\n'
                ORDER BY prefix, id, version) FROM versions",
        "SELECT string_agg(encode(hash, 'hex'), E'\\n' ORDER BY hash) FROM bodies",
        // An import's feed rows, as a set: their order follows the reader
        // threads'.
        "SELECT string_agg(seq || ' ' || kind || ' ' || prefix || '/' || id, E'\\n'
                ORDER BY seq, prefix, id, kind) FROM changes",
        "SELECT string_agg(seq::text, ' ' ORDER BY seq) FROM imports",
        "SELECT string_agg(seq::text, ' ') FROM project",
    ]
    .iter()
    .map(|sql| {
        client
            .query_one(*sql, &[])
            .unwrap()
            .get::<_, Option<String>>(0)
            .unwrap_or_default()
    })
    .collect();
    blake3::hash(parts.join("\n--\n").as_bytes())
        .to_hex()
        .to_string()
}

/// An import on PostgreSQL killed at any moment (SIGKILL), or whose
/// connection the server drops, leaves the database as it was before the
/// import or as it is after it, never between; a dropped connection makes
/// the import exit 1, saying why.
#[test]
fn an_import_on_postgres_killed_or_cut_off_leaves_the_old_or_the_new_state() {
    const DOCS: usize = 3000;
    const TRIALS: usize = 10;
    let p = Project::new();
    for i in 0..DOCS {
        p.file(&small_path(i), small_doc(i, 1));
    }
    let a_db = PgDatabase::new();
    p.run(&["import", "project", "--db", &a_db.url()])
        .assert_success();
    let count: i64 = a_db
        .client()
        .query_one("SELECT count(*) FROM documents", &[])
        .unwrap()
        .get(0);
    assert_eq!(count, DOCS as i64);
    let a = pg_digest(&a_db);

    // State B: a quarter changed, a tenth removed, 500 added.
    for i in (0..DOCS).step_by(4) {
        p.file(&small_path(i), small_doc(i, 2));
    }
    for i in (1..DOCS).step_by(10) {
        p.remove(&small_path(i));
    }
    for i in DOCS..DOCS + 500 {
        p.file(&small_path(i), small_doc(i, 1));
    }
    let b_db = PgDatabase::copy_of(&a_db);
    let started = Instant::now();
    p.run(&["import", "project", "--db", &b_db.url()])
        .assert_success();
    let full = started.elapsed();
    let b = pg_digest(&b_db);
    assert_ne!(a, b);

    let state = |trial: &PgDatabase, what: &str| -> &'static str {
        let digest = pg_digest(trial);
        if digest == a {
            "A"
        } else if digest == b {
            "B"
        } else {
            panic!("{what}: the database is neither the state before the import nor after it")
        }
    };
    let mut outcomes = Vec::new();
    let mut killed_in_a = 0;
    for k in 0..TRIALS {
        let trial = PgDatabase::copy_of(&a_db);
        let delay = full.mul_f64(1.1 * (k as f64 + 0.5) / TRIALS as f64);
        let mut child = p.cmd(&["import", "project", "--db", &trial.url()]).spawn();
        std::thread::sleep(delay);
        child.kill().unwrap(); // SIGKILL
        let status = child.wait().unwrap();
        let what = format!("killed after {delay:?} of {full:?} ({status})");
        let state = state(&trial, &what);
        if state == "A" && status.code().is_none() && delay > full.mul_f64(0.2) {
            killed_in_a += 1;
        }
        outcomes.push(format!("{what}: {state}"));
    }
    eprintln!("{}", outcomes.join("\n"));
    // The same import left alone gives B exactly: the digest is no stricter
    // than an import's own outcome.
    let whole = PgDatabase::copy_of(&a_db);
    p.run(&["import", "project", "--db", &whole.url()])
        .assert_success();
    assert_eq!(state(&whole, "an import left alone"), "B");
    assert!(
        killed_in_a >= 2,
        "too few kills landed while the import was writing:\n{}",
        outcomes.join("\n")
    );

    // The server drops the import's connection halfway: exit 1, state A.
    cut_off_halfway(
        &p,
        || PgDatabase::copy_of(&a_db),
        full,
        |trial, ended| {
            let expected = if ended { "B" } else { "A" };
            assert_eq!(state(trial, &format!("ended: {ended}")), expected);
        },
    );
    // The same while a first import loads an empty database by COPY (a
    // thread of its own holds the connection then): exit 1, still empty.
    let empty_state = |trial: &PgDatabase| -> (i64, i64) {
        let mut client = trial.client();
        let mut count = |sql: &str| client.query_one(sql, &[]).unwrap().get::<_, i64>(0);
        (
            count("SELECT count(*) FROM documents"),
            count("SELECT count(*) FROM project"),
        )
    };
    let started = Instant::now();
    let loaded = PgDatabase::new();
    p.run(&["import", "project", "--db", &loaded.url()])
        .assert_success();
    let load = started.elapsed();
    cut_off_halfway(&p, PgDatabase::new, load, |trial, ended| {
        if !ended {
            assert_eq!(empty_state(trial), (0, 0));
        }
    });
}

/// Runs an import into a database from `fresh` and has the server drop
/// its connection partway through (an import takes about `full`), until
/// one is cut off: it must exit 1 with a message naming the database.
/// `check` looks at each database after, told whether the import ended.
fn cut_off_halfway(
    p: &Project,
    fresh: impl Fn() -> PgDatabase,
    full: Duration,
    check: impl Fn(&PgDatabase, bool),
) {
    for attempt in 0..3 {
        let trial = fresh();
        let child = Command::new(BIN)
            .args(["import", "project", "--db", &trial.url()])
            .current_dir(p.root_path(""))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(full.mul_f64(0.4 / (attempt + 1) as f64));
        trial
            .admin()
            .execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1",
                &[&trial.name()],
            )
            .unwrap();
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        if out.status.success() {
            // The import ended before the cut: try again, sooner.
            check(&trial, true);
            continue;
        }
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(
            stderr.contains("orchestra:") && stderr.contains(&trial.name().to_string()),
            "the error names the database: {stderr}"
        );
        check(&trial, false);
        return;
    }
    panic!("no attempt cut an import off before its end");
}

/// PostgreSQL itself stopped and started, then crashed and restarted,
/// under a running server: while it is down, requests get `-32603` with a
/// message, promptly, and the server lives; once it is up, the server
/// serves again by itself and hears the next import, its LISTEN
/// connection made anew.
#[test]
fn a_server_on_postgres_outlives_restarts_of_postgres() {
    let cluster = PrivateCluster::start();
    let url = cluster.url();
    let p = Project::fixture();
    p.run(&["import", "project", "--db", &url]).assert_success();
    let uri = "orchestra://features/FEAT-002";
    let mut server = subscribed_server(&url, uri);
    // A server that stops answering fails the test; it does not hang it.
    let pid = server.child.id().to_string();
    let (finished, watchdog) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        if watchdog.recv_timeout(Duration::from_secs(120)).is_err() {
            let _ = Command::new("kill").args(["-KILL", &pid]).status();
        }
    });
    let read = |server: &mut Server, id: u64| {
        server.request(&json!({"jsonrpc": "2.0", "id": id,
            "method": "resources/read", "params": {"uri": uri}}))
    };

    cluster.ctl("stop", Some("fast"));
    for id in [2, 3] {
        let asked = Instant::now();
        let refused = read(&mut server, id);
        eprintln!("PostgreSQL stopped, after {:?}: {refused}", asked.elapsed());
        assert_eq!(
            refused["error"],
            json!({"code": -32603, "message": "the database is unavailable; try again shortly"})
        );
        assert!(asked.elapsed() < Duration::from_secs(10), "no hang");
    }
    cluster.ctl("start", None);
    let served = read(&mut server, 4);
    assert!(
        served["result"]["contents"][0]["text"].is_string(),
        "{served}"
    );

    // A crash: no shutdown, the sessions cut, recovery from the WAL.
    cluster.ctl("restart", Some("immediate"));
    edit_import_and_hear(&p, &url, &mut server, "# Photos, after the crash\n");
    let served = read(&mut server, 5);
    assert_eq!(
        served["result"]["contents"][0]["text"], "# Photos, after the crash\n",
        "{served}"
    );
    let _ = finished.send(());
    let (_, status) = server.close();
    assert!(status.success());
}
