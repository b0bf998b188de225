//! The server's reads of the store: each on a blocking thread, at most as many at once as the store has connections, the others waiting their turn.
//!
//! Without this gate, every request waiting for a pooled connection holds a
//! blocking thread (tokio starts up to 512) and fails after the pool's
//! timeout. Behind it, a waiting request is a small future in a fair queue
//! that never times out, and the pages being built at once (the memory they
//! take) are bounded by the number of connections, however many clients
//! there are.

use tokio::sync::Semaphore;
use tokio::task::JoinError;

static GATE: Semaphore = Semaphore::const_new(crate::store::READ_CONNECTIONS);

/// Runs `read` on a blocking thread once a connection is free for it.
pub async fn run<T: Send + 'static>(
    read: impl FnOnce() -> T + Send + 'static,
) -> Result<T, JoinError> {
    // The gate is never closed.
    let permit = GATE.acquire().await.expect("the read gate is never closed");
    tokio::task::spawn_blocking(move || {
        // Held until the read ends, even when the request that waits for it
        // is dropped: the bound holds for reads that nobody waits for.
        let _permit = permit;
        read()
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn no_more_reads_run_at_once_than_there_are_connections_and_none_fails() {
        static RUNNING: AtomicUsize = AtomicUsize::new(0);
        static MOST: AtomicUsize = AtomicUsize::new(0);
        let reads: Vec<_> = (0..crate::store::READ_CONNECTIONS * 8)
            .map(|i| {
                tokio::spawn(run(move || {
                    let now = RUNNING.fetch_add(1, Ordering::SeqCst) + 1;
                    MOST.fetch_max(now, Ordering::SeqCst);
                    std::thread::sleep(std::time::Duration::from_millis(5));
                    RUNNING.fetch_sub(1, Ordering::SeqCst);
                    i
                }))
            })
            .collect();
        for (i, read) in reads.into_iter().enumerate() {
            assert_eq!(read.await.unwrap().unwrap(), i);
        }
        let most = MOST.load(Ordering::SeqCst);
        assert!(most <= crate::store::READ_CONNECTIONS, "{most} at once");
        assert!(most > 1, "reads ran one at a time");
    }
}
