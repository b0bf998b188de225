//! Test helpers: a temp folder per test, a project builder, and the real binary to run in it.
//!
//! Layout of a test's temp folder (`Project::root`): the project lives in
//! `project/`, the binary runs with the temp folder as its working directory,
//! so the default database is `.orchestra/orchestra.db` next to the project.
//! Other folders (`outside/`, a second project) can be made beside it.

use std::collections::BTreeMap;
use std::fmt;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use rusqlite::{Connection, OpenFlags};

/// The binary under test, built by cargo for this test run.
pub const BIN: &str = env!("CARGO_BIN_EXE_orchestra");

/// A run that takes longer than this is a hang: it is killed and the test fails.
/// Generous: on two cores, the suite's parallel tests share them with a
/// PostgreSQL server (an import on PostgreSQL beside the 100k-file test
/// once took a minute on a loaded machine).
const RUN_TIMEOUT: Duration = Duration::from_secs(120);

/// The shipped fixture project (never written to: tests copy it).
pub fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/project")
}

/// One test's temp folder, holding a project folder `project/`.
pub struct Project {
    /// The project's PostgreSQL database, when the suite runs on
    /// PostgreSQL ([`on_postgres`]): every command's default database.
    pg: Option<PgDatabase>,
    tmp: tempfile::TempDir,
}

/// Whether this run's projects keep their default database on PostgreSQL
/// (`ORCHESTRA_IT_BACKEND=postgres`, as scripts/test.sh runs the HTTP
/// tests a second time) rather than in a SQLite file.
pub fn on_postgres() -> bool {
    std::env::var("ORCHESTRA_IT_BACKEND").is_ok_and(|backend| backend == "postgres")
}

impl Project {
    /// An empty project folder in a fresh temp folder.
    pub fn new() -> Project {
        let tmp = tempfile::Builder::new()
            .prefix("orchestra-it-")
            .tempdir()
            .expect("create a temp folder");
        std::fs::create_dir(tmp.path().join("project")).unwrap();
        Project {
            pg: on_postgres().then(PgDatabase::new),
            tmp,
        }
    }

    /// A copy of the shipped fixture project.
    pub fn fixture() -> Project {
        let p = Project::new();
        copy_tree(&fixture_dir(), &p.dir());
        p
    }

    /// The temp folder: the working directory of every run.
    pub fn root(&self) -> &Path {
        self.tmp.path()
    }

    /// The project folder, `<root>/project`.
    pub fn dir(&self) -> PathBuf {
        self.root().join("project")
    }

    /// `rel` inside the project folder.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir().join(rel)
    }

    /// `rel` inside the temp folder (outside the project).
    pub fn root_path(&self, rel: &str) -> PathBuf {
        self.root().join(rel)
    }

    /// The default database: `<root>/.orchestra/orchestra.db`, or the
    /// project's PostgreSQL database's URL.
    pub fn db(&self) -> PathBuf {
        match &self.pg {
            Some(pg) => PathBuf::from(pg.url()),
            None => self.root_path(".orchestra/orchestra.db"),
        }
    }

    /// The default database as a `--db` from the working folder names it:
    /// `.orchestra/orchestra.db`, or the PostgreSQL database's URL.
    pub fn db_arg(&self) -> String {
        match &self.pg {
            Some(pg) => pg.url(),
            None => ".orchestra/orchestra.db".to_string(),
        }
    }

    /// The default database as orchestra names it when it repeats a
    /// `--db`: `.orchestra/orchestra.db`; on PostgreSQL, the URL with the
    /// user, host and port the environment gives, never a password (as a
    /// dry run's report names it).
    pub fn db_shown(&self) -> String {
        match &self.pg {
            Some(_) => {
                let report = self.import_json(&["--dry-run"]);
                report.0["db"].as_str().expect("db").to_string()
            }
            None => ".orchestra/orchestra.db".to_string(),
        }
    }

    /// Writes a project file, creating its folders.
    pub fn file(&self, rel: &str, contents: impl AsRef<[u8]>) -> &Project {
        write_file(&self.path(rel), contents.as_ref());
        self
    }

    /// Writes a file `rel` of the temp folder (outside the project).
    pub fn outside_file(&self, rel: &str, contents: impl AsRef<[u8]>) -> &Project {
        write_file(&self.root_path(rel), contents.as_ref());
        self
    }

    /// Removes a project file.
    pub fn remove(&self, rel: &str) -> &Project {
        std::fs::remove_file(self.path(rel)).unwrap_or_else(|e| panic!("remove {rel}: {e}"));
        self
    }

    /// Renames a project file.
    pub fn rename(&self, from: &str, to: &str) -> &Project {
        std::fs::rename(self.path(from), self.path(to))
            .unwrap_or_else(|e| panic!("rename {from} to {to}: {e}"));
        self
    }

    /// Moves a project file's mtime two seconds later, bytes untouched.
    pub fn touch(&self, rel: &str) -> &Project {
        let path = self.path(rel);
        let mtime = std::fs::metadata(&path).unwrap().modified().unwrap();
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(mtime + Duration::from_secs(2))
            .unwrap();
        self
    }

    /// Makes the project entry `rel` a symlink to `target` (taken as is:
    /// relative targets are relative to the link's folder).
    pub fn symlink(&self, rel: &str, target: impl AsRef<Path>) -> &Project {
        let link = self.path(rel);
        if let Some(parent) = link.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::os::unix::fs::symlink(target.as_ref(), &link)
            .unwrap_or_else(|e| panic!("symlink {rel}: {e}"));
        self
    }

    /// Sets the Unix permission bits of a project file.
    pub fn chmod(&self, rel: &str, mode: u32) -> &Project {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(self.path(rel), std::fs::Permissions::from_mode(mode)).unwrap();
        self
    }

    /// A command running the binary with `args`, in the temp folder.
    pub fn cmd(&self, args: &[&str]) -> Cmd {
        let mut command = Command::new(BIN);
        command
            .args(args)
            .current_dir(self.root())
            .env_remove("ORCHESTRA_DB")
            .env_remove("RUST_LOG")
            .stdin(Stdio::null());
        if let Some(pg) = &self.pg {
            command.env("ORCHESTRA_DB", pg.url());
        }
        Cmd::from(command)
    }

    /// Runs the binary with `args` and waits for it.
    pub fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).run()
    }

    /// `orchestra import project EXTRA..` with the default database.
    pub fn import(&self, extra: &[&str]) -> Output {
        let mut args = vec!["import", "project"];
        args.extend_from_slice(extra);
        self.run(&args)
    }

    /// `orchestra import project --json EXTRA..`, which must succeed: its report.
    pub fn import_json(&self, extra: &[&str]) -> Report {
        let mut args = vec!["--json"];
        args.extend_from_slice(extra);
        let out = self.import(&args);
        out.assert_success();
        out.report()
    }

    /// Bytes and mtime of every file of the project (symlinks not followed).
    pub fn snapshot(&self) -> BTreeMap<PathBuf, (Vec<u8>, SystemTime)> {
        let mut files = BTreeMap::new();
        snapshot_into(&self.dir(), &self.dir(), &mut files);
        files
    }
}

