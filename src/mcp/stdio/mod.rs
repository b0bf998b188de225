//! The stdio transport: one JSON-RPC message per line in, responses and notifications as lines out, until EOF or a signal.

use std::future::Future;
use std::sync::Arc;

use anyhow::Result;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{Semaphore, broadcast, mpsc};
use tokio::task::JoinSet;

use super::dispatch::{self, Message, SessionState, Step};
use super::error::RpcError;
use super::framing::{self, Frame, MAX_LINE};
use super::roots::Roots;
use super::{Config, Context, StoreSlot};
use crate::access::Principal;
use crate::store::{ChangeBatch, Store};

mod ends;

/// Requests handled at once; the next line is not read until one finishes,
/// which bounds memory whatever the client sends.
const MAX_IN_FLIGHT: usize = 64;
/// Lines waiting for stdout.
const OUTPUT_QUEUE: usize = 256;

/// Serves MCP on stdin/stdout until stdin closes or SIGTERM / Ctrl-C
/// arrives. With no store, the server waits for a client that offers roots
/// to name a project.
pub async fn serve_stdio(store: Option<Store>, config: Config) -> Result<()> {
    let roots = Roots::new(store.is_none());
    let slot = StoreSlot::new(store);
    let changes = super::watch_changes(slot.clone())?;
    // Held until the session has ended: then stdin's and stdout's flags go back.
    let (input, output, _restore) = ends::open();
    serve_slot(
        slot,
        roots,
        config,
        input,
        output,
        changes.subscribe(),
        shutdown_signal(),
    )
    .await
}

