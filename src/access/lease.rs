//! How long what a credential let in may go on: a stream (a session's notifications, a listen, the viewer's live updates) ends when its credential no longer holds, revoked or expired, as every new request would be refused.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use tokio_stream::{Stream, StreamExt};

/// Asks whether the credential still holds.
type Check = Arc<dyn Fn() -> Pin<Box<dyn Future<Output = bool> + Send>> + Send + Sync>;

/// A credential's hold on what it opened: forever (the static token, no
/// credential), or as long as a check, asked every `every`, says so.
#[derive(Clone)]
pub struct Lease {
    check: Option<(Check, Duration)>,
}

impl Lease {
    pub fn forever() -> Lease {
        Lease { check: None }
    }

    /// A lease that holds while `check` says so, asked every `every`.
    pub fn checked<F, Fut>(every: Duration, check: F) -> Lease
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = bool> + Send + 'static,
    {
        let check: Check = Arc::new(move || Box::pin(check()));
        Lease {
            check: Some((check, every)),
        }
    }

    /// Completes when the credential no longer holds; never for a lease
    /// that holds forever.
    pub async fn ended(&self) {
        let Some((check, every)) = &self.check else {
            return std::future::pending().await;
        };
        loop {
            tokio::time::sleep(*every).await;
            if !check().await {
                return;
            }
        }
    }

    /// `stream`, ended when the lease ends (or when it ends itself).
    pub fn bound<T: Send + 'static>(
        &self,
        stream: impl Stream<Item = T> + Send + 'static,
    ) -> impl Stream<Item = T> + Send + 'static {
        enum Item<T> {
            Data(T),
            End,
        }
        let (tx, rx) = tokio::sync::mpsc::channel::<()>(1);
        let lease = self.clone();
        if lease.check.is_some() {
            tokio::spawn(async move {
                tokio::select! {
                    () = lease.ended() => {
                        let _ = tx.send(()).await;
                    }
                    () = tx.closed() => {}
                }
            });
        }
        stream
            .map(Item::Data)
            .chain(tokio_stream::once(Item::End))
            .merge(tokio_stream::wrappers::ReceiverStream::new(rx).map(|()| Item::End))
            .take_while(|item| matches!(item, Item::Data(_)))
            .filter_map(|item| match item {
                Item::Data(data) => Some(data),
                Item::End => None,
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};

    #[tokio::test]
    async fn a_stream_ends_when_its_lease_does_and_not_before() {
        let holds = Arc::new(AtomicBool::new(true));
        let flag = holds.clone();
        let lease = Lease::checked(Duration::from_millis(20), move || {
            let flag = flag.clone();
            async move { flag.load(Ordering::SeqCst) }
        });
        let (tx, rx) = tokio::sync::mpsc::channel(8);
        let mut stream = Box::pin(lease.bound(tokio_stream::wrappers::ReceiverStream::new(rx)));
        tx.send(1).await.unwrap();
        assert_eq!(stream.next().await, Some(1));
        // Held: the stream waits for more.
        let waited = tokio::time::timeout(Duration::from_millis(100), stream.next()).await;
        assert!(waited.is_err(), "{waited:?}");
        tx.send(2).await.unwrap();
        assert_eq!(stream.next().await, Some(2));
        // Revoked: the stream ends, though its sender lives on.
        holds.store(false, Ordering::SeqCst);
        let ended = tokio::time::timeout(Duration::from_secs(2), stream.next()).await;
        assert_eq!(ended, Ok(None));
        drop(tx);
    }

    #[tokio::test]
    async fn a_stream_that_ends_itself_ends_under_any_lease() {
        for lease in [
            Lease::forever(),
            Lease::checked(Duration::from_secs(3600), || async { true }),
        ] {
            let (tx, rx) = tokio::sync::mpsc::channel(8);
            let mut stream = Box::pin(lease.bound(tokio_stream::wrappers::ReceiverStream::new(rx)));
            tx.send("a").await.unwrap();
            drop(tx);
            assert_eq!(stream.next().await, Some("a"));
            let ended = tokio::time::timeout(Duration::from_secs(2), stream.next()).await;
            assert_eq!(ended, Ok(None));
        }
    }
}