fn write_file(path: &Path, contents: &[u8]) {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(path, contents).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
}

/// Copies the folder `from` to `to` (created), recursively.
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

fn snapshot_into(base: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, (Vec<u8>, SystemTime)>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let meta = std::fs::symlink_metadata(entry.path()).unwrap();
        if meta.is_dir() {
            snapshot_into(base, &entry.path(), out);
        } else if meta.is_file() {
            let rel = entry.path().strip_prefix(base).unwrap().to_path_buf();
            out.insert(
                rel,
                (
                    std::fs::read(entry.path()).unwrap(),
                    meta.modified().unwrap(),
                ),
            );
        }
    }
}

/// A command line to run; see [`Project::cmd`].
pub struct Cmd {
    command: Command,
    /// Written to stdin (then closed) when set; stdin is empty otherwise.
    input: Option<Vec<u8>>,
}

impl From<Command> for Cmd {
    fn from(command: Command) -> Cmd {
        Cmd {
            command,
            input: None,
        }
    }
}

impl Cmd {
    /// Feeds `input` to stdin, from a thread, so a process that answers
    /// while it reads cannot block the test.
    pub fn input(mut self, input: Vec<u8>) -> Cmd {
        self.input = Some(input);
        self
    }

    pub fn env(mut self, key: &str, value: impl AsRef<std::ffi::OsStr>) -> Cmd {
        self.command.env(key, value);
        self
    }

    pub fn env_remove(mut self, key: &str) -> Cmd {
        self.command.env_remove(key);
        self
    }

    /// Runs in `dir` instead of the temp folder.
    pub fn current_dir(mut self, dir: impl AsRef<Path>) -> Cmd {
        self.command.current_dir(dir);
        self
    }

    /// Starts the binary with stdout and stderr discarded.
    pub fn spawn(mut self) -> Child {
        self.command
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start orchestra")
    }

    /// Runs to completion (killed and failed after [`RUN_TIMEOUT`]).
    pub fn run(self) -> Output {
        let raw = self.run_raw();
        let text = |bytes: Vec<u8>| String::from_utf8(bytes).expect("output is UTF-8");
        Output {
            code: raw.code,
            stdout: text(raw.stdout),
            stderr: text(raw.stderr),
        }
    }

    /// As [`Cmd::run`], the output kept as bytes, which need not be UTF-8.
    pub fn run_raw(mut self) -> RawOutput {
        self.command.stdout(Stdio::piped());
        let (mut child, writer) = self.start();
        let stdout = drain(child.stdout.take().unwrap());
        finish(child, writer, stdout)
    }

    /// Runs with stdout on a new pseudo-terminal of `rows` × `columns`
    /// (stdin as for [`Cmd::run`], stderr a pipe): what a person at a
    /// terminal sees, with the terminal's `\r\n` turned back into `\n`
    /// (and bytes that are not UTF-8 shown as U+FFFD).
    /// The command must set `PAGER`: `less` would wait for keys.
    pub fn run_on_terminal(mut self, rows: u16, columns: u16) -> Output {
        use std::os::fd::{FromRawFd, OwnedFd};
        assert!(
            self.command.get_envs().any(|(key, _)| key == "PAGER"),
            "a run on a terminal must set PAGER"
        );
        let size = libc::winsize {
            ws_row: rows,
            ws_col: columns,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        let (mut master, mut slave) = (0, 0);
        // SAFETY: openpty writes two new descriptors, owned from here on.
        let rc = unsafe {
            libc::openpty(
                &mut master,
                &mut slave,
                std::ptr::null_mut(),
                std::ptr::null(),
                &size,
            )
        };
        assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
        let (master, slave) = unsafe {
            (
                std::fs::File::from_raw_fd(master),
                OwnedFd::from_raw_fd(slave),
            )
        };
        self.command.stdout(Stdio::from(slave));
        let (child, writer) = self.start();
        // Our copy of the terminal's end goes with the command: reading the
        // other end ends when the processes' copies close.
        drop(self);
        let raw = finish(child, writer, drain(master));
        Output {
            code: raw.code,
            // What a terminal would show: bytes that are not UTF-8 as U+FFFD.
            stdout: String::from_utf8_lossy(&raw.stdout).replace("\r\n", "\n"),
            stderr: String::from_utf8(raw.stderr).expect("stderr is UTF-8"),
        }
    }

    /// Spawns the command (stdout as configured, stderr piped) and the
    /// thread that feeds its stdin.
    fn start(&mut self) -> (Child, Option<std::thread::JoinHandle<()>>) {
        if self.input.is_some() {
            self.command.stdin(Stdio::piped());
        }
        let mut child = self
            .command
            .stderr(Stdio::piped())
            .spawn()
            .expect("start orchestra");
        let writer = self.input.take().map(|input| {
            let mut stdin = child.stdin.take().unwrap();
            // A process that exits at start closes the pipe: a failed write is fine.
            std::thread::spawn(move || {
                let _ = stdin.write_all(&input);
            })
        });
        (child, writer)
    }
}

/// Reads `pipe` to its end in a thread. A terminal's end reports an error
/// (EIO) once nothing holds the other: that is its end too.
fn drain(mut pipe: impl Read + Send + 'static) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let mut buf = [0; 8192];
        loop {
            match pipe.read(&mut buf) {
                Ok(0) => return bytes,
                Err(e) if e.raw_os_error() == Some(libc::EIO) => return bytes,
                Err(e) => panic!("read the output: {e}"),
                Ok(n) => bytes.extend_from_slice(&buf[..n]),
            }
        }
    })
}

