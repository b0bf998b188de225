//! The server's ends of stdin and stdout: read and written by the runtime's reactor when they are pipes or sockets, by tokio's blocking threads otherwise.
//!
//! `tokio::io::stdin()` and `stdout()` hand every read and every write to a
//! blocking thread and wake the task when it is done: two thread switches
//! each way per request. On these machines (2 shared cores) a switch costs
//! tens of microseconds, a large part of a read's round trip. A pipe or a
//! socket (what MCP clients launch a server with) can instead be made
//! non-blocking and polled by the reactor on the thread that runs the
//! session. A terminal or a file keeps tokio's way.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::FileTypeExt;
use std::pin::Pin;
use std::sync::Mutex;

use tokio::io::{AsyncRead, AsyncWrite};

pub type Input = Pin<Box<dyn AsyncRead + Send>>;
pub type Output = Pin<Box<dyn AsyncWrite + Send>>;

/// The file status flags of stdin and stdout before they were made
/// non-blocking. Non-blocking is a property of the open file, which a shell
/// or a parent may share: it is put back when the session ends.
static SAVED: Mutex<Vec<(i32, libc::c_int)>> = Mutex::new(Vec::new());

pub fn stdin() -> Input {
    match polled(std::io::stdin().as_fd()) {
        Some(Polled::Pipe(fd)) => match tokio::net::unix::pipe::Receiver::from_owned_fd(fd) {
            Ok(pipe) => return Box::pin(pipe),
            Err(e) => tracing::debug!("stdin through a blocking thread: {e}"),
        },
        Some(Polled::Socket(socket)) => return Box::pin(socket),
        None => {}
    }
    // A blocking thread reads it: it must block again if a step above
    // made it non-blocking before failing.
    restore_one(std::io::stdin().as_raw_fd());
    Box::pin(tokio::io::stdin())
}

pub fn stdout() -> Output {
    match polled(std::io::stdout().as_fd()) {
        Some(Polled::Pipe(fd)) => match tokio::net::unix::pipe::Sender::from_owned_fd(fd) {
            Ok(pipe) => return Box::pin(pipe),
            Err(e) => tracing::debug!("stdout through a blocking thread: {e}"),
        },
        Some(Polled::Socket(socket)) => return Box::pin(socket),
        None => {}
    }
    // As for stdin.
    restore_one(std::io::stdout().as_raw_fd());
    Box::pin(tokio::io::stdout())
}

/// Puts back the flags of the ends that [`stdin`] and [`stdout`] made
/// non-blocking.
pub fn restore() {
    let saved = std::mem::take(&mut *SAVED.lock().unwrap_or_else(|e| e.into_inner()));
    for (fd, flags) in saved {
        set_flags(fd, flags);
    }
}

/// [`restore`] of descriptor `fd` alone.
fn restore_one(fd: i32) {
    let mut saved = SAVED.lock().unwrap_or_else(|e| e.into_inner());
    saved.retain(|&(number, flags)| {
        if number == fd {
            set_flags(number, flags);
        }
        number != fd
    });
}

fn set_flags(fd: i32, flags: libc::c_int) {
    // SAFETY: fcntl on a descriptor number with plain integer arguments; a
    // closed descriptor makes it fail, nothing else.
    unsafe { libc::fcntl(fd, libc::F_SETFL, flags) };
}

enum Polled {
    Pipe(OwnedFd),
    Socket(tokio::net::UnixStream),
}

/// A duplicate of `fd`, ready for the reactor, when it is a pipe or a Unix
/// socket; `None` for anything else, and when any step fails.
fn polled(fd: BorrowedFd<'_>) -> Option<Polled> {
    let number = fd.as_raw_fd();
    let owned = fd.try_clone_to_owned().ok()?;
    let file = std::fs::File::from(owned);
    let kind = file.metadata().ok()?.file_type();
    if !kind.is_fifo() && !kind.is_socket() {
        return None;
    }
    // SAFETY: as in `set_flags`.
    let flags = unsafe { libc::fcntl(number, libc::F_GETFL) };
    if flags < 0 {
        return None;
    }
    SAVED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push((number, flags));
    let owned = OwnedFd::from(file);
    if kind.is_fifo() {
        return Some(Polled::Pipe(owned));
    }
    let socket = std::os::unix::net::UnixStream::from(owned);
    socket.set_nonblocking(true).ok()?;
    tokio::net::UnixStream::from_std(socket)
        .ok()
        .map(Polled::Socket)
}
