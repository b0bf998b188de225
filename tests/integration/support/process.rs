//! Running the binary: a command line and its output (`Cmd`, `Output`, an import's `Report`), and `orchestra serve` spoken to over a pipe (`Server`).

use super::*;

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
        let lines = self.stderr_lines();
        assert_eq!(lines.len(), 1, "expected one line on stderr: {self:#?}");
        assert!(lines[0].starts_with("orchestra: "), "{self:#?}");
        lines[0].to_string()
    }

    pub fn stdout_lines(&self) -> Vec<&str> {
        self.stdout.lines().collect()
    }

    /// stderr's lines less `serve`'s first, which names the build
    /// ([`banner`]; `serve::the_first_line_names_the_build` tests it).
    pub fn stderr_lines(&self) -> Vec<&str> {
        let mut lines: Vec<&str> = self.stderr.lines().collect();
        if lines.first() == Some(&banner().as_str()) {
            lines.remove(0);
        }
        lines
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

/// The line `serve` writes first on stderr: the version and the commit,
/// as `orchestra --version` prints them.
pub fn banner() -> String {
    format!("orchestra {}", orchestra::BUILD)
}