/// Waits for `child` (killed and failed after [`RUN_TIMEOUT`]) and collects its output.
fn finish(
    mut child: Child,
    writer: Option<std::thread::JoinHandle<()>>,
    stdout: std::thread::JoinHandle<Vec<u8>>,
) -> RawOutput {
    let stderr = drain(child.stderr.take().unwrap());
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > RUN_TIMEOUT {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("orchestra hung: killed after {RUN_TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    if let Some(writer) = writer {
        writer.join().unwrap();
    }
    RawOutput {
        code: status.code(),
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    }
}

/// What one run wrote, as bytes, and how it ended.
#[derive(Debug)]
pub struct RawOutput {
    /// The exit code; `None` when killed by a signal.
    pub code: Option<i32>,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

/// What one run printed, and how it ended.
#[derive(Debug)]
pub struct Output {
    /// The exit code; `None` when killed by a signal.
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    pub fn assert_success(&self) {
        assert_eq!(self.code, Some(0), "orchestra failed: {self:#?}");
    }

    /// A fatal error: exit status 1, stdout empty, and stderr exactly one
    /// `orchestra: ...` line, returned.
    pub fn fatal_line(&self) -> String {
        assert_eq!(self.code, Some(1), "expected exit status 1: {self:#?}");
        assert_eq!(self.stdout, "", "stdout of a failed run");
        let lines: Vec<&str> = self.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "expected one line on stderr: {self:#?}");
        assert!(lines[0].starts_with("orchestra: "), "{self:#?}");
        lines[0].to_string()
    }

    pub fn stdout_lines(&self) -> Vec<&str> {
        self.stdout.lines().collect()
    }

    pub fn stderr_lines(&self) -> Vec<&str> {
        self.stderr.lines().collect()
    }

    /// The last stdout line with its duration masked: `... in T s`.
    pub fn summary(&self) -> String {
        let last = self.stdout.lines().last().unwrap_or_default();
        mask_seconds(last)
    }

    /// The `--json` report on stdout.
    pub fn report(&self) -> Report {
        let lines = self.stdout_lines();
        assert_eq!(lines.len(), 1, "--json prints one line: {self:#?}");
        let value: serde_json::Value =
            serde_json::from_str(lines[0]).unwrap_or_else(|e| panic!("{e}: {}", lines[0]));
        Report(value)
    }
}

/// `... in 0.04 s` → `... in T s`; panics when the line has no such ending.
pub fn mask_seconds(line: &str) -> String {
    let (head, tail) = line
        .rsplit_once(" in ")
        .unwrap_or_else(|| panic!("no duration in {line:?}"));
    let seconds = tail
        .strip_suffix(" s")
        .unwrap_or_else(|| panic!("no seconds in {line:?}"));
    let (int, frac) = seconds
        .split_once('.')
        .unwrap_or_else(|| panic!("bad seconds in {line:?}"));
    assert!(
        !int.is_empty()
            && int.bytes().all(|b| b.is_ascii_digit())
            && frac.len() == 2
            && frac.bytes().all(|b| b.is_ascii_digit()),
        "bad seconds in {line:?}"
    );
    format!("{head} in T s")
}

/// The JSON object printed by `import --json`.
#[derive(Debug, Clone)]
pub struct Report(pub serde_json::Value);

/// The six counters of a report, comparable in one `assert_eq!`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counts {
    pub new: u64,
    pub updated: u64,
    pub removed: u64,
    pub unchanged: u64,
    pub skipped: u64,
    pub ignored: u64,
}

impl Report {
    pub fn counts(&self) -> Counts {
        let n = |key: &str| {
            self.0[key]
                .as_u64()
                .unwrap_or_else(|| panic!("no count {key} in {}", self.0))
        };
        Counts {
            new: n("new"),
            updated: n("updated"),
            removed: n("removed"),
            unchanged: n("unchanged"),
            skipped: n("skipped"),
            ignored: n("ignored"),
        }
    }

    pub fn seq(&self) -> i64 {
        self.0["seq"].as_i64().expect("seq")
    }

