//! Child processes and live ones: running a command to completion with its peak RSS (`wait4`), and a process's RSS and CPU time from `/proc`.

use std::fs;
use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use crate::Res;

pub struct Finished {
    pub seconds: f64,
    pub max_rss_kb: u64,
    /// User + system CPU seconds of the command (its threads and children).
    pub cpu_s: f64,
    pub stdout: String,
}

/// The first argument that makes this binary a launcher (see [`launch`]).
pub const LAUNCH_FLAG: &str = "--launch-measured";

/// Runs `cmd` to completion through a launcher (this binary, see
/// [`launch`]), which times it and takes its peak RSS from `wait4`.
///
/// Not spawned from here: a child's `ru_maxrss` is at least the RSS of the
/// process that spawned it (Linux carries the parent's high-water mark into
/// the child across `exec`; checked: `/bin/true` spawned by a 200 MB process
/// reports 214 MB), and this process grows to hundreds of MB at 1M documents.
/// The launcher is small, so what it reports is the child's own.
pub fn run_measured(cmd: Command) -> Res<Finished> {
    let report = tempfile::NamedTempFile::new()?;
    let mut launcher = Command::new(std::env::current_exe()?);
    launcher
        .arg(LAUNCH_FLAG)
        .arg(report.path())
        .arg(cmd.get_program())
        .args(cmd.get_args());
    if let Some(dir) = cmd.get_current_dir() {
        launcher.current_dir(dir);
    }
    for (key, value) in cmd.get_envs() {
        match value {
            Some(value) => launcher.env(key, value),
            None => launcher.env_remove(key),
        };
    }
    let mut finished = run_direct(launcher)?;
    let text = fs::read_to_string(report.path())?;
    let fields: Vec<&str> = text.split_whitespace().collect();
    let [rss, seconds, cpu] = fields[..] else {
        return Err(format!("the launcher wrote {text:?}").into());
    };
    finished.max_rss_kb = rss.parse()?;
    finished.seconds = seconds.parse()?;
    finished.cpu_s = cpu.parse()?;
    Ok(finished)
}

/// The launcher's side of [`run_measured`]: `LAUNCH_FLAG REPORT PROGRAM
/// ARGS...` runs PROGRAM with this process's stdio, writes `RSS_KB SECONDS
/// CPU_SECONDS` to REPORT and exits with PROGRAM's status.
pub fn launch(args: &[String]) -> Res<i32> {
    let [report, program, rest @ ..] = args else {
        return Err(format!("usage: {LAUNCH_FLAG} REPORT PROGRAM [ARGS...]").into());
    };
    let started = Instant::now();
    let child = Command::new(program).args(rest).spawn()?;
    let (status, max_rss_kb, cpu_s) = wait4_usage(&child)?;
    let seconds = started.elapsed().as_secs_f64();
    fs::write(report, format!("{max_rss_kb} {seconds} {cpu_s}"))?;
    Ok(status)
}

/// Runs `cmd` to completion, spawned from this process.
fn run_direct(mut cmd: Command) -> Res<Finished> {
    let started = Instant::now();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let mut stderr = child.stderr.take().ok_or("no stderr")?;
    let err_thread = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let mut stdout = String::new();
    child
        .stdout
        .take()
        .ok_or("no stdout")?
        .read_to_string(&mut stdout)?;
    let (status, max_rss_kb) = wait4(&child)?;
    let seconds = started.elapsed().as_secs_f64();
    let stderr = err_thread.join().unwrap_or_default();
    if status != 0 {
        return Err(format!("{cmd:?} failed (status {status}):\n{stderr}").into());
    }
    Ok(Finished {
        seconds,
        max_rss_kb,
        cpu_s: 0.0,
        stdout,
    })
}

/// Reaps `child` and returns its exit status and peak RSS (KiB).
pub fn wait4(child: &Child) -> Res<(i32, u64)> {
    let (status, max_rss_kb, _) = wait4_usage(child)?;
    Ok((status, max_rss_kb))
}

/// Reaps `child` and returns its exit status, peak RSS (KiB) and user +
/// system CPU seconds.
pub fn wait4_usage(child: &Child) -> Res<(i32, u64, f64)> {
    let pid = child.id() as libc::pid_t;
    let mut status: libc::c_int = 0;
    // SAFETY: plain syscall on our own child; rusage is a POD out-parameter.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    if r != pid {
        return Err(format!("wait4: {}", std::io::Error::last_os_error()).into());
    }
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -1
    };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Ok((
        code,
        usage.ru_maxrss as u64,
        secs(usage.ru_utime) + secs(usage.ru_stime),
    ))
}

/// `VmRSS` and `VmHWM` of a live process, in KiB.
pub fn proc_rss(pid: u32) -> (u64, u64) {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// User + system CPU seconds of a live process, from `/proc/PID/stat`.
pub fn proc_cpu_s(pid: u32) -> f64 {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which may contain spaces): state is
    // field 3, utime 14 and stime 15.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or(Vec::new(), |(_, rest)| rest.split_whitespace().collect());
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    (ticks(14 - 3) + ticks(15 - 3)) / hz
}

/// User + system CPU seconds of this process so far (all its threads).
pub fn self_cpu_s() -> f64 {
    // SAFETY: rusage is a POD out-parameter.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}
