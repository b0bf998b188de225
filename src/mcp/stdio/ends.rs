//! The server's ends of stdin and stdout: read and written by the runtime's reactor when they are pipes or sockets, by tokio's blocking threads otherwise.
//!
//! `tokio::io::stdin()` and `stdout()` hand every read and every write to a
//! blocking thread and wake the task when it is done: two thread switches
//! each way per request. On these machines (2 shared cores) a switch costs
//! tens of microseconds, a large part of a read's round trip. A pipe or a
//! socket (what MCP clients launch a server with) can instead be made
//! non-blocking and polled by the reactor on the thread that runs the
//! session. A terminal or a file keeps tokio's way.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::os::unix::fs::FileTypeExt;
use std::pin::Pin;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::UnixStream;
use tokio::net::unix::pipe;

pub type Input = Pin<Box<dyn AsyncRead + Send>>;
pub type Output = Pin<Box<dyn AsyncWrite + Send>>;

/// The file status flags that stdin and stdout had before [`open`] made
/// them non-blocking, put back when dropped. Non-blocking is a property of
/// the open file, which a shell or a parent may share.
pub struct Restore(Vec<(RawFd, libc::c_int)>);

impl Drop for Restore {
    fn drop(&mut self) {
        for &(fd, flags) in &self.0 {
            set_flags(fd, flags);
        }
    }
}

/// Stdin and stdout for a session, and what puts them back as they were:
/// keep it until the session has ended.
pub fn open() -> (Input, Output, Restore) {
    let mut saved = Vec::new();
    let input = match polled(
        std::io::stdin().as_fd(),
        |fd| Ok(Box::pin(pipe::Receiver::from_owned_fd(fd)?) as Input),
        |socket| Box::pin(socket) as Input,
    ) {
        Some((input, flags)) => {
            saved.push(flags);
            input
        }
        None => Box::pin(tokio::io::stdin()),
    };
    let output = match polled(
        std::io::stdout().as_fd(),
        |fd| Ok(Box::pin(pipe::Sender::from_owned_fd(fd)?) as Output),
        |socket| Box::pin(socket) as Output,
    ) {
        Some((output, flags)) => {
            saved.push(flags);
            output
        }
        None => Box::pin(tokio::io::stdout()),
    };
    (input, output, Restore(saved))
}

fn set_flags(fd: RawFd, flags: libc::c_int) {
    // SAFETY: fcntl on a descriptor number with plain integer arguments; a
    // closed descriptor makes it fail, nothing else.
    unsafe { libc::fcntl(fd, libc::F_SETFL, flags) };
}

/// A duplicate of `fd` ready for the reactor (through `pipe` for a pipe,
/// `socket` for a Unix socket), and `fd`'s flags before; `None` for
/// anything else, and when a step fails, the flags then put back at once:
/// a blocking thread will read or write it.
fn polled<T>(
    fd: BorrowedFd<'_>,
    pipe: impl FnOnce(OwnedFd) -> std::io::Result<T>,
    socket: impl FnOnce(UnixStream) -> T,
) -> Option<(T, (RawFd, libc::c_int))> {
    let number = fd.as_raw_fd();
    let file = std::fs::File::from(fd.try_clone_to_owned().ok()?);
    let kind = file.metadata().ok()?.file_type();
    if !kind.is_fifo() && !kind.is_socket() {
        return None;
    }
    // SAFETY: as in `set_flags`.
    let flags = unsafe { libc::fcntl(number, libc::F_GETFL) };
    if flags < 0 {
        return None;
    }
    let owned = OwnedFd::from(file);
    let end = if kind.is_fifo() {
        pipe(owned)
    } else {
        let stream = std::os::unix::net::UnixStream::from(owned);
        stream
            .set_nonblocking(true)
            .and_then(|()| UnixStream::from_std(stream))
            .map(socket)
    };
    match end {
        Ok(end) => Some((end, (number, flags))),
        Err(e) => {
            tracing::debug!("fd {number} through a blocking thread: {e}");
            set_flags(number, flags);
            None
        }
    }
}