    /// `(path, reason)` of every warning, sorted by path.
    pub fn warnings(&self) -> Vec<(String, String)> {
        let mut warnings: Vec<(String, String)> = self.0["warnings"]
            .as_array()
            .expect("warnings")
            .iter()
            .map(|w| {
                (
                    w["path"].as_str().expect("path").to_string(),
                    w["reason"].as_str().expect("reason").to_string(),
                )
            })
            .collect();
        warnings.sort();
        warnings
    }
}

/// One stored document, as the dump shows it.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Row {
    pub prefix: String,
    pub id: String,
    pub body: Vec<u8>,
    pub title: String,
    pub description: Option<String>,
    pub seq: i64,
    pub is_text: bool,
}

impl Row {
    /// `prefix/id`.
    pub fn key(&self) -> String {
        format!("{}/{}", self.prefix, self.id)
    }
}

impl fmt::Debug for Row {
    /// The body is abbreviated: a 5,000-row diff must stay readable.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = String::from_utf8_lossy(&self.body);
        let head: String = text.chars().take(40).collect();
        f.debug_struct("Row")
            .field("key", &self.key())
            .field(
                "body",
                &format_args!("{} bytes {head:?}..", self.body.len()),
            )
            .field("title", &self.title)
            .field("description", &self.description)
            .field("seq", &self.seq)
            .field("is_text", &self.is_text)
            .finish()
    }
}

/// The `-wal` and `-shm` files beside `db` that exist. A process that
/// closes the database cleanly leaves none (when no other process has it
/// open): the last connection to close checkpoints and removes them.
pub fn companion_files(db: &Path) -> Vec<String> {
    let name = db.file_name().unwrap().to_str().unwrap();
    ["-wal", "-shm"]
        .iter()
        .map(|suffix| format!("{name}{suffix}"))
        .filter(|file| db.with_file_name(file).exists())
        .collect()
}

/// Opens `db` read-only: inspecting a database never changes it.
pub fn open_read_only(db: &Path) -> Connection {
    Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY)
        .unwrap_or_else(|e| panic!("open {}: {e}", db.display()))
}

/// A connection to the database of a `postgres:///NAME` `db` (a project's
/// database when the suite runs on PostgreSQL); `None` for a SQLite file.
fn pg_client(db: &Path) -> Option<postgres::Client> {
    let name = db.to_str()?.strip_prefix("postgres:///")?;
    Some(pg_config(name).connect(postgres::NoTls).unwrap())
}

/// A connection to a project's database, SQLite file or PostgreSQL, for
/// the queries a test writes once for both: parameters are `$1`, `$2`…
/// (`?1`, `?2`… on SQLite) and the SQL is what both read alike.
pub enum Db {
    Sqlite(Connection),
    Postgres(postgres::Client),
}

/// The advisory lock a PostgreSQL import holds (store/postgres/import_tx.rs).
const IMPORT_LOCK: i64 = 0x6f72_6368_696d_706f;

/// A parameter of a [`Db`] query: a value both drivers can bind.
pub trait Param {
    fn sqlite(&self) -> &dyn rusqlite::ToSql;
    fn postgres(&self) -> &(dyn postgres::types::ToSql + Sync);
}

impl<T: rusqlite::ToSql + postgres::types::ToSql + Sync> Param for T {
    fn sqlite(&self) -> &dyn rusqlite::ToSql {
        self
    }
    fn postgres(&self) -> &(dyn postgres::types::ToSql + Sync) {
        self
    }
}

impl Db {
    /// `db` to read: a SQLite file is opened read-only.
    pub fn open(db: &Path) -> Db {
        match pg_client(db) {
            Some(client) => Db::Postgres(client),
            None => Db::Sqlite(open_read_only(db)),
        }
    }

    /// `db` to write, or to read as the next orchestra would: a WAL left by
    /// a killed writer is recovered first.
    pub fn writable(db: &Path) -> Db {
        match pg_client(db) {
            Some(client) => Db::Postgres(client),
            None => Db::Sqlite(
                Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_WRITE)
                    .unwrap_or_else(|e| panic!("open {}: {e}", db.display())),
            ),
        }
    }

    /// The one row of `sql`, every column an integer (PostgreSQL's
    /// `integer` and `bigint` alike).
    pub fn ints(&mut self, sql: &str, params: &[&dyn Param]) -> Vec<i64> {
        match self {
            Db::Sqlite(conn) => {
                let params: Vec<&dyn rusqlite::ToSql> = params.iter().map(|p| p.sqlite()).collect();
                let mut stmt = conn.prepare(&sql.replace('$', "?")).unwrap();
                let columns = stmt.column_count();
                stmt.query_row(params.as_slice(), |r| {
                    (0..columns).map(|i| r.get(i)).collect()
                })
                .unwrap_or_else(|e| panic!("{sql}: {e}"))
            }
            Db::Postgres(client) => {
                let params: Vec<_> = params.iter().map(|p| p.postgres()).collect();
                let row = client
                    .query_one(sql, &params)
                    .unwrap_or_else(|e| panic!("{sql}: {e}"));
                (0..row.len())
                    .map(|i| match *row.columns()[i].type_() {
                        postgres::types::Type::INT4 => i64::from(row.get::<_, i32>(i)),
                        _ => row.get(i),
                    })
                    .collect()
            }
        }
    }

    /// The one integer `sql` selects.
    pub fn int(&mut self, sql: &str, params: &[&dyn Param]) -> i64 {
        let row = self.ints(sql, params);
        assert_eq!(row.len(), 1, "{sql}: one column");
        row[0]
    }

    /// Opens a write transaction that holds what an import holds while it
    /// writes, and in it removes the documents whose id is `id`: on SQLite
    /// the write lock and a rebuild of the search index; on PostgreSQL the
    /// import's advisory lock (store/postgres/import_tx.rs: `IMPORT_LOCK`),
    /// the project row and every document row. `batch("ROLLBACK")` ends it.
    pub fn begin_as_import(&mut self, id: &str) {
        let sql = match self {
            Db::Sqlite(_) => format!(
                "BEGIN IMMEDIATE; DELETE FROM documents WHERE id = '{id}';
                 INSERT INTO search (search) VALUES ('rebuild');"
            ),
            Db::Postgres(_) => format!(
                "BEGIN; SELECT pg_advisory_xact_lock({IMPORT_LOCK});
                 UPDATE project SET seq = seq + 1; DELETE FROM documents WHERE id = '{id}';
                 UPDATE documents SET search = search;"
            ),
        };
        self.batch(&sql);
    }

    /// Runs the statements of `sql`, no rows returned.
    pub fn batch(&mut self, sql: &str) {
        match self {
            Db::Sqlite(conn) => conn.execute_batch(sql).unwrap(),
            Db::Postgres(client) => client.batch_execute(sql).unwrap(),
        }
    }
}

