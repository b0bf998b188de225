//! End-to-end fault tests on the real binary: SIGKILL during a large import, a full disk, a read-only database, a database deleted under a running server, and the limits on hostile input.
//!
//! Every test prints what it saw (error lines, timings, the seed of the
//! random kill delays) so `cargo test -- --nocapture` shows it.

use std::io::Write;
use std::path::Path;
use std::process::{Command, ExitStatus};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::{
    BIN, Cmd, Counts, Db, Output, Project, Server, checkpoint_and_close, content_digest,
    history_check, integrity_check, keys, open_read_only, row, search_check, sidecar, wal_len,
};

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
           "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                      "clientInfo": {"name": "faults", "version": "1"}}})
}

fn initialized_line() -> String {
    json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string()
}

/// A server on `db` past the handshake.
fn handshaken(db: &Path, args: &[&str]) -> Server {
    let mut server = Server::start(db, args);
    let init = server.request(&initialize());
    assert!(init["result"].is_object(), "{init}");
    server.send(&initialized_line());
    server
}

fn lines_of(messages: &[Value]) -> Vec<u8> {
    let mut input = Vec::new();
    for message in messages {
        input.extend_from_slice(message.to_string().as_bytes());
        input.push(b'\n');
    }
    input
}

// 1. SIGKILL at random moments of a 20,000-document import.

/// SplitMix64: small, deterministic, good enough to spread delays. Seeded
/// from `FAULTS_SEED` when set (to replay a failure), else from the clock;
/// the seed is printed.
struct Rng(u64);

