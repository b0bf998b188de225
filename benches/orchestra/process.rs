//! Child processes and live ones: running a command to completion with its peak RSS (`wait4`), and a process's RSS and CPU time from `/proc`.

use std::fs;
use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use crate::Res;

pub struct Finished {
    pub seconds: f64,
    pub max_rss_kb: u64,
    pub stdout: String,
}

/// Runs `cmd` to completion; its peak RSS comes from `wait4`.
pub fn run_measured(mut cmd: Command) -> Res<Finished> {
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
        stdout,
    })
}

/// Reaps `child` and returns its exit status and peak RSS (KiB).
pub fn wait4(child: &Child) -> Res<(i32, u64)> {
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
    Ok((code, usage.ru_maxrss as u64))
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
