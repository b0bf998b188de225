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

/// A file's mtime in nanoseconds since the epoch.
pub fn mtime_ns(path: &Path) -> i64 {
    let mtime = std::fs::metadata(path).unwrap().modified().unwrap();
    let since = mtime.duration_since(std::time::UNIX_EPOCH).unwrap();
    i64::try_from(since.as_nanos()).unwrap()
}

mod inspect;
mod pg;
mod process;

pub use inspect::*;
pub use pg::*;
pub use process::*;
