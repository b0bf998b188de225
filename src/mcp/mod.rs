//! The MCP server: transports, message dispatch by protocol era, handlers run off the async threads, change notifications. The only module that knows JSON-RPC and the `rmcp` SDK.
//!
//! The loop is ours, not the SDK's service layer: `rmcp` 3.11 stays silent on
//! a line that is not JSON, answers batches without `"id": null`, answers bad
//! params with `-32601` and accepts `initialize` after the 2026-07-28 envelope
//! (see ARCHITECTURE.md). Its model types shape every result.

mod dispatch;
mod error;
mod framing;
mod handlers;
mod http;
mod icons;
mod roots;
mod session;
mod stdio;
mod subscriptions;
mod tools;

use std::sync::Arc;

use anyhow::Result;
use rmcp::model::{
    DiscoverResult, Implementation, InitializeResult, ProtocolVersion, ResourcesCapability,
    ServerCapabilities, ToolsCapability,
};
use serde_json::{Map, Value};
use tokio::sync::broadcast;

use crate::access::Grants;
use crate::store::{ChangeBatch, ChangeWatcher, Reader, Store};
use crate::write::Writer;
pub use error::RpcError;
pub use framing::MAX_LINE;
use handlers::Freshness;
pub use http::{AuthOptions, HttpOptions, MAX_BODY, OAuthOptions, check_public_url, serve_http};
pub use session::{Era, HANDSHAKE_VERSIONS, STATELESS_VERSION};
pub use stdio::{serve, serve_stdio, shutdown_signal};

/// Resources per `resources/list` page unless `--page-size` says otherwise:
/// about 150 KB of JSON, and a 100k-document listing in 200 round trips.
pub const DEFAULT_PAGE_SIZE: u32 = 500;
pub const MAX_PAGE_SIZE: u32 = 1000;

/// The MIME type of every document.
pub const MIME_TYPE: &str = "text/markdown";

const INSTRUCTIONS: &str = "The project's Markdown knowledge: features (orchestra://features/{id}), notes (orchestra://notes/{id}) and documentation (orchestra://docs/{path}). To find documents, call the search tool; then read the ones that matter by URI: with the read tool (in parts, by lines or by section; outline lists a document's sections), or with resources/read. The list tool (or resources/list) browses them in key order; links shows what a document links to and what links to it; history and diff show their versions.";

#[derive(Debug, Clone)]
pub struct Config {
    pub page_size: usize,
    /// The writer of the project folder served, when the server may write
    /// to it (it knows the folder, is not `--read-only`, and over HTTP has
    /// a token): the write tools are declared then.
    pub writer: Option<Writer>,
    /// Whether a project named later (a client's root) may be written.
    pub writes_later: bool,
}

/// The store a server serves: none until a project is known (a server
/// started with nothing to serve waits for its client's roots), and another
/// when the client's roots change; and the writer of its folder, when the
/// server writes. Shared by the session and the poller.
#[derive(Clone, Default)]
pub struct StoreSlot {
    store: Arc<std::sync::RwLock<Option<Store>>>,
    writer: Arc<std::sync::RwLock<Option<Writer>>>,
    writes_later: Arc<std::sync::atomic::AtomicBool>,
}

impl StoreSlot {
    pub fn new(store: Option<Store>) -> StoreSlot {
        StoreSlot {
            store: Arc::new(std::sync::RwLock::new(store)),
            ..StoreSlot::default()
        }
    }

    /// The store now, if any (a cheap clone of its pool).
    pub fn get(&self) -> Option<Store> {
        self.store.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The writer now, if the server writes.
    fn writer(&self) -> Option<Writer> {
        self.writer
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Whether a project named later may be written.
    fn writes_later(&self) -> bool {
        self.writes_later.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn set(&self, store: Store, writer: Option<Writer>) {
        *self.store.write().unwrap_or_else(|e| e.into_inner()) = Some(store);
        *self.writer.write().unwrap_or_else(|e| e.into_inner()) = writer;
    }
}

/// A request's view of the [`Context`]: the store as its caller may see it.
/// Handlers take this, never the context alone, so that no read forgets
/// the caller's grants.
pub struct Caller<'a> {
    ctx: &'a Context,
    pub grants: &'a Grants,
}

impl std::ops::Deref for Caller<'_> {
    type Target = Context;

    fn deref(&self) -> &Context {
        self.ctx
    }
}

impl<'a> Caller<'a> {
    pub fn new(ctx: &'a Context, grants: &'a Grants) -> Caller<'a> {
        Caller { ctx, grants }
    }

    /// The store as the caller sees it, when a project is known.
    fn store(&self) -> Option<Seen<'a>> {
        Some(Seen {
            store: self.ctx.store()?,
            grants: self.grants,
        })
    }
}

/// The store through a caller's grants: its readers see only the areas
/// the caller may read (or search), filtered in their queries.
pub struct Seen<'a> {
    store: Store,
    grants: &'a Grants,
}

impl Seen<'_> {
    /// A reader of what the caller may read.
    fn reader(&self) -> Result<Reader> {
        Ok(self.store.reader()?.seeing(self.grants.read_filter()))
    }

    /// A reader of what the caller may search.
    fn search_reader(&self) -> Result<Reader> {
        Ok(self.store.reader()?.seeing(self.grants.search_filter()))
    }
}

