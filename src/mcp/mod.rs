//! The MCP server: reads JSON-RPC lines, admits them by protocol era, runs handlers concurrently off the async threads, and writes responses. The only module that knows JSON-RPC and the `rmcp` SDK.
//!
//! The loop is ours, not the SDK's service layer: `rmcp` 3.11 stays silent on
//! a line that is not JSON, answers batches without `"id": null`, answers bad
//! params with `-32601` and accepts `initialize` after the 2026-07-28 envelope
//! (see ARCHITECTURE.md). Its model types shape every result.

mod error;
mod framing;
mod handlers;
mod session;
mod subscriptions;

use std::future::Future;
use std::sync::Arc;

use anyhow::Result;
use rmcp::model::{
    DiscoverResult, Implementation, InitializeResult, ProtocolVersion, ResourcesCapability,
    ServerCapabilities,
};
use serde_json::{Map, Value};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{Mutex, Semaphore, broadcast, mpsc};
use tokio::task::JoinSet;

use crate::store::{ChangeBatch, ChangeWatcher, Store};
pub use error::RpcError;
pub use framing::MAX_LINE;
use handlers::Freshness;
pub use session::{Era, HANDSHAKE_VERSIONS, STATELESS_VERSION};
use subscriptions::Subscriptions;

/// Resources per `resources/list` page unless `--page-size` says otherwise:
/// about 150 KB of JSON, and a 100k-document listing in 200 round trips.
pub const DEFAULT_PAGE_SIZE: u32 = 500;
pub const MAX_PAGE_SIZE: u32 = 1000;

/// The MIME type of every document.
pub const MIME_TYPE: &str = "text/markdown";

/// Requests handled at once; the next line is not read until one finishes,
/// which bounds memory whatever the client sends.
const MAX_IN_FLIGHT: usize = 64;
/// Responses waiting for stdout.
const OUTPUT_QUEUE: usize = 256;

const INSTRUCTIONS: &str = "The project's Markdown knowledge: features (orchestra://features/{id}), notes (orchestra://notes/{id}) and documentation (orchestra://docs/{path}). List resources to browse, read one by URI, or complete an id from a resource template.";

#[derive(Debug, Clone)]
pub struct Config {
    pub page_size: usize,
}

/// What every handler may use: the store and what was computed at start-up.
pub struct Context {
    store: Store,
    page_size: usize,
    discover_json: String,
    /// `"_meta":{...serverInfo}`, spliced into every 2026-07-28 result.
    server_meta: String,
    initialize: InitializeResult,
}

impl Context {
    fn new(store: Store, config: &Config) -> Context {
        let server_info = server_info();
        let mut discover = DiscoverResult::new(vec![ProtocolVersion::V_2026_07_28], capabilities())
            .with_server_info(server_info.clone());
        discover.instructions = Some(INSTRUCTIONS.to_string());
        // Caching fields are spliced in like every other result's.
        let mut discover = serde_json::to_value(&discover).unwrap_or_default();
        if let Some(map) = discover.as_object_mut() {
            for field in ["resultType", "ttlMs", "cacheScope", "_meta"] {
                map.remove(field);
            }
        }
        let mut meta = Map::new();
        meta.insert(
            "io.modelcontextprotocol/serverInfo".to_string(),
            serde_json::to_value(&server_info).unwrap_or_default(),
        );
        let mut initialize = InitializeResult::new(capabilities());
        initialize.server_info = server_info;
        initialize.instructions = Some(INSTRUCTIONS.to_string());
        Context {
            store,
            page_size: config.page_size.clamp(1, MAX_PAGE_SIZE as usize),
            discover_json: discover.to_string(),
            server_meta: format!("\"_meta\":{}", Value::Object(meta)),
            initialize,
        }
    }

    /// A handled result as the era wants it: 2026-07-28 results carry
    /// `resultType`, the server's info and, where cacheable, `ttlMs` and
    /// `cacheScope`. Handlers serialize without them; they are spliced in
    /// before the closing brace, which costs no re-serialization.
    fn finish(&self, era: Era, handled: handlers::Handled) -> String {
        let mut json = handled.json;
        if era == Era::Handshake {
            return json;
        }
        let mut extra = String::from("\"resultType\":\"complete\",");
        if let Freshness::Millis(ttl) = handled.freshness {
            // The backlog is the team's, never to be shared across
            // authorization contexts by an intermediary: private.
            extra.push_str(&format!("\"ttlMs\":{ttl},\"cacheScope\":\"private\","));
        }
        extra.push_str(&self.server_meta);
        json.pop(); // the closing brace
        if json.len() > 1 {
            json.push(',');
        }
        json.push_str(&extra);
        json.push('}');
        json
    }

    fn initialize_json(&self, version: &'static str) -> String {
        let mut result = self.initialize.clone();
        result.protocol_version =
            serde_json::from_value(Value::from(version)).unwrap_or(ProtocolVersion::V_2025_11_25);
        serde_json::to_string(&result).unwrap_or_default()
    }
}