impl Rng {
    fn seeded() -> (Rng, u64) {
        let seed = match std::env::var("FAULTS_SEED") {
            Ok(text) => text.parse().expect("FAULTS_SEED is a u64"),
            Err(_) => std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64,
        };
        (Rng(seed), seed)
    }

    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

const CRASH_DOCS: usize = 20_000;
const CRASH_TRIALS: usize = 20;
/// Kills that must land while the import's transaction was writing.
const MIN_MID_IMPORT: usize = 3;

/// A ~300-byte document, different for every (index, version).
fn small_doc(i: usize, version: usize) -> String {
    let mut text = format!(
        "---\ntitle: Doc {i} v{version}\nstatus: s{version}\ntags: [t{}, v{version}]\n---\n# Doc {i}\n\n",
        i % 7
    );
    while text.len() < 300 {
        text.push_str(&format!("version {version} of document {i}, lorem ipsum\n"));
    }
    text
}

fn small_path(i: usize) -> String {
    let folder = ["features", "notes", "docs/area"][i % 3];
    format!("{folder}/doc-{i:05}.md")
}

struct Trial {
    delay: Duration,
    status: ExitStatus,
    wal: u64,
    state: &'static str,
}

impl Trial {
    /// Killed by the signal, with the old state and a WAL that had grown:
    /// the transaction was writing when the kill landed.
    fn mid_import(&self) -> bool {
        self.state == "A" && self.wal > 0 && self.status.code().is_none()
    }
}

#[test]
fn sigkill_at_random_moments_of_a_20k_document_import_leaves_the_old_or_the_new_state() {
    let started = Instant::now();
    let (mut rng, seed) = Rng::seeded();
    eprintln!("FAULTS_SEED={seed}");
    let p = Project::new();
    for i in 0..CRASH_DOCS {
        p.file(&small_path(i), small_doc(i, 1));
    }

    // State A: a clean import, its WAL folded in, so the file alone is A.
    let a_db = p.root_path("a.db");
    let out = p.run(&["import", "project", "--db", "a.db", "--json"]);
    out.assert_success();
    assert_eq!(out.report().counts().new, CRASH_DOCS as u64);
    checkpoint_and_close(&a_db);
    let a = content_digest(&a_db);

    // State B: 5,000 modified, 2,000 removed, 2,000 added.
    for i in (0..CRASH_DOCS).step_by(4) {
        p.file(&small_path(i), small_doc(i, 2));
    }
    for i in (1..CRASH_DOCS).step_by(10) {
        p.remove(&small_path(i));
    }
    for i in CRASH_DOCS..CRASH_DOCS + 2000 {
        p.file(&small_path(i), small_doc(i, 1));
    }
    // One complete import from A gives B, and the time a full import takes.
    let b_db = p.root_path("b.db");
    std::fs::copy(&a_db, &b_db).unwrap();
    let t0 = Instant::now();
    let out = p.run(&["import", "project", "--db", "b.db", "--json"]);
    let full = t0.elapsed();
    out.assert_success();
    assert_eq!(
        out.report().counts(),
        Counts {
            new: 2000,
            updated: 5000,
            removed: 2000,
            unchanged: 13_000,
            ..Counts::default()
        }
    );
    let b = content_digest(&b_db);
    assert_ne!(a, b);

    let setup = started.elapsed();
    let mut checking = Duration::ZERO;
    let db = p.root_path("trial.db");
    let mut trial = |delay: Duration| -> Trial {
        for file in [db.clone(), sidecar(&db, "-wal"), sidecar(&db, "-shm")] {
            let _ = std::fs::remove_file(file);
        }
        std::fs::copy(&a_db, &db).unwrap();
        let mut child = p.cmd(&["import", "project", "--db", "trial.db"]).spawn();
        std::thread::sleep(delay);
        child.kill().unwrap(); // SIGKILL
        let status = child.wait().unwrap();
        let wal = wal_len(&db);
        let t = Instant::now();
        let check = integrity_check(&db);
        assert_eq!(
            check, "ok",
            "FAULTS_SEED={seed}: killed after {delay:?} ({status})"
        );
        assert_eq!(
            search_check(&db),
            "ok",
            "FAULTS_SEED={seed}: killed after {delay:?} ({status}): the search index"
        );
        assert_eq!(
            history_check(&db),
            "ok",
            "FAULTS_SEED={seed}: killed after {delay:?} ({status}): the history"
        );
        let digest = content_digest(&db);
        let state = if digest == a {
            "A"
        } else if digest == b {
            "B"
        } else {
            panic!(
                "FAULTS_SEED={seed}: killed after {delay:?} ({status}, WAL {wal} bytes): \
                 the database is neither the state before the import nor the state after it"
            )
        };
        checking += t.elapsed();
        Trial {
            delay,
            status,
            wal,
            state,
        }
    };

    // One delay drawn at random in each twentieth of 1.1 full imports: spread
    // over the whole import, a few after its end.
    let mut trials: Vec<Trial> = (0..CRASH_TRIALS)
        .map(|k| trial(full.mul_f64(1.1 * (k as f64 + rng.unit()) / CRASH_TRIALS as f64)))
        .collect();
    // A loaded machine can shift the writing window: a few more kills inside
    // the middle of the import until enough landed there.
    let mut extra = 0;
    while trials.iter().filter(|t| t.mid_import()).count() < MIN_MID_IMPORT && extra < 10 {
        trials.push(trial(full.mul_f64(0.3 + 0.5 * rng.unit())));
        extra += 1;
    }

    let outcomes: Vec<String> = trials
        .iter()
        .map(|t| {
            format!(
                "{:>9.1?}: {}, WAL {} bytes, state {}{}",
                t.delay,
                t.status,
                t.wal,
                t.state,
                if t.mid_import() { " (mid-import)" } else { "" }
            )
        })
        .collect();
    let mid = trials.iter().filter(|t| t.mid_import()).count();
    eprintln!(
        "FAULTS_SEED={seed}; full import {full:?}; {} trials ({extra} extra), {mid} mid-import; \
         test {:?} (set-up {setup:?}, checks {checking:?})\n{}",
        trials.len(),
        started.elapsed(),
        outcomes.join("\n")
    );
    assert!(
        trials.len() >= CRASH_TRIALS,
        "at least {CRASH_TRIALS} trials"
    );
    assert!(
        mid >= MIN_MID_IMPORT,
        "FAULTS_SEED={seed}: only {mid} kills landed while the import was writing \
         (full import {full:?}):\n{}",
        outcomes.join("\n")
    );
}

// 2. Resource faults.

/// A ~2 KB document.
fn medium_doc(i: usize, version: usize) -> String {
    let mut text = format!("# Document {i} v{version}\n\n");
    while text.len() < 2000 {
        text.push_str(&format!("line of version {version} of document {i}\n"));
    }
    text
}

const DISK_DOCS: usize = 1500;

/// A project of about 3 MB: more than any limit below lets SQLite write.
fn disk_project() -> Project {
    let p = Project::new();
    for i in 0..DISK_DOCS {
        p.file(&format!("notes/n-{i:04}.md"), medium_doc(i, 1));
    }
    p
}

/// `orchestra import project --db DB` with files limited to `kib` KiB
/// (bash's `ulimit -f` counts 1024-byte blocks) and SIGXFSZ ignored, so a
/// write past the limit fails with EFBIG as on a full disk.
fn import_with_file_limit(p: &Project, kib: u32, db: &str) -> Output {
    let kib = kib.to_string();
    p.cmd(&["import", "project", "--db", db])
        .via(&[
            "bash",
            "-c",
            r#"trap "" XFSZ; ulimit -f "$0" && exec "$@""#,
            &kib,
        ])
        .run()
}

/// The documents of `db`: 0 when the schema was never written.
fn document_count(db: &Path) -> i64 {
    let conn = open_read_only(db);
    let tables: i64 = conn
        .query_row(
            "SELECT count(*) FROM sqlite_schema WHERE name = 'documents'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    if tables == 0 {
        return 0;
    }
    conn.query_row("SELECT count(*) FROM documents", [], |r| r.get(0))
        .unwrap()
}

/// Checks a failed run's error line; returns what is wrong with it.
fn check_error_line(out: &Output, db: &str, reasons: &[&str], what: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let said = out.stderr_lines();
    let ok_shape = out.code == Some(1)
        && out.stdout.is_empty()
        && said.len() == 1
        && said[0].starts_with("orchestra: ");
    if !ok_shape {
        problems.push(format!(
            "{what}: expected exit status 1 and one `orchestra: ` line: {out:#?}"
        ));
        return problems;
    }
    let line = said[0].trim_end();
    eprintln!("{what}: {line}");
    if !line.contains(db) {
        problems.push(format!(
            "{what}: the error does not name the database {db}: {line}"
        ));
    }
    let lower = line.to_lowercase();
    if !reasons.iter().any(|r| lower.contains(r)) {
        problems.push(format!(
            "{what}: the error gives no reason ({reasons:?}): {line}"
        ));
    }
    problems
}

const DISK_REASONS: &[&str] = &["disk", "full", "space", "too large", "write"];

#[test]
fn a_full_disk_fails_an_import_into_a_fresh_database_cleanly() {
    let p = disk_project();
    let mut problems = Vec::new();
    // 64 KiB fails while the schema is written, 1 MiB inside the import.
    for kib in [64, 1024] {
        let name = format!("fresh-{kib}.db");
        let out = import_with_file_limit(&p, kib, &name);
        let what = format!("fresh database, ulimit -f {kib}");
        problems.extend(check_error_line(&out, &name, DISK_REASONS, &what));

        let db = p.root_path(&name);
        if db.exists() {
            assert_eq!(integrity_check(&db), "ok", "{what}");
            assert_eq!(
                document_count(&db),
                0,
                "{what}: the failed import left documents"
            );
        }
        // Without the limit, the same database takes the import.
        let report = p.import_json(&["--db", &name]);
        assert_eq!(report.counts().new, DISK_DOCS as u64, "{what}");
    }
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn a_full_disk_fails_an_import_into_an_existing_database_and_keeps_it() {
    let p = disk_project();
    p.run(&["import", "project", "--db", "a.db"])
        .assert_success();
    checkpoint_and_close(&p.root_path("a.db"));
    let a = content_digest(&p.root_path("a.db"));
    for i in 0..DISK_DOCS {
        p.file(&format!("notes/n-{i:04}.md"), medium_doc(i, 2));
    }
    let mut problems = Vec::new();
    for kib in [64, 1024] {
        let name = format!("existing-{kib}.db");
        let db = p.root_path(&name);
        std::fs::copy(p.root_path("a.db"), &db).unwrap();
        let out = import_with_file_limit(&p, kib, &name);
        let what = format!("existing database, ulimit -f {kib}");
        problems.extend(check_error_line(&out, &name, DISK_REASONS, &what));

        assert_eq!(integrity_check(&db), "ok", "{what}");
        assert!(content_digest(&db) == a, "{what}: the database changed");
        let report = p.import_json(&["--db", &name]);
        assert_eq!(report.counts().updated, DISK_DOCS as u64, "{what}");
    }
    assert!(problems.is_empty(), "{problems:#?}");
}

/// The euid of this test process.
fn euid() -> String {
    let out = Command::new("id").arg("-u").output().expect("run id -u");
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// How to run the binary so that file permissions apply: as `nobody`
/// through `setpriv` when the tests run as root (root ignores them), as is
/// otherwise.
fn unprivileged_prefix() -> Vec<&'static str> {
    if euid() != "0" {
        return Vec::new();
    }
    let setpriv = Command::new("setpriv").arg("--version").output();
    assert!(
        setpriv.is_ok_and(|o| o.status.success()),
        "the tests run as root and setpriv (util-linux) is missing: \
         cannot drop privileges to test a read-only database"
    );
    vec![
        "setpriv",
        "--reuid=nobody",
        "--regid=nogroup",
        "--clear-groups",
    ]
}

fn unprivileged(cmd: Cmd) -> Cmd {
    let prefix = unprivileged_prefix();
    if prefix.is_empty() {
        cmd
    } else {
        cmd.via(&prefix)
    }
}

fn chmod(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
fn a_read_only_database_is_refused_by_import_and_left_intact() {
    let p = Project::fixture();
    chmod(p.root(), 0o755); // the temp folder is 0700: let nobody in
    std::fs::create_dir(p.root_path("ro")).unwrap();
    let db = p.root_path("ro/o.db");
    p.run(&["import", "project", "--db", "ro/o.db"])
        .assert_success();
    checkpoint_and_close(&db);
    let before = content_digest(&db);
    // Readers leave these behind; the unprivileged run must find none.
    for suffix in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(sidecar(&db, suffix));
    }
    let bytes = std::fs::read(&db).unwrap();
    p.file("features/FEAT-009.md", "# Nine\n"); // something to write
    chmod(&db, 0o444);
    chmod(&p.root_path("ro"), 0o555);

    let out = unprivileged(p.cmd(&["import", "project", "--db", "ro/o.db"])).run();
    let problems = check_error_line(
        &out,
        "ro/o.db",
        &["read-only", "readonly", "permission"],
        "import into a read-only database",
    );

    assert!(
        std::fs::read(&db).unwrap() == bytes,
        "the database file changed"
    );
    assert!(!sidecar(&db, "-wal").exists() && !sidecar(&db, "-shm").exists());
    chmod(&p.root_path("ro"), 0o755);
    assert!(content_digest(&db) == before);
    assert!(problems.is_empty(), "{problems:#?}");
}

/// `serve` on a read-only database in a read-only folder either serves it
/// (it only reads) or refuses to start with one line that names it. Today
/// it refuses: SQLite cannot open a WAL database read-only when it can
/// neither find nor create the `-shm` file.
#[test]
fn serve_on_a_read_only_database_serves_it_or_says_why_not() {
    let p = Project::fixture();
    chmod(p.root(), 0o755);
    std::fs::create_dir(p.root_path("ro")).unwrap();
    let db = p.root_path("ro/o.db");
    p.run(&["import", "project", "--db", "ro/o.db"])
        .assert_success();
    checkpoint_and_close(&db);
    for suffix in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(sidecar(&db, suffix));
    }
    let bytes = std::fs::read(&db).unwrap();
    chmod(&db, 0o444);
    chmod(&p.root_path("ro"), 0o555);

    let prefix = unprivileged_prefix();
    let mut command = match prefix.split_first() {
        Some((program, args)) => {
            let mut c = Command::new(program);
            c.args(args).arg(BIN);
            c
        }
        None => Command::new(BIN),
    };
    command
        .args(["serve", "--db", "ro/o.db"])
        .current_dir(p.root())
        .env_remove("RUST_LOG");
    let read = json!({"jsonrpc": "2.0", "id": 1, "method": "resources/read",
                      "params": {"uri": "orchestra://features/FEAT-001"}});
    let ping = json!({"jsonrpc": "2.0", "id": 2, "method": "ping"});
    let out = Cmd::from(command)
        .input(lines_of(&[
            initialize(),
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            read,
            ping,
        ]))
        .run();

    if out.code == Some(1) && out.stdout.is_empty() {
        let problems = check_error_line(
            &out,
            "ro/o.db",
            &["read-only", "readonly", "permission"],
            "serve on a read-only database",
        );
        assert!(problems.is_empty(), "{problems:#?}");
    } else {
        eprintln!("serve answers from a read-only database");
        assert_eq!(out.code, Some(0), "{out:#?}");
        let answers: Vec<Value> = out
            .stdout
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(answers.len(), 3, "{out:#?}");
        let file = std::fs::read_to_string(p.path("features/FEAT-001.md")).unwrap();
        assert_eq!(answers[1]["id"], 1);
        assert_eq!(
            answers[1]["result"]["contents"][0]["text"].as_str(),
            Some(file.as_str())
        );
        assert_eq!(answers[2], json!({"jsonrpc": "2.0", "id": 2, "result": {}}));
    }
    assert!(
        std::fs::read(&db).unwrap() == bytes,
        "the database file changed"
    );
    chmod(&p.root_path("ro"), 0o755);
}

#[test]
fn a_database_deleted_under_a_running_server_gets_answers_not_a_crash() {
    let p = Project::fixture();
    p.import(&[]).assert_success();
    let db = p.db();
    let mut server = handshaken(&db, &[]);
    let read = |id: i64, uri: &str| json!({"jsonrpc": "2.0", "id": id, "method": "resources/read", "params": {"uri": uri}});
    let first = server.request(&read(1, "orchestra://features/FEAT-001"));
    assert!(
        first["result"]["contents"][0]["text"].is_string(),
        "{first}"
    );

    for file in [db.clone(), sidecar(&db, "-wal"), sidecar(&db, "-shm")] {
        let _ = std::fs::remove_file(file);
    }
    assert!(!db.exists());
    // Let the change poller look at the deleted file a few times.
    std::thread::sleep(Duration::from_millis(300));

    let requests = [
        json!({"jsonrpc": "2.0", "id": 2, "method": "resources/list"}),
        read(3, "orchestra://features/FEAT-001"),
        read(4, "orchestra://notes/retro-sprint-14"),
        json!({"jsonrpc": "2.0", "id": 5, "method": "resources/templates/list"}),
        json!({"jsonrpc": "2.0", "id": 6, "method": "completion/complete",
               "params": {"ref": {"type": "ref/resource", "uri": "orchestra://features/{+id}"},
                          "argument": {"name": "id", "value": "FEAT"}}}),
        json!({"jsonrpc": "2.0", "id": 7, "method": "ping"}),
    ];
    let mut seen = Vec::new();
    for request in &requests {
        let answer = server.request(request);
        let ok = answer["result"].is_object()
            || (answer["error"]["code"].is_i64() && answer["error"]["message"].is_string());
        assert!(ok, "{request} got {answer}");
        seen.push(format!(
            "{}: {}",
            request["method"],
            if answer["result"].is_object() {
                "result".to_string()
            } else {
                answer["error"].to_string()
            }
        ));
    }
    // A burst of concurrent reads, more than the pool holds connections.
    for id in 100..140 {
        server.send(&read(id, "orchestra://docs/adr/0001").to_string());
    }
    let mut ids = Vec::new();
    let mut errors = 0;
    while ids.len() < 40 {
        let answer: Value = serde_json::from_str(&server.recv()).unwrap();
        let Some(id) = answer["id"].as_i64() else {
            continue; // a notification
        };
        assert!(
            answer["result"].is_object() || answer["error"]["code"].is_i64(),
            "{answer}"
        );
        errors += usize::from(answer.get("error").is_some());
        ids.push(id);
    }
    ids.sort();
    assert_eq!(ids, (100..140).collect::<Vec<_>>());
    let ping = server.request(&json!({"jsonrpc": "2.0", "id": 8, "method": "ping"}));
    assert_eq!(ping["result"], json!({}), "{ping}");
    eprintln!(
        "after the database was deleted:\n{}\nburst of 40 reads: {errors} errors",
        seen.join("\n")
    );

    assert!(
        server.child.try_wait().unwrap().is_none(),
        "the server died"
    );
    let (_, status) = server.close();
    assert!(status.success(), "{status}");
}

// 3. Limits.

#[test]
fn a_17_mib_line_is_refused_and_the_next_request_answered() {
    let p = Project::fixture();
    p.import(&[]).assert_success();
    let mut server = handshaken(&p.db(), &[]);
    let pad = "x".repeat(17 * 1024 * 1024);
    server.send(&format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"pad":"{pad}"}}}}"#
    ));
    server.send(r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#);

    let refused: Value = serde_json::from_str(&server.recv()).unwrap();
    eprintln!("17 MiB line: {refused}");
    assert_eq!(refused["id"], Value::Null, "{refused}");
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("16777216")),
        "{refused}"
    );
    assert_eq!(
        server.recv(),
        r#"{"jsonrpc":"2.0","id":2,"result":{}}"#,
        "the request after the long line"
    );
    let (_, status) = server.close();
    assert!(status.success());
}