/// Every table of the PostgreSQL database `db` (a `postgres:///NAME`) with
/// every row, as PostgreSQL writes a row as text, sorted: what a command
/// that writes nothing must leave as it was. Empty before any schema.
pub fn pg_tables(db: &Path) -> Vec<(String, Vec<String>)> {
    let mut client = pg_client(db).unwrap_or_else(|| panic!("{} is not PostgreSQL", db.display()));
    let tables: Vec<String> = client
        .query(
            "SELECT table_name::text FROM information_schema.tables
             WHERE table_schema = 'public' ORDER BY 1",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    tables
        .into_iter()
        .map(|table| {
            let sql = format!("SELECT CAST(t AS text) FROM {table} t ORDER BY 1");
            let rows = client
                .query(&sql, &[])
                .unwrap()
                .iter()
                .map(|r| r.get(0))
                .collect();
            (table, rows)
        })
        .collect()
}

/// The database's size as `stats` counts it: a SQLite file's pages, a
/// PostgreSQL database's `pg_database_size`.
pub fn database_bytes(db: &Path) -> i64 {
    let sql = match pg_client(db) {
        Some(_) => "SELECT pg_database_size(current_database())",
        None => "SELECT page_count * page_size FROM pragma_page_count, pragma_page_size",
    };
    Db::open(db).int(sql, &[])
}

/// Every document of `db`, sorted by (prefix, id).
pub fn dump(db: &Path) -> Vec<Row> {
    if let Some(mut client) = pg_client(db) {
        return client
            .query(
                "SELECT prefix, id, body, title, description, seq, is_text FROM documents
                 ORDER BY prefix, id",
                &[],
            )
            .unwrap()
            .iter()
            .map(|r| Row {
                prefix: r.get(0),
                id: r.get(1),
                body: r.get(2),
                title: r.get(3),
                description: r.get(4),
                seq: r.get(5),
                is_text: r.get(6),
            })
            .collect();
    }
    let conn = open_read_only(db);
    let mut stmt = conn
        .prepare(
            "SELECT prefix, id, body, title, description, seq, is_text FROM documents
             ORDER BY prefix, id",
        )
        .unwrap();
    stmt.query_map([], |r| {
        Ok(Row {
            prefix: r.get(0)?,
            id: r.get(1)?,
            body: r.get(2)?,
            title: r.get(3)?,
            description: r.get(4)?,
            seq: r.get(5)?,
            is_text: r.get(6)?,
        })
    })
    .unwrap()
    .collect::<rusqlite::Result<Vec<Row>>>()
    .unwrap()
}

/// The stored keys, sorted.
pub fn keys(db: &Path) -> Vec<String> {
    dump(db).iter().map(Row::key).collect()
}

/// The one row of `key` (`prefix/id`).
pub fn row(db: &Path, key: &str) -> Row {
    dump(db)
        .into_iter()
        .find(|r| r.key() == key)
        .unwrap_or_else(|| panic!("{key} is not in the database"))
}

/// `(root, seq)` of the project the database holds.
pub fn project_row(db: &Path) -> (String, i64) {
    if let Some(mut client) = pg_client(db) {
        let row = client
            .query_one("SELECT root, seq FROM project", &[])
            .unwrap();
        return (row.get(0), row.get(1));
    }
    open_read_only(db)
        .query_row("SELECT root, seq FROM project", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap()
}

/// The stored mtime of `key`, in nanoseconds since the epoch.
pub fn stored_mtime_ns(db: &Path, key: &str) -> i64 {
    let (prefix, id) = key.split_once('/').unwrap();
    if let Some(mut client) = pg_client(db) {
        return client
            .query_one(
                "SELECT mtime_ns FROM documents WHERE prefix = $1 AND id = $2",
                &[&prefix, &id],
            )
            .unwrap()
            .get(0);
    }
    open_read_only(db)
        .query_row(
            "SELECT mtime_ns FROM documents WHERE prefix = ?1 AND id = ?2",
            [prefix, id],
            |r| r.get(0),
        )
        .unwrap()
}

/// A file's mtime in nanoseconds since the epoch.
pub fn mtime_ns(path: &Path) -> i64 {
    let mtime = std::fs::metadata(path).unwrap().modified().unwrap();
    let since = mtime.duration_since(std::time::UNIX_EPOCH).unwrap();
    i64::try_from(since.as_nanos()).unwrap()
}

/// A running `orchestra serve`, spoken to one line at a time.
pub struct Server {
    pub child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

impl Server {
    pub fn start(db: &Path, args: &[&str]) -> Server {
        let mut child = Command::new(BIN)
            .arg("serve")
            .arg("--db")
            .arg(db)
            .args(args)
            .env("RUST_LOG", "debug")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Server {
            child,
            stdin,
            stdout,
        }
    }

    pub fn send(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// Closes the server's stdin: the end of its session.
    pub fn close_stdin(&mut self) {
        drop(self.stdin.take());
    }

    pub fn recv(&mut self) -> String {
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        assert!(line.ends_with('\n'), "server closed stdout");
        line.pop();
        line
    }

    /// Sends a request and returns its response, parsed, passing over the
    /// notifications that arrive before it.
    pub fn request(&mut self, request: &serde_json::Value) -> serde_json::Value {
        self.send(&request.to_string());
        loop {
            let message: serde_json::Value = serde_json::from_str(&self.recv()).unwrap();
            if message.get("id").is_some() {
                assert_eq!(message["id"], request["id"], "{message}");
                return message;
            }
        }
    }

    /// Closes stdin and returns how long the server took to exit, and its status.
    pub fn close(mut self) -> (Duration, std::process::ExitStatus) {
        drop(self.stdin.take());
        wait_exit(&mut self.child)
    }
}

pub fn wait_exit(child: &mut Child) -> (Duration, std::process::ExitStatus) {
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return (started.elapsed(), status);
        }
        if started.elapsed() > Duration::from_secs(5) {
            let _ = child.kill();
            panic!("server did not exit within 5 s");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

// Helpers for the fault tests (`faults.rs`).

impl Cmd {
    /// Runs the same command line through `wrapper` (`setpriv ...`,
    /// `bash -c SCRIPT bash`, ...): the wrapper's arguments, then the
    /// program and its arguments. Environment and working folder are kept.
    pub fn via(self, wrapper: &[&str]) -> Cmd {
        let old = &self.command;
        let mut command = Command::new(wrapper[0]);
        command
            .args(&wrapper[1..])
            .arg(old.get_program())
            .args(old.get_args())
            .stdin(Stdio::null());
        if let Some(dir) = old.get_current_dir() {
            command.current_dir(dir);
        }
        for (key, value) in old.get_envs() {
            match value {
                Some(value) => command.env(key, value),
                None => command.env_remove(key),
            };
        }
        Cmd::from(command)
    }
}

/// `db` with `suffix` appended to its file name (`-wal`, `-shm`).
pub fn sidecar(db: &Path, suffix: &str) -> PathBuf {
    let mut name = db.file_name().unwrap().to_os_string();
    name.push(suffix);
    db.with_file_name(name)
}

/// The length of `db`'s `-wal` file; 0 when there is none.
pub fn wal_len(db: &Path) -> u64 {
    std::fs::metadata(sidecar(db, "-wal")).map_or(0, |m| m.len())
}

/// The history against the documents: every document's newest version
/// has its bytes (same hash), version numbers are dense from 1, and every
/// version with bytes finds them, in `documents` (the current ones) or
/// in `bodies`. "ok" when all hold.
pub fn history_check(db: &Path) -> String {
    let mut conn = Db::writable(db);
    let checks = [
        (
            "documents whose newest version is not their bytes",
            "SELECT count(*) FROM documents d WHERE d.hash IS DISTINCT FROM (
                 SELECT hash FROM versions v WHERE v.prefix = d.prefix AND v.id = d.id
                 ORDER BY version DESC LIMIT 1)",
        ),
        (
            "documents whose version numbers are not 1..n",
            "SELECT count(*) FROM (SELECT prefix, id FROM versions GROUP BY prefix, id
                                   HAVING min(version) <> 1 OR max(version) <> count(*)) AS bad",
        ),
        (
            "versions whose bytes are nowhere",
            "SELECT count(*) FROM versions v WHERE v.hash IS NOT NULL
                 AND NOT EXISTS (SELECT 1 FROM bodies b WHERE b.hash = v.hash)
                 AND NOT EXISTS (SELECT 1 FROM documents d WHERE d.prefix = v.prefix
                                 AND d.id = v.id AND d.hash = v.hash)",
        ),
    ];
    for (what, sql) in checks {
        let n = conn.int(sql, &[]);
        if n != 0 {
            return format!("{n} {what}");
        }
    }
    "ok".to_string()
}

/// `PRAGMA integrity_check` of `db`. Opened read-write, as the next
/// orchestra would: a WAL left by a killed writer is recovered first.
/// The search index and the frontmatter fields against the documents:
/// FTS5's own check of the index against its content (the stored rows), and
/// the fields' index read back term by term (`fts5vocab`) against the pairs
/// recomputed from every stored frontmatter. "ok" when they agree.
pub fn search_check(db: &Path) -> String {
    let conn = Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_WRITE)
        .unwrap_or_else(|e| panic!("open {}: {e}", db.display()));
    for table in ["search", "fields"] {
        if let Err(e) = conn.execute(
            &format!("INSERT INTO {table} ({table}, rank) VALUES ('integrity-check', 1)"),
            [],
        ) {
            return format!("{table} index: {e}");
        }
    }
    // Every (document, name, value) pair, the value as YAML text.
    let expected = "SELECT d.rowid, f.key, CASE f.type WHEN 'true' THEN 'true' WHEN 'false' THEN 'false'
                        WHEN 'null' THEN 'null' ELSE CAST(f.atom AS TEXT) END
                    FROM documents d, json_each(d.frontmatter) f
                    WHERE d.frontmatter IS NOT NULL AND f.type NOT IN ('object', 'array')
                    UNION
                    SELECT d.rowid, f.key, CASE i.type WHEN 'true' THEN 'true' WHEN 'false' THEN 'false'
                        WHEN 'null' THEN 'null' ELSE CAST(i.atom AS TEXT) END
                    FROM documents d, json_each(d.frontmatter) f, json_each(f.value) i
                    WHERE d.frontmatter IS NOT NULL AND f.type = 'array' AND i.type NOT IN ('object', 'array')";
    let expected: std::collections::BTreeSet<(i64, String)> = conn
        .prepare(expected)
        .unwrap()
        .query_map([], |r| {
            let (name, value): (String, String) = (r.get(1)?, r.get(2)?);
            Ok((r.get(0)?, pair_term(&name, &value)))
        })
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    conn.execute_batch(
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.fields_terms
             USING fts5vocab(main, fields, 'instance')",
    )
    .unwrap();
    let stored: std::collections::BTreeSet<(i64, String)> = conn
        .prepare("SELECT doc, term FROM temp.fields_terms")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    match expected.symmetric_difference(&stored).count() {
        0 => "ok".to_string(),
        n => format!("{n} frontmatter field rows differ from the documents"),
    }
}

/// The term of a `where` pair in the `fields` index, as migration 0007
/// says: the first 128 bits of the blake3 hash of the name's length (8
/// bytes, little-endian), the name and the value, in hex.
fn pair_term(name: &str, value: &str) -> String {
    let mut hasher = blake3::Hasher::new();
    hasher.update(&(name.len() as u64).to_le_bytes());
    hasher.update(name.as_bytes());
    hasher.update(value.as_bytes());
    hasher.finalize().to_hex()[..32].to_string()
}

pub fn integrity_check(db: &Path) -> String {
    let conn = Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_WRITE)
        .unwrap_or_else(|e| panic!("open {}: {e}", db.display()));
    let rows: Vec<String> = conn
        .prepare("PRAGMA integrity_check")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    rows.join("\n")
}

/// Folds the WAL into the main file and closes, so that the main file alone
/// is the whole database and can be copied.
pub fn checkpoint_and_close(db: &Path) {
    let conn = Connection::open(db).unwrap();
    let busy: i64 = conn
        .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get(0))
        .unwrap();
    assert_eq!(busy, 0, "checkpoint of {} was blocked", db.display());
    drop(conn);
    assert_eq!(wal_len(db), 0, "{} still has a WAL", db.display());
}