fn server_info() -> Implementation {
    let mut info = Implementation::new("orchestra", env!("CARGO_PKG_VERSION"));
    info.title = Some("Orchestra".to_string());
    info
}

/// Only what works: resources (list, read, templates, subscriptions, list
/// changes) and completions.
fn capabilities() -> ServerCapabilities {
    let mut capabilities = ServerCapabilities::default();
    let mut resources = ResourcesCapability::default();
    resources.subscribe = Some(true);
    resources.list_changed = Some(true);
    capabilities.resources = Some(resources);
    capabilities.completions = Some(Default::default());
    capabilities
}

/// How often the server asks SQLite whether another process committed.
const POLL_INTERVAL: std::time::Duration = std::time::Duration::from_millis(100);

/// Serves MCP on stdin/stdout until stdin closes or SIGTERM / Ctrl-C arrives.
pub async fn serve_stdio(store: Store, config: Config) -> Result<()> {
    let changes = watch_changes(&store)?;
    serve(
        store,
        config,
        tokio::io::stdin(),
        tokio::io::stdout(),
        changes,
        shutdown_signal(),
    )
    .await
}

/// Starts the thread that notices commits (by any process) and publishes
/// what they changed to every session of this process.
pub fn watch_changes(store: &Store) -> Result<broadcast::Receiver<Arc<ChangeBatch>>> {
    let mut watcher = ChangeWatcher::new(store)?;
    let (publish, receiver) = broadcast::channel(64);
    std::thread::Builder::new()
        .name("orchestra-changes".into())
        .spawn(move || {
            let mut failing = false;
            while publish.receiver_count() > 0 {
                std::thread::sleep(POLL_INTERVAL);
                match watcher.poll() {
                    Ok(Some(batch)) => {
                        failing = false;
                        tracing::debug!(
                            seq = batch.seq,
                            changes = batch.changes.len(),
                            "commit seen"
                        );
                        let _ = publish.send(Arc::new(batch));
                    }
                    Ok(None) => failing = false,
                    Err(e) => {
                        // Log once per failure streak, keep serving.
                        if !failing {
                            tracing::warn!("cannot read the change feed: {e:#}");
                        }
                        failing = true;
                    }
                }
            }
        })?;
    Ok(receiver)
}

async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// Serves MCP over any byte stream until it ends or `shutdown` completes.
/// The caller owns shutdown, so tests run a server in-process.
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
    let ctx = Arc::new(Context::new(store, &config));
    let (out, out_rx) = mpsc::channel::<String>(OUTPUT_QUEUE);
    let writer = tokio::spawn(write_lines(output, out_rx));
    let subs = Arc::new(Mutex::new(Subscriptions::default()));
    let notifier = tokio::spawn(notify(changes, subs.clone(), out.clone()));
    let mut input = BufReader::with_capacity(64 * 1024, input);
    let mut session = session::Session::default();
    let in_flight = Arc::new(Semaphore::new(MAX_IN_FLIGHT));
    let mut tasks = JoinSet::new();

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
        let line = match frame {
            Ok(framing::Frame::Line(line)) => line,
            Ok(framing::Frame::Eof) => break,
            Ok(framing::Frame::TooLong) => {
                let error = RpcError::invalid_request(format!(
                    "message longer than {MAX_LINE} bytes: discarded"
                ));
                send(&out, error_line(&Value::Null, &error)).await;
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
        let Some(request) = admit(&line, &mut session, &ctx, &subs, &out).await else {
            continue;
        };
        let permit = in_flight
            .clone()
            .acquire_owned()
            .await
            .expect("the semaphore is never closed");
        let ctx = ctx.clone();
        let out = out.clone();
        tasks.spawn(async move {
            let Request {
                id,
                era,
                method,
                params,
            } = request;
            let handled = {
                let ctx = ctx.clone();
                tokio::task::spawn_blocking(move || handlers::handle(&ctx, era, &method, params))
                    .await
            };
            let line = match handled {
                Ok(Ok(handled)) => result_line(&id, &ctx.finish(era, handled)),
                Ok(Err(error)) => error_line(&id, &error),
                Err(panic) => {
                    tracing::error!("handler failed: {panic}");
                    error_line(&id, &RpcError::internal("Internal error"))
                }
            };
            send(&out, line).await;
            drop(permit);
        });
    }

    // Let requests already read finish (they take milliseconds), then flush.
    let drain = async { while tasks.join_next().await.is_some() {} };
    if tokio::time::timeout(std::time::Duration::from_millis(500), drain)
        .await
        .is_err()
    {
        tracing::warn!("requests still running at shutdown were dropped");
    }
    notifier.abort();
    let _ = notifier.await;
    drop(out);
    match writer.await {
        Ok(result) => result,
        Err(e) => Err(anyhow::anyhow!("the writer failed: {e}")),
    }
}

struct Request {
    id: Value,
    era: Era,
    method: String,
    params: Option<Value>,
}