/// Registers for SIGTERM and SIGINT (Ctrl-C) now, and returns a future that
/// completes when either comes. Now, not at the future's first poll: a
/// server answers requests before it first waits for a signal, and a SIGTERM
/// before the registration would kill it by the default action (an exit
/// status of "signal 15", and no checkpoint to remove the WAL). Must be
/// called within the runtime.
pub fn shutdown_signal() -> impl Future<Output = ()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{Signal, SignalKind, signal};
        async fn next(signal: Option<Signal>) {
            match signal {
                Some(mut signal) => {
                    signal.recv().await;
                }
                // Not registered: this one never comes.
                None => std::future::pending().await,
            }
        }
        let term = signal(SignalKind::terminate()).ok();
        let interrupt = signal(SignalKind::interrupt()).ok();
        async move {
            tokio::select! {
                _ = next(term) => {}
                _ = next(interrupt) => {}
            }
        }
    }
    #[cfg(not(unix))]
    {
        async {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

/// Serves one MCP session over any byte stream until it ends or `shutdown`
/// completes. The caller owns shutdown, so tests run a server in-process.
pub async fn serve<R, W>(
    store: Store,
    config: Config,
    input: R,
    output: W,
    changes: broadcast::Receiver<Arc<ChangeBatch>>,
    shutdown: impl Future<Output = ()>,
) -> Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let slot = StoreSlot::new(Some(store));
    serve_slot(
        slot,
        Roots::new(false),
        config,
        input,
        output,
        changes,
        shutdown,
    )
    .await
}

/// [`serve`] of whatever store `slot` holds, which the client's roots may
/// set or change.
pub async fn serve_slot<R, W>(
    slot: StoreSlot,
    mut roots: Roots,
    config: Config,
    input: R,
    output: W,
    changes: broadcast::Receiver<Arc<ChangeBatch>>,
    shutdown: impl Future<Output = ()>,
) -> Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let ctx = Arc::new(Context::new(slot.clone(), &config));
    let (out, out_rx) = mpsc::channel::<String>(OUTPUT_QUEUE);
    let writer = tokio::spawn(write_lines(output, out_rx));
    let state = SessionState::default();
    // stdio is the user's own process: it may do everything (the MCP
    // authorization rules are for HTTP).
    let local = Arc::new(Principal::local());
    let notifier = tokio::spawn(dispatch::notify(
        changes,
        state.subs.clone(),
        std::future::pending(),
    ));
    let mut input = BufReader::with_capacity(64 * 1024, input);
    let in_flight = Arc::new(Semaphore::new(MAX_IN_FLIGHT));
    let mut tasks = JoinSet::new();
    // Waits for the client's roots: not requests, ended at shutdown.
    let mut background = JoinSet::new();

    tokio::pin!(shutdown);
    loop {
        let frame = tokio::select! {
            _ = &mut shutdown => {
                tracing::info!("shutting down on signal");
                break;
            }
            frame = framing::read_frame(&mut input, MAX_LINE) => frame,
        };
        // Reap finished tasks so the set does not grow with the session.
        while tasks.try_join_next().is_some() {}
        while background.try_join_next().is_some() {}
        let line = match frame {
            Ok(Frame::Line(line)) => line,
            Ok(Frame::Eof) => break,
            Ok(Frame::TooLong) => {
                let error = RpcError::invalid_request(format!(
                    "message longer than {MAX_LINE} bytes: discarded"
                ));
                send(&out, dispatch::error_line(&Value::Null, &error)).await;
                continue;
            }
            Err(e) => {
                tracing::error!("cannot read stdin: {e}");
                break;
            }
        };
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let message = match dispatch::parse(&line) {
            Ok(message) => message,
            Err(reply) => {
                send(&out, reply).await;
                continue;
            }
        };
        if let Message::Response { id, result } = &message {
            // An answer to the server's own `roots/list`, or to nothing.
            roots.answer(id, result.clone());
            continue;
        }
        let method = message.method().unwrap_or_default();
        if method == "initialize" {
            roots.initialize(message.params());
        }
        let ask_roots = roots.asks_after(method);
        // On stdio every notification goes to stdout.
        let step = dispatch::admit(message, &local, &state, &ctx, &out, Some(out.clone())).await;
        if ask_roots {
            background.spawn(roots.ask(out.clone(), slot.clone()));
        }
        match step {
            Step::Done | Step::Listening => {}
            Step::Reply(line) | Step::Initialized(line) => send(&out, line).await,
            Step::Run(request) => {
                let permit = in_flight
                    .clone()
                    .acquire_owned()
                    .await
                    .expect("the semaphore is never closed");
                let ctx = ctx.clone();
                let out = out.clone();
                tasks.spawn(async move {
                    send(&out, dispatch::run(ctx, request).await).await;
                    drop(permit);
                });
            }
        }
    }

    // Let requests already read finish (they take milliseconds), then flush.
    let drain = async { while tasks.join_next().await.is_some() {} };
    if tokio::time::timeout(std::time::Duration::from_millis(500), drain)
        .await
        .is_err()
    {
        tracing::warn!("requests still running at shutdown were dropped");
    }
    background.shutdown().await;
    tasks.shutdown().await;
    notifier.abort();
    let _ = notifier.await;
    // The subscriptions hold senders of the output queue: drop them so the
    // writer sees the queue end.
    drop(state);
    drop(out);
    match writer.await {
        Ok(result) => result,
        Err(e) => Err(anyhow::anyhow!("the writer failed: {e}")),
    }
}

async fn send(out: &mpsc::Sender<String>, line: String) {
    // Fails only when the writer is gone (stdout closed): nothing to tell.
    let _ = out.send(line).await;
}

/// Writes each line and a newline; flushes whenever the queue is empty.
async fn write_lines<W: AsyncWrite + Unpin>(
    output: W,
    mut lines: mpsc::Receiver<String>,
) -> Result<()> {
    let mut output = tokio::io::BufWriter::with_capacity(64 * 1024, output);
    while let Some(line) = lines.recv().await {
        output.write_all(line.as_bytes()).await?;
        output.write_all(b"\n").await?;
        if lines.is_empty() {
            output.flush().await?;
        }
    }
    output.flush().await?;
    Ok(())
}