/// A digest of everything an import writes: every column of every document
/// (in key order), the project row, and the change feed (in a fixed order:
/// reader threads record changes in any order). Equal digests, equal
/// databases as far as orchestra can tell; much cheaper than [`dump`].
pub fn content_digest(db: &Path) -> String {
    use rusqlite::types::ValueRef;
    if let Some(mut client) = pg_client(db) {
        return pg_content_digest(&mut client);
    }
    let conn = open_read_only(db);
    let mut hasher = blake3::Hasher::new();
    // Values are framed (type, length) into a buffer hashed in large
    // chunks: many small updates are slow in a debug build.
    let mut buf = Vec::with_capacity(1 << 20);
    for (table, columns, order) in DIGESTED {
        let sql = format!("SELECT {columns} FROM {table} ORDER BY {order}");
        buf.extend_from_slice(table.as_bytes());
        let mut stmt = conn.prepare(&sql).unwrap();
        let columns = stmt.column_count();
        let mut rows = stmt.query([]).unwrap();
        while let Some(row) = rows.next().unwrap() {
            buf.push(b'\n');
            for i in 0..columns {
                let (tag, bytes) = match row.get_ref(i).unwrap() {
                    ValueRef::Null => (b'n', &[][..]),
                    ValueRef::Integer(n) => {
                        buf.push(b'i');
                        buf.extend_from_slice(&n.to_le_bytes());
                        continue;
                    }
                    ValueRef::Real(x) => {
                        buf.push(b'r');
                        buf.extend_from_slice(&x.to_le_bytes());
                        continue;
                    }
                    ValueRef::Text(bytes) => (b't', bytes),
                    ValueRef::Blob(bytes) => (b'b', bytes),
                };
                buf.push(tag);
                buf.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
                buf.extend_from_slice(bytes);
            }
            if buf.len() >= 1 << 20 {
                hasher.update(&buf);
                buf.clear();
            }
        }
    }
    hasher.update(&buf);
    hasher.finalize().to_hex().to_string()
}

