//! Noticing commits on PostgreSQL, by any server on any machine: a LISTEN connection of its own for the imports' NOTIFY, reconnected with backoff when it drops, and a poll every few seconds so that a lost notification costs at most that.

use std::time::{Duration, Instant};

use anyhow::Result;
use postgres::Client;
use postgres::fallible_iterator::FallibleIterator;

use super::import_tx::FEED_CHANNEL;
use super::{PgStore, connect};
use crate::store::ChangeBatch;

/// How often the feed is read even when no notification came.
const POLL_EVERY: Duration = Duration::from_secs(3);
/// The first wait before reconnecting a dropped LISTEN connection, doubled
/// after each failure up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(200);
const MAX_BACKOFF: Duration = Duration::from_secs(10);

/// Notices commits and reads the change feed after the last sequence seen.
pub struct PgChangeWatcher {
    store: PgStore,
    listener: Option<Client>,
    /// When to try the LISTEN connection again, and the wait after that.
    retry_at: Instant,
    backoff: Duration,
    /// When the feed was last read.
    read_at: Instant,
    seq: i64,
}

impl PgChangeWatcher {
    /// Starts watching from the store's current state.
    pub fn new(store: &PgStore) -> Result<PgChangeWatcher> {
        let mut watcher = PgChangeWatcher {
            store: store.clone(),
            listener: None,
            retry_at: Instant::now(),
            backoff: FIRST_BACKOFF,
            read_at: Instant::now(),
            seq: 0,
        };
        watcher.listen()?;
        watcher.seq = store.reader()?.seq()?;
        Ok(watcher)
    }

    /// Opens the LISTEN connection.
    fn listen(&mut self) -> Result<()> {
        let mut client = connect(&self.store.target)?;
        client.batch_execute(&format!("LISTEN {FEED_CHANNEL}"))?;
        self.listener = Some(client);
        self.backoff = FIRST_BACKOFF;
        Ok(())
    }

    /// Whether a notification arrived since the last call (never blocks).
    /// A dropped connection is reopened with backoff; a drop and a reopening
    /// count as notified, since what was announced meanwhile is lost.
    fn notified(&mut self) -> bool {
        let Some(listener) = self.listener.as_mut() else {
            return self.reconnect();
        };
        match drain(listener) {
            Ok(heard) if !listener.is_closed() => heard,
            outcome => {
                let reason = outcome
                    .err()
                    .map_or("closed".to_string(), |e| e.to_string());
                tracing::warn!(
                    "lost the LISTEN connection to {}: {reason}",
                    self.store.target
                );
                self.listener = None;
                self.retry_at = Instant::now();
                true
            }
        }
    }

    /// Tries to reopen the LISTEN connection, when its backoff allows.
    fn reconnect(&mut self) -> bool {
        if Instant::now() < self.retry_at {
            return false;
        }
        match self.listen() {
            Ok(()) => {
                tracing::info!("listening to {} again", self.store.target);
                true
            }
            Err(e) => {
                tracing::warn!(
                    "cannot listen to {} ({e:#}); trying again in {:?}",
                    self.store.target,
                    self.backoff
                );
                self.retry_at = Instant::now() + self.backoff;
                self.backoff = (self.backoff * 2).min(MAX_BACKOFF);
                false
            }
        }
    }

    /// The changes committed since the last call, or `None` when nothing
    /// was. Idle, it only looks at the LISTEN connection's buffer, and reads
    /// the feed every [`POLL_EVERY`].
    pub fn poll(&mut self) -> Result<Option<ChangeBatch>> {
        let due = self.read_at.elapsed() >= POLL_EVERY;
        if !self.notified() && !due {
            return Ok(None);
        }
        self.read_at = Instant::now();
        let batch = self.store.reader()?.changes_after(self.seq)?;
        if batch.seq == self.seq {
            return Ok(None);
        }
        self.seq = batch.seq;
        Ok(Some(batch))
    }
}

/// How long a poll waits for a notification. The client reads its socket
/// only while it waits (its non-blocking iterator returns only what was
/// already read), and the server's watcher thread sleeps between polls.
const LISTEN_WAIT: Duration = Duration::from_millis(5);

/// Takes the notifications that arrived; whether there was any.
fn drain(listener: &mut Client) -> Result<bool, postgres::Error> {
    let mut heard = false;
    let mut notifications = listener.notifications();
    let mut arrived = notifications.timeout_iter(LISTEN_WAIT);
    while arrived.next()?.is_some() {
        heard = true;
    }
    Ok(heard)
}