#[test]
fn a_uri_over_4_kib_is_invalid_params() {
    let p = Project::fixture();
    p.import(&[]).assert_success();
    let mut server = handshaken(&p.db(), &[]);
    let long = format!("orchestra://features/{}", "a".repeat(5000));
    for (id, method) in [(1, "resources/read"), (2, "resources/subscribe")] {
        let answer = server.request(
            &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": {"uri": long}}),
        );
        eprintln!("{method} with a 5 KB URI: {answer}");
        assert_eq!(answer["error"]["code"], -32602, "{method}: {answer}");
        let message = answer["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("4096"), "{method}: {answer}");
    }
    let ping = server.request(&json!({"jsonrpc": "2.0", "id": 3, "method": "ping"}));
    assert_eq!(ping["result"], json!({}));
}

#[test]
fn page_size_outside_1_to_1000_is_a_usage_error() {
    let p = Project::fixture();
    p.import(&[]).assert_success();
    for n in ["0", "1001"] {
        let out = p.run(&["serve", "--page-size", n]);
        eprintln!("--page-size {n}: {}", out.stderr.trim_end());
        assert_eq!(out.code, Some(2), "--page-size {n}: {out:#?}");
        assert_eq!(out.stdout, "");
        assert!(
            out.stderr.contains("--page-size") && out.stderr.contains(n),
            "--page-size {n}: {out:#?}"
        );
    }
    // The bounds themselves are accepted (stdin is empty: the server ends at once).
    for n in ["1", "1000"] {
        let out = p.run(&["serve", "--page-size", n]);
        assert_eq!(out.code, Some(0), "--page-size {n}: {out:#?}");
    }
}

#[test]
fn subscription_100001_is_refused_with_the_limit() {
    const LIMIT: usize = 100_000;
    let p = Project::fixture();
    p.import(&[]).assert_success();
    let started = Instant::now();
    let mut input = Vec::with_capacity(12 * 1024 * 1024);
    input.extend_from_slice(initialize().to_string().as_bytes());
    input.push(b'\n');
    input.extend_from_slice(initialized_line().as_bytes());
    input.push(b'\n');
    for id in 1..=LIMIT + 1 {
        // Documents that do not exist yet may be subscribed to.
        writeln!(
            input,
            r#"{{"jsonrpc":"2.0","id":{id},"method":"resources/subscribe","params":{{"uri":"orchestra://notes/s-{id}"}}}}"#
        )
        .unwrap();
    }
    let mut command = Command::new(BIN);
    command
        .args(["serve", "--db"])
        .arg(p.db())
        .env_remove("RUST_LOG");
    let out = Cmd::from(command).input(input).run();
    assert_eq!(out.code, Some(0), "{}", out.stderr);

    let lines = out.stdout_lines();
    assert_eq!(lines.len(), LIMIT + 2, "one answer per request");
    for (n, line) in lines[1..=LIMIT].iter().enumerate() {
        let expected = format!(r#"{{"jsonrpc":"2.0","id":{},"result":{{}}}}"#, n + 1);
        assert_eq!(*line, expected);
    }
    let last: Value = serde_json::from_str(lines[LIMIT + 1]).unwrap();
    eprintln!(
        "subscription {}: {last} ({:?})",
        LIMIT + 1,
        started.elapsed()
    );
    assert_eq!(last["id"], LIMIT + 1);
    assert_eq!(last["error"]["code"], -32602, "{last}");
    assert!(
        last["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("100000")),
        "{last}"
    );
}

/// Imports the project from inside it (`import .` with the project as the
/// working folder) twice: both succeed, the second changes nothing, and the
/// database is never a document.
fn import_twice_from_inside(p: &Project, db_args: &[&str], db: &Path) {
    let mut args = vec!["import", ".", "--json"];
    args.extend_from_slice(db_args);
    let first = p.cmd(&args).current_dir(p.dir()).run();
    first.assert_success();
    let second = p.cmd(&args).current_dir(p.dir()).run();
    second.assert_success();
    eprintln!(
        "{db_args:?}:\n  {}\n  {}",
        first.stdout.trim_end(),
        second.stdout.trim_end()
    );

    assert!(db.is_file(), "{} was not created", db.display());
    let first = first.report();
    assert_eq!(first.counts().new, 17, "{db_args:?}: {:?}", first.0);
    let second = second.report();
    assert_eq!(
        second.counts(),
        Counts {
            unchanged: 17,
            ignored: first.counts().ignored,
            ..Counts::default()
        },
        "{db_args:?}: the second import changed something: {:?}",
        second.0
    );
    assert_eq!(second.seq(), 0);
    assert!(second.warnings().is_empty(), "{:?}", second.warnings());
    let stored = keys(db);
    assert_eq!(stored.len(), 17, "{stored:?}");
    let conn = open_read_only(db);
    let database_rows: i64 = conn
        .query_row(
            "SELECT count(*) FROM documents WHERE substr(body, 1, 16) = CAST('SQLite format 3' || char(0) AS BLOB)",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(
        database_rows, 0,
        "{db_args:?}: the database became a document"
    );
}

#[test]
fn a_project_that_holds_its_own_database_imports_it_never() {
    let p = Project::fixture();
    import_twice_from_inside(&p, &[], &p.path(".orchestra/orchestra.db"));
    import_twice_from_inside(
        &p,
        &["--db", "features/orchestra.db"],
        &p.path("features/orchestra.db"),
    );
}

/// A database whose name ends in `.md` inside a prefix folder: it must not
/// be imported as a document of itself (it changes with every import, so an
/// import that took it would never settle).
#[test]
fn a_database_named_like_a_document_is_not_imported() {
    let p = Project::fixture();
    import_twice_from_inside(
        &p,
        &["--db", "notes/orchestra.md"],
        &p.path("notes/orchestra.md"),
    );
}

#[test]
fn a_folder_of_100k_files_is_imported() {
    const FILES: usize = 100_000;
    const DISTINCT: usize = 1000;
    let p = Project::new();
    let dir = p.path("features");
    std::fs::create_dir_all(&dir).unwrap();
    // Creating an inode costs 0.1 to 0.5 ms on the CI machines, 10 to 50 s
    // for 100,000 files; a hard link costs 15 µs. So 1,000 distinct files,
    // and 99,000 more names for them: to the import (walk, stat, read, one
    // row per path) they are 100,000 files.
    let t = Instant::now();
    for i in 0..FILES {
        let path = dir.join(format!("F{i:06}.md"));
        if i < DISTINCT {
            std::fs::write(&path, format!("# F{i}\n")).unwrap();
        } else {
            std::fs::hard_link(dir.join(format!("F{:06}.md", i % DISTINCT)), &path).unwrap();
        }
    }
    let generated = t.elapsed();

    let t = Instant::now();
    let report = p.import_json(&[]);
    let first = t.elapsed();
    assert_eq!(
        report.counts(),
        Counts {
            new: FILES as u64,
            ..Counts::default()
        }
    );
    let t = Instant::now();
    let again = p.import_json(&[]);
    let second = t.elapsed();
    assert_eq!(
        again.counts(),
        Counts {
            unchanged: FILES as u64,
            ..Counts::default()
        }
    );
    let stored = Db::open(&p.db()).int("SELECT count(*) FROM documents", &[]);
    assert_eq!(stored, FILES as i64);
    assert_eq!(row(&p.db(), "features/F099999").body, b"# F999\n");
    eprintln!(
        "{FILES} files in one folder: written in {generated:?}, imported in {first:?}, \
         imported again (nothing changed) in {second:?}"
    );
}