/// What [`content_digest`] reads: (table, columns, order).
const DIGESTED: [(&str, &str, &str); 3] = [
    (
        "documents",
        "prefix, id, size, mtime_ns, hash, is_text, title, description, frontmatter, seq, body",
        "prefix, id",
    ),
    ("project", "singleton, root, seq", "singleton"),
    ("changes", "seq, prefix, id, kind", "seq, prefix, id, kind"),
];

/// [`content_digest`] of a PostgreSQL database: the same rows, each as
/// PostgreSQL writes a row as text (`bytea` in hex), framed by its length.
fn pg_content_digest(client: &mut postgres::Client) -> String {
    let mut hasher = blake3::Hasher::new();
    for (table, columns, order) in DIGESTED {
        hasher.update(table.as_bytes());
        let sql = format!("SELECT CAST(ROW({columns}) AS text) FROM {table} ORDER BY {order}");
        for row in client.query(&sql, &[]).unwrap() {
            let text: String = row.get(0);
            hasher.update(&(text.len() as u64).to_le_bytes());
            hasher.update(text.as_bytes());
        }
    }
    hasher.finalize().to_hex().to_string()
}

/// A PostgreSQL database made for one test on the server the `PG*`
/// variables name (`pg_virtualenv`, as `scripts/test.sh` runs the tests),
/// dropped with it. The binary finds the server through the same variables.
pub struct PgDatabase {
    name: String,
}