/// Parses and admits one line. Returns the request to run, or `None` when
/// the line was answered here (errors, `initialize`) or needs no answer.
async fn admit(
    line: &[u8],
    session: &mut session::Session,
    ctx: &Context,
    subs: &Mutex<Subscriptions>,
    out: &mpsc::Sender<String>,
) -> Option<Request> {
    let message: Value = match serde_json::from_slice(line) {
        Ok(message) => message,
        Err(e) => {
            let error = RpcError::parse_error(format!("Parse error: {e}"));
            send(out, error_line(&Value::Null, &error)).await;
            return None;
        }
    };
    let mut message = match message {
        Value::Object(map) => map,
        Value::Array(_) => {
            let error = RpcError::invalid_request("batches are not supported");
            send(out, error_line(&Value::Null, &error)).await;
            return None;
        }
        _ => {
            let error = RpcError::invalid_request("a message must be a JSON object");
            send(out, error_line(&Value::Null, &error)).await;
            return None;
        }
    };
    let id = message.remove("id");
    let valid_id = match &id {
        None => true,
        Some(Value::String(_)) => true,
        Some(Value::Number(n)) => n.is_i64() || n.is_u64(),
        Some(_) => false,
    };
    let reply_id = if valid_id {
        id.clone().unwrap_or(Value::Null)
    } else {
        Value::Null
    };
    let invalid = |why: &str| RpcError::invalid_request(why.to_string());
    if message.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        send(
            out,
            error_line(&reply_id, &invalid("jsonrpc must be \"2.0\"")),
        )
        .await;
        return None;
    }
    if !valid_id {
        send(
            out,
            error_line(&reply_id, &invalid("id must be a string or an integer")),
        )
        .await;
        return None;
    }
    let method = match message.remove("method") {
        Some(Value::String(method)) => method,
        Some(_) => {
            send(
                out,
                error_line(&reply_id, &invalid("method must be a string")),
            )
            .await;
            return None;
        }
        None => {
            if id.is_none() || !(message.contains_key("result") || message.contains_key("error")) {
                send(
                    out,
                    error_line(
                        &reply_id,
                        &invalid("not a request, notification or response"),
                    ),
                )
                .await;
            }
            // A response: orchestra sends no requests, so nothing waits for it.
            return None;
        }
    };
    let params = message.remove("params");
    if params.as_ref().is_some_and(|p| !p.is_object()) {
        if id.is_some() {
            let error = RpcError::invalid_params("params must be an object");
            send(out, error_line(&reply_id, &error)).await;
        }
        return None;
    }
    let Some(id) = id else {
        tracing::debug!("notification {method}");
        if method == "notifications/cancelled"
            && let Some(request) = params.as_ref().and_then(|p| p.get("requestId"))
        {
            subs.lock().await.cancel(request);
        }
        return None;
    };
    let era = match session.admit(&method, params.as_ref()) {
        Err(error) => {
            send(out, error_line(&id, &error)).await;
            return None;
        }
        Ok(session::Admitted::Initialize { version }) => {
            subs.lock().await.start_handshake();
            send(out, result_line(&id, &ctx.initialize_json(version))).await;
            return None;
        }
        Ok(session::Admitted::Request(era)) => era,
    };
    // Subscriptions change session state: handled here, in arrival order.
    let subscribed = match (era, method.as_str()) {
        (Era::Handshake, "resources/subscribe") => subs.lock().await.subscribe(params.as_ref()),
        (Era::Handshake, "resources/unsubscribe") => subs.lock().await.unsubscribe(params.as_ref()),
        (Era::Stateless, "subscriptions/listen") => {
            // The acknowledgement goes out under the lock, so no
            // notification of this listen can overtake it. The request
            // itself stays open until the client cancels it.
            let mut subs = subs.lock().await;
            match subs.listen(&id, params.as_ref()) {
                Ok(ack) => send(out, ack).await,
                Err(error) => send(out, error_line(&id, &error)).await,
            }
            return None;
        }
        _ => {
            return Some(Request {
                id,
                era,
                method,
                params,
            });
        }
    };
    let line = match subscribed {
        Ok(()) => result_line(&id, "{}"),
        Err(error) => error_line(&id, &error),
    };
    send(out, line).await;
    None
}

/// Turns each published batch of changes into this session's notifications.
async fn notify(
    mut changes: broadcast::Receiver<Arc<ChangeBatch>>,
    subs: Arc<Mutex<Subscriptions>>,
    out: mpsc::Sender<String>,
) {
    loop {
        let batch = match changes.recv().await {
            Ok(batch) => batch,
            // Too far behind to know what changed: say that anything may have.
            Err(broadcast::error::RecvError::Lagged(_)) => Arc::new(ChangeBatch {
                truncated: true,
                ..ChangeBatch::default()
            }),
            Err(broadcast::error::RecvError::Closed) => return,
        };
        let subs = subs.lock().await;
        for line in subs.notifications(&batch) {
            send(&out, line).await;
        }
    }
}

fn result_line(id: &Value, result: &str) -> String {
    format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{result}}}")
}

fn error_line(id: &Value, error: &RpcError) -> String {
    let error = serde_json::to_string(&error.0).unwrap_or_default();
    format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"error\":{error}}}")
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

#[cfg(test)]
mod tests;