/// What every handler may use: the store and what was computed at start-up.
pub struct Context {
    slot: StoreSlot,
    page_size: usize,
    discover_json: String,
    /// `"_meta":{...serverInfo}`, spliced into every 2026-07-28 result.
    server_meta: String,
    initialize: InitializeResult,
    /// `tools/list` without the write tools, and with them.
    tools_json: String,
    tools_json_writes: String,
}

impl Context {
    fn new(slot: StoreSlot, config: &Config) -> Context {
        if let Some(writer) = &config.writer {
            *slot.writer.write().unwrap_or_else(|e| e.into_inner()) = Some(writer.clone());
        }
        slot.writes_later
            .store(config.writes_later, std::sync::atomic::Ordering::Relaxed);
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
            slot,
            page_size: config.page_size.clamp(1, MAX_PAGE_SIZE as usize),
            discover_json: discover.to_string(),
            server_meta: format!("\"_meta\":{}", Value::Object(meta)),
            initialize,
            tools_json: tools::list_json(false),
            tools_json_writes: tools::list_json(true),
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

    /// The store, when a project is known.
    fn store(&self) -> Option<Store> {
        self.slot.get()
    }

    /// The writer of the project, or why this server does not write.
    fn writer(&self) -> Result<Writer, String> {
        self.slot.writer().ok_or_else(|| {
            "this server does not write: it serves a database without its project folder, or runs with --read-only, \
             or serves HTTP without a token (--token-file). Start it in the project's folder, or with --watch DIR \
             or --project DIR, to write"
                .to_string()
        })
    }

    /// The `tools/list` result: with the write tools when the server writes.
    fn tools_json(&self) -> &str {
        match self.slot.writer() {
            Some(_) => &self.tools_json_writes,
            None => &self.tools_json,
        }
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
    info.icons = Some(icons::server());
    info
}

/// Only what works: resources (list, read, templates, subscriptions, list
/// changes), completions and the search tool.
fn capabilities() -> ServerCapabilities {
    let mut capabilities = ServerCapabilities::default();
    let mut resources = ResourcesCapability::default();
    resources.subscribe = Some(true);
    resources.list_changed = Some(true);
    capabilities.resources = Some(resources);
    capabilities.completions = Some(Default::default());
    capabilities.tools = Some(ToolsCapability::default());
    capabilities
}

/// How often the server asks SQLite whether another process committed.
const POLL_INTERVAL: std::time::Duration = std::time::Duration::from_millis(100);

/// The thread that publishes what commits changed. Dropping it stops the
/// thread and waits for it (at most one poll interval), so that its
/// connection is closed: the last connection to close removes the
/// database's `-wal` and `-shm` files.
pub struct ChangeFeed {
    sender: broadcast::Sender<Arc<ChangeBatch>>,
    stop: Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ChangeFeed {
    /// Where every session subscribes.
    pub fn sender(&self) -> broadcast::Sender<Arc<ChangeBatch>> {
        self.sender.clone()
    }

    pub fn subscribe(&self) -> broadcast::Receiver<Arc<ChangeBatch>> {
        self.sender.subscribe()
    }
}

impl Drop for ChangeFeed {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            // A panic in the thread was logged where it happened.
            let _ = thread.join();
        }
    }
}

/// A watcher of `store` from its current state, started on a thread of
/// its own: the caller may be an async task, on which PostgreSQL's
/// blocking client must not run.
fn start_watcher(store: &Store) -> Result<ChangeWatcher> {
    std::thread::scope(|scope| {
        scope
            .spawn(|| ChangeWatcher::new(store))
            .join()
            .unwrap_or_else(|_| Err(anyhow::anyhow!("the change watcher panicked")))
    })
}

/// Starts the thread that notices commits (by any process) to the store in
/// `slot` and publishes what they changed; every session subscribes to the
/// returned feed. When the slot gets another store, the thread watches
/// that one from its current state. The thread lives as long as the feed.
pub fn watch_changes(slot: StoreSlot) -> Result<ChangeFeed> {
    let mut watcher = match slot.get() {
        Some(store) => Some((store.location(), start_watcher(&store)?)),
        None => None,
    };
    let (publish, _) = broadcast::channel(64);
    let sender = publish.clone();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stopped = stop.clone();
    let thread = std::thread::Builder::new()
        .name("orchestra-changes".into())
        .spawn(move || {
            let mut failing = false;
            loop {
                std::thread::sleep(POLL_INTERVAL);
                if stopped.load(std::sync::atomic::Ordering::Relaxed) {
                    return;
                }
                let Some(store) = slot.get() else {
                    continue;
                };
                if watcher
                    .as_ref()
                    .is_none_or(|(location, _)| *location != store.location())
                {
                    match ChangeWatcher::new(&store) {
                        Ok(new) => watcher = Some((store.location(), new)),
                        Err(e) => tracing::warn!("cannot read the change feed: {e:#}"),
                    }
                    continue;
                }
                let Some((_, current)) = watcher.as_mut() else {
                    continue;
                };
                match current.poll() {
                    Ok(Some(batch)) => {
                        failing = false;
                        tracing::debug!(
                            seq = batch.seq,
                            changes = batch.changes.len(),
                            "commit seen"
                        );
                        // No session listening is not an error.
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
    Ok(ChangeFeed {
        sender,
        stop,
        thread: Some(thread),
    })
}

#[cfg(test)]
mod tests;