impl PgDatabase {
    pub fn new() -> PgDatabase {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let name = format!(
            "orchestra_it_{}_{}",
            std::process::id(),
            NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        pg_admin()
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .unwrap();
        PgDatabase { name }
    }

    /// A copy of `template` (which must have no session open), made by the
    /// server (`CREATE DATABASE … TEMPLATE`).
    pub fn copy_of(template: &PgDatabase) -> PgDatabase {
        let copy = PgDatabase::new();
        let mut admin = pg_admin();
        admin
            .batch_execute(&format!("DROP DATABASE {}", copy.name))
            .unwrap();
        admin
            .batch_execute(&format!(
                "CREATE DATABASE {} TEMPLATE {}",
                copy.name, template.name
            ))
            .unwrap();
        copy
    }

    /// The `--db` of this database (host, port, user and password from the
    /// environment).
    pub fn url(&self) -> String {
        format!("postgres:///{}", self.name)
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// A connection to the server's own database, for what a database
    /// cannot do to itself (refusing connections, ending its sessions).
    pub fn admin(&self) -> postgres::Client {
        pg_admin()
    }

    /// A connection to this database, for looking at what the binary wrote.
    pub fn client(&self) -> postgres::Client {
        pg_config(&self.name).connect(postgres::NoTls).unwrap()
    }
}

impl Drop for PgDatabase {
    fn drop(&mut self) {
        let _ = pg_admin().batch_execute(&format!("DROP DATABASE {} WITH (FORCE)", self.name));
    }
}

fn pg_config(dbname: &str) -> postgres::Config {
    let var = |name: &str| std::env::var(name).ok();
    assert!(
        var("PGHOST").is_some(),
        "the PostgreSQL tests need a server: run them through `pg_virtualenv` \
         (`pg_virtualenv cargo test`), as scripts/test.sh does"
    );
    let mut config = postgres::Config::new();
    config
        .host(&var("PGHOST").unwrap())
        .port(var("PGPORT").map_or(5432, |p| p.parse().unwrap()))
        .user(&var("PGUSER").unwrap_or_else(|| "postgres".into()))
        .dbname(dbname);
    if let Some(password) = var("PGPASSWORD") {
        config.password(password);
    }
    config
}

fn pg_admin() -> postgres::Client {
    pg_config(&std::env::var("PGDATABASE").unwrap_or_else(|_| "postgres".into()))
        .connect(postgres::NoTls)
        .unwrap()
}

/// A PostgreSQL cluster of a test's own (a nested `pg_virtualenv`), which
/// the test may stop, crash and start without disturbing the shared one
/// that the other tests use. It is dropped, with its folder, when this is.
pub struct PrivateCluster {
    /// `pg_virtualenv`, which keeps the cluster while its command (`cat`)
    /// reads an open stdin.
    holder: std::process::Child,
    env: std::collections::HashMap<String, String>,
    /// One at a time: two `pg_virtualenv`s started together would choose
    /// the same free port.
    _alone: std::sync::MutexGuard<'static, ()>,
}

impl PrivateCluster {
    pub fn start() -> PrivateCluster {
        static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
        let alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        use std::io::BufRead;
        let mut holder = Command::new("pg_virtualenv")
            .args(["-t", "-v", "15", "sh", "-c"])
            .arg("echo '==env'; env; echo '==end'; exec cat >/dev/null")
            // The shared cluster's settings would make the new one take
            // its port, and its folders.
            .env_remove("PGPORT")
            .env_remove("PGHOST")
            .env_remove("PGSYSCONFDIR")
            .env_remove("PG_CLUSTER_CONF_ROOT")
            .env_remove("PGDATABASE")
            .env_remove("PGUSER")
            .env_remove("PGPASSWORD")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("pg_virtualenv (postgresql-common) is installed by scripts/test.sh");
        let mut lines = std::io::BufReader::new(holder.stdout.take().unwrap()).lines();
        let mut env = std::collections::HashMap::new();
        let mut inside = false;
        for line in lines.by_ref() {
            let line = line.unwrap();
            match line.as_str() {
                "==env" => inside = true,
                "==end" => break,
                _ if inside => {
                    if let Some((name, value)) = line.split_once('=') {
                        env.insert(name.to_string(), value.to_string());
                    }
                }
                _ => {}
            }
        }
        assert!(
            env.contains_key("PGPORT"),
            "pg_virtualenv started no cluster"
        );
        // What pg_virtualenv prints when it drops the cluster must not
        // block it: read it away.
        std::thread::spawn(move || lines.for_each(drop));
        PrivateCluster {
            holder,
            env,
            _alone: alone,
        }
    }

    /// Its `postgres` database, as a `--db` that names every part.
    pub fn url(&self) -> String {
        let var = |name: &str| &self.env[name];
        format!(
            "postgres://{}:{}@{}:{}/postgres",
            var("PGUSER"),
            var("PGPASSWORD"),
            var("PGHOST"),
            var("PGPORT")
        )
    }

    /// `pg_ctlcluster [--mode MODE] 15 regress ACTION`.
    pub fn ctl(&self, action: &str, mode: Option<&str>) {
        let mut ctl = Command::new("pg_ctlcluster");
        if let Some(mode) = mode {
            ctl.args(["--mode", mode]);
        }
        let status = ctl
            .args(["15", "regress", action])
            .env_clear()
            .envs(&self.env)
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success(), "pg_ctlcluster {action}: {status}");
    }
}

impl Drop for PrivateCluster {
    fn drop(&mut self) {
        drop(self.holder.stdin.take());
        let _ = self.holder.wait();
    }
}
