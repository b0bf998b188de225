//! The Streamable HTTP transport: `/mcp` (POST messages, GET a session's notification stream, DELETE a session), read-only JSON endpoints for viewers and scripts (`/resource`, `/search`), `/healthz`, the Protected Resource Metadata; the checks in front of them are `guard`'s, the credentials `auth`'s.
//!
//! Messages go through the same [`dispatch`] as on stdio. Handshake-era
//! sessions live in a table keyed by `Mcp-Session-Id`; 2026-07-28 requests
//! are stateless: each gets a session state of its own, and a
//! `subscriptions/listen` is answered with a stream that lives as long as
//! the client keeps it open.

mod auth;
mod guard;

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, Result};
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Extension, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use base64::Engine;
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc};
use tokio::task::JoinSet;
use tokio_stream::StreamExt;
use tokio_stream::wrappers::ReceiverStream;

use super::dispatch::{self, Message, SessionState, Step};
use super::error::RpcError;
use super::session::{HANDSHAKE_VERSIONS, STATELESS_VERSION};
use auth::Auth;
pub use auth::{AuthOptions, OAuthOptions, check_public_url};
use guard::allowed_hosts;

use super::{Caller, Config, Context, MIME_TYPE, StoreSlot, handlers, tools};
use crate::access::{Lease, Principal};
use crate::doc::DocKey;
use crate::search::{self, Filter, Search, SearchError, Under};
use crate::store::{ChangeBatch, Fetched, Store};
use crate::uri;
use crate::viewer;

/// The largest request body accepted (413 beyond).
pub const MAX_BODY: usize = 4 * 1024 * 1024;
/// Handshake-era sessions held at once; the oldest idle one makes room.
const MAX_SESSIONS: usize = 10_000;
/// Notifications waiting for one stream.
const STREAM_QUEUE: usize = 256;

const SESSION_HEADER: &str = "mcp-session-id";
const VERSION_HEADER: &str = "mcp-protocol-version";
const METHOD_HEADER: &str = "mcp-method";
const NAME_HEADER: &str = "mcp-name";
const META_VERSION: &str = "io.modelcontextprotocol/protocolVersion";

/// How `serve --http` listens and whom it lets in.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    pub addr: SocketAddr,
    /// Origins allowed besides the loopback ones.
    pub allowed_origins: Vec<String>,
    /// The credentials every request but `/healthz` must carry, if any.
    pub auth: AuthOptions,
}

struct HttpSession {
    state: SessionState,
    /// Who opened it: only they may use it (another credential's request
    /// with its id is answered as for an unknown session).
    principal: String,
    /// Ends the session's notifier when the session ends.
    notifier: tokio::task::AbortHandle,
    last_used: std::sync::Mutex<std::time::Instant>,
}

impl Drop for HttpSession {
    fn drop(&mut self) {
        self.notifier.abort();
    }
}

struct App {
    ctx: Arc<Context>,
    changes: broadcast::Sender<Arc<ChangeBatch>>,
    sessions: std::sync::Mutex<HashMap<String, Arc<HttpSession>>>,
    /// Notifiers of open stateless listens, ended at shutdown.
    listens: std::sync::Mutex<JoinSet<()>>,
    /// `Host` values accepted; `None` when bound to every interface.
    hosts: Option<Vec<String>>,
    origins: Vec<String>,
    auth: Auth,
}

/// The Protected Resource Metadata (RFC 9728), when OAuth is on: public,
/// outside the guard, readable by any page (CORS `*`).
fn metadata_routes(app: &Arc<App>) -> Router {
    let Some(document) = app.auth.metadata() else {
        return Router::new();
    };
    let document = Arc::new(document);
    let mut router = Router::new();
    for path in app.auth.metadata_paths() {
        let document = document.clone();
        router = router.route(
            &path,
            get(move || async move {
                let mut response = Json((*document).clone()).into_response();
                response.headers_mut().insert(
                    header::ACCESS_CONTROL_ALLOW_ORIGIN,
                    HeaderValue::from_static("*"),
                );
                response
            }),
        );
    }
    router
}

/// Serves MCP over Streamable HTTP until `shutdown` completes; then open
/// streams end and in-flight requests finish.
pub async fn serve_http(
    store: Store,
    config: Config,
    options: HttpOptions,
    changes: broadcast::Sender<Arc<ChangeBatch>>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<()> {
    let listener = tokio::net::TcpListener::bind(options.addr)
        .await
        .with_context(|| format!("cannot listen on {}", options.addr))?;
    let addr = listener.local_addr()?;
    if !addr.ip().is_loopback() && !options.auth.required() {
        tracing::warn!(
            "listening on {addr}, beyond this machine, without credentials: anyone who can reach it can read the project (use --token-file, --api-keys or --oauth-issuer)"
        );
    }
    eprintln!("orchestra: serving MCP on http://{addr}/mcp");
    eprintln!("orchestra: the viewer is at http://{addr}/");
    let slot = StoreSlot::new(Some(store.clone()));
    let app = Arc::new(App {
        ctx: Arc::new(Context::new(slot.clone(), &config)),
        changes,
        sessions: Default::default(),
        listens: Default::default(),
        hosts: allowed_hosts(addr),
        origins: options.allowed_origins.clone(),
        auth: Auth::new(options.auth.clone(), slot),
    });
    let router = Router::new()
        .route("/mcp", get(get_mcp).post(post_mcp).delete(delete_mcp))
        .route("/resource", get(get_resource))
        .route("/search", get(get_search))
        .route("/healthz", get(|| async { "ok" }))
        .with_state(app.clone())
        .merge(viewer::router(
            store,
            app.changes.clone(),
            config.writer.clone(),
        ))
        // A path of no route is guarded too (a `?token=` there is handed
        // to the cookie like any page's): the fallback is set before the
        // guard's layer, which a merged router's default would not be.
        .fallback(|| async { plain_error(StatusCode::NOT_FOUND, "not found") })
        .layer(middleware::from_fn_with_state(app.clone(), guard::guard))
        .merge(metadata_routes(&app))
        .layer(DefaultBodyLimit::max(MAX_BODY));
    axum::serve(listener, router)
        .with_graceful_shutdown(async move {
            shutdown.await;
            tracing::info!("shutting down: closing streams");
            app.close_streams();
        })
        .await
        .context("the HTTP server failed")
}

impl App {
    /// Ends every stream: each holds a sender that lives in a session or a
    /// listen's notifier.
    fn close_streams(&self) {
        self.sessions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
        self.listens
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .abort_all();
    }

    fn session(&self, id: &str) -> Option<Arc<HttpSession>> {
        let sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        let session = sessions.get(id).cloned()?;
        *session.last_used.lock().unwrap_or_else(|e| e.into_inner()) = std::time::Instant::now();
        Some(session)
    }

    /// The session `id`, when `principal` opened it.
    fn session_of(&self, id: &str, principal: &Principal) -> Option<Arc<HttpSession>> {
        self.session(id)
            .filter(|session| session.principal == principal.name)
    }

    fn new_session(&self, principal: &Principal) -> (String, Arc<HttpSession>) {
        let state = SessionState::default();
        let notifier = tokio::spawn(dispatch::notify(
            self.changes.subscribe(),
            state.subs.clone(),
            std::future::pending(),
        ))
        .abort_handle();
        let session = Arc::new(HttpSession {
            state,
            principal: principal.name.clone(),
            notifier,
            last_used: std::sync::Mutex::new(std::time::Instant::now()),
        });
        (uuid::Uuid::new_v4().simple().to_string(), session)
    }

    fn keep_session(&self, id: String, session: Arc<HttpSession>) {
        let mut sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        if sessions.len() >= MAX_SESSIONS {
            let oldest = sessions
                .iter()
                .min_by_key(|(_, s)| *s.last_used.lock().unwrap_or_else(|e| e.into_inner()))
                .map(|(id, _)| id.clone());
            if let Some(oldest) = oldest {
                sessions.remove(&oldest);
            }
        }
        sessions.insert(id, session);
    }
}

fn plain_error(status: StatusCode, message: &str) -> Response {
    (status, Json(json!({ "error": message }))).into_response()
}

/// A read that failed: 503 when the database cannot be reached now (worth
/// asking again; a warning in the log), else 500 (an error in the log).
fn read_failed(e: anyhow::Error) -> Response {
    if crate::store::is_unavailable(&e) {
        tracing::warn!("{e:#}");
        let unavailable = crate::store::Unavailable.to_string();
        return plain_error(StatusCode::SERVICE_UNAVAILABLE, &unavailable);
    }
    tracing::error!("internal error: {e:#}");
    plain_error(StatusCode::INTERNAL_SERVER_ERROR, "internal error")
}

fn json_response(status: StatusCode, line: String) -> Response {
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        line,
    )
        .into_response()
}

fn rpc_error(status: StatusCode, error: RpcError) -> Response {
    json_response(status, dispatch::error_line(&Value::Null, &error))
}

/// A stream of `receiver`'s lines, as long as `lease` holds.
fn sse(receiver: mpsc::Receiver<String>, lease: &Lease) -> Response {
    let stream = lease
        .bound(ReceiverStream::new(receiver))
        .map(|line| Ok::<_, Infallible>(Event::default().event("message").data(line)));
    Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response()
}

/// A `MCP-Protocol-Version` header, when present, must name a version this
/// server speaks: the refusal, if not.
fn version_refusal(headers: &HeaderMap) -> Option<Response> {
    let version = headers.get(VERSION_HEADER)?.to_str().unwrap_or("");
    if version == STATELESS_VERSION || HANDSHAKE_VERSIONS.contains(&version) {
        return None;
    }
    Some(rpc_error(
        StatusCode::BAD_REQUEST,
        RpcError::invalid_request(format!("unsupported MCP-Protocol-Version {version:?}")),
    ))
}

fn session_header(headers: &HeaderMap) -> Option<String> {
    headers
        .get(SESSION_HEADER)
        .and_then(|h| h.to_str().ok())
        .map(str::to_string)
}

fn is_enveloped(message: &Message) -> bool {
    message
        .params()
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get(META_VERSION))
        .is_some()
}

/// What a 2026-07-28 message's headers must say, as its transport requires:
/// the refusal (400, `-32022` or `-32020`), if they do not.
fn stateless_refusal(headers: &HeaderMap, message: &Message) -> Option<Response> {
    let id = match message {
        Message::Request { id, .. } => id.clone(),
        _ => Value::Null,
    };
    let refuse = |error: RpcError| {
        Some(json_response(
            StatusCode::BAD_REQUEST,
            dispatch::error_line(&id, &error),
        ))
    };
    let params = message.params();
    let requested = params
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get(META_VERSION))
        .cloned()
        .unwrap_or(Value::Null);
    if requested.as_str() != Some(STATELESS_VERSION) {
        return refuse(RpcError::unsupported_version(
            &requested,
            &[STATELESS_VERSION],
        ));
    }
    let method = message.method().unwrap_or_default();
    let name = match method {
        "resources/read" => params.and_then(|p| p.get("uri")),
        "tools/call" | "prompts/get" => params.and_then(|p| p.get("name")),
        _ => None,
    };
    let expected = [
        (METHOD_HEADER, "Mcp-Method", Some(method)),
        (
            NAME_HEADER,
            "Mcp-Name",
            name.map(|n| n.as_str().unwrap_or_default()),
        ),
        (
            VERSION_HEADER,
            "MCP-Protocol-Version",
            Some(STATELESS_VERSION),
        ),
    ];
    for (header, shown, body) in expected {
        let Some(body) = body else {
            continue;
        };
        match headers.get(header).map(header_text) {
            None => {
                return refuse(RpcError::header_mismatch(format!(
                    "the {shown} header is missing: it must be {body:?}"
                )));
            }
            Some(Some(value)) if value == body => {}
            Some(value) => {
                return refuse(RpcError::header_mismatch(format!(
                    "the {shown} header {:?} differs from the body's {body:?}",
                    value.unwrap_or_default()
                )));
            }
        }
    }
    None
}

/// A header's text, decoded from `=?base64?…?=` when sent so; `None` when
/// it is neither ASCII text nor valid base64 of UTF-8.
fn header_text(value: &HeaderValue) -> Option<String> {
    let text = value.to_str().ok()?;
    match text
        .strip_prefix("=?base64?")
        .and_then(|t| t.strip_suffix("?="))
    {
        Some(encoded) => {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(encoded)
                .ok()?;
            String::from_utf8(bytes).ok()
        }
        None => Some(text.to_string()),
    }
}

/// The HTTP status of a 2026-07-28 answer with JSON-RPC error `code`, as the
/// official SDKs map them (the handshake era answers errors with 200).
fn stateless_status(code: Option<i32>) -> StatusCode {
    match code {
        Some(-32601) => StatusCode::NOT_FOUND,
        Some(-32700 | -32600 | -32602 | -32020 | -32021 | -32022) => StatusCode::BAD_REQUEST,
        _ => StatusCode::OK,
    }
}

/// The error code of a (small) response line, if it is an error.
fn error_code(line: &str) -> Option<i32> {
    let value: Value = serde_json::from_str(line).ok()?;
    i32::try_from(value.get("error")?.get("code")?.as_i64()?).ok()
}

async fn post_mcp(
    State(app): State<Arc<App>>,
    Extension(principal): Extension<Arc<Principal>>,
    Extension(lease): Extension<Lease>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let message = match dispatch::parse(&body) {
        Ok(message) => message,
        Err(reply) => {
            if let Some(refusal) = version_refusal(&headers) {
                return refusal;
            }
            return json_response(StatusCode::BAD_REQUEST, reply);
        }
    };
    let stateless = is_enveloped(&message);
    let refusal = match stateless {
        true => stateless_refusal(&headers, &message),
        false => version_refusal(&headers),
    };
    if let Some(refusal) = refusal {
        return refusal;
    }
    if let Some(scopes) = auth::lacking(&message, &principal.grants) {
        return app.auth.forbidden(&scopes);
    }
    let status_of = |code: Option<i32>| match stateless {
        true => stateless_status(code),
        false => StatusCode::OK,
    };
    let is_request = matches!(message, Message::Request { .. });
    let initialize = message.method() == Some("initialize");
    // Which session state the message belongs to.
    let (state_owner, new_session) = match session_header(&headers) {
        Some(id) => match app.session_of(&id, &principal) {
            Some(session) => (Owner::Session(session), None),
            None => return plain_error(StatusCode::NOT_FOUND, "unknown session"),
        },
        None if initialize => {
            let (id, session) = app.new_session(&principal);
            (Owner::Session(session.clone()), Some((id, session)))
        }
        None if is_enveloped(&message) || !is_request => {
            (Owner::Stateless(SessionState::default()), None)
        }
        None => {
            let id = match &message {
                Message::Request { id, .. } => id.clone(),
                _ => Value::Null,
            };
            let error = RpcError::invalid_request(
                "missing Mcp-Session-Id: initialize first, or use the 2026-07-28 envelope",
            );
            return json_response(StatusCode::BAD_REQUEST, dispatch::error_line(&id, &error));
        }
    };
    let state = state_owner.state();
    // Subscribe to the feed before a listen is acknowledged, so no commit
    // falls between the acknowledgement and the first notification.
    let changes =
        (message.method() == Some("subscriptions/listen")).then(|| app.changes.subscribe());
    let (sink, stream) = mpsc::channel(STREAM_QUEUE);
    match dispatch::admit(message, &principal, state, &app.ctx, &sink, None).await {
        Step::Done => StatusCode::ACCEPTED.into_response(),
        Step::Reply(line) => json_response(status_of(error_code(&line)), line),
        Step::Initialized(line) => {
            let mut response = json_response(StatusCode::OK, line);
            // Only a successful initialize opens a session.
            if let Some((id, session)) = new_session {
                app.keep_session(id.clone(), session);
                if let Ok(value) = HeaderValue::from_str(&id) {
                    response.headers_mut().insert(SESSION_HEADER, value);
                }
            }
            response
        }
        Step::Run(request) => {
            let (line, code) = dispatch::run_coded(app.ctx.clone(), request).await;
            json_response(status_of(code), line)
        }
        Step::Listening => {
            let Some(changes) = changes else {
                return rpc_error(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    RpcError::internal("Internal error"),
                );
            };
            let subs = state.subs.clone();
            let until = async move { sink.closed().await };
            let mut listens = app.listens.lock().unwrap_or_else(|e| e.into_inner());
            // Forget the listens whose clients went away.
            while listens.try_join_next().is_some() {}
            listens.spawn(dispatch::notify(changes, subs, until));
            sse(stream, &lease)
        }
    }
}

/// The state a POST works on: a session's, or its own.
enum Owner {
    Session(Arc<HttpSession>),
    Stateless(SessionState),
}

impl Owner {
    fn state(&self) -> &SessionState {
        match self {
            Owner::Session(session) => &session.state,
            Owner::Stateless(state) => state,
        }
    }
}

/// GET `/mcp`: the notification stream of a handshake-era session.
async fn get_mcp(
    State(app): State<Arc<App>>,
    Extension(principal): Extension<Arc<Principal>>,
    Extension(lease): Extension<Lease>,
    headers: HeaderMap,
) -> Response {
    if let Some(refusal) = version_refusal(&headers) {
        return refusal;
    }
    let Some(id) = session_header(&headers) else {
        let mut response = plain_error(
            StatusCode::METHOD_NOT_ALLOWED,
            "GET needs an Mcp-Session-Id; 2026-07-28 clients use subscriptions/listen",
        );
        response
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("POST, DELETE"));
        return response;
    };
    let Some(session) = app.session_of(&id, &principal) else {
        return plain_error(StatusCode::NOT_FOUND, "unknown session");
    };
    let (sink, stream) = mpsc::channel(STREAM_QUEUE);
    session.state.subs.lock().await.set_handshake_sink(sink);
    sse(stream, &lease)
}

/// DELETE `/mcp`: the client ends its session.
async fn delete_mcp(
    State(app): State<Arc<App>>,
    Extension(principal): Extension<Arc<Principal>>,
    headers: HeaderMap,
) -> Response {
    let Some(id) = session_header(&headers) else {
        return plain_error(StatusCode::BAD_REQUEST, "missing Mcp-Session-Id");
    };
    let removed = {
        let mut sessions = app.sessions.lock().unwrap_or_else(|e| e.into_inner());
        match sessions.get(&id) {
            Some(session) if session.principal == principal.name => sessions.remove(&id),
            _ => None,
        }
    };
    match removed {
        Some(_) => StatusCode::NO_CONTENT.into_response(),
        None => plain_error(StatusCode::NOT_FOUND, "unknown session"),
    }
}

/// GET `/search?q=…&under=…&where=KEY=VALUE&limit=…&cursor=…`: a page of a
/// search, as the search tool's `structuredContent`. `where` may repeat.
async fn get_search(
    State(app): State<Arc<App>>,
    Extension(principal): Extension<Arc<Principal>>,
    headers: HeaderMap,
    Query(pairs): Query<Vec<(String, String)>>,
) -> Response {
    // A browser asks for the viewer's page; scripts get JSON.
    if viewer::wants_html(&headers)
        && let Some(store) = app.ctx.store()
    {
        return viewer::search_page(store, principal, pairs).await;
    }
    let parsed = (|| -> Result<(Search, usize, Option<String>), String> {
        let (mut query, mut under, mut filters) = (String::new(), None, Vec::new());
        let (mut limit, mut cursor) = (search::DEFAULT_LIMIT, None);
        for (name, value) in pairs {
            match name.as_str() {
                "q" => query = value,
                "under" if value.is_empty() => {}
                "under" => under = Some(Under::parse(&value).map_err(|e| e.to_string())?),
                "where" => filters.push(Filter::parse(&value).map_err(|e| e.to_string())?),
                "limit" => {
                    limit = value
                        .parse::<i64>()
                        .map_err(|_| SearchError::Limit(value.clone()))
                        .and_then(search::limit)
                        .map_err(|e| e.to_string())?;
                }
                "cursor" if value.is_empty() => {}
                "cursor" => cursor = Some(value),
                other => {
                    return Err(format!(
                        "unknown parameter {other:?}: /search takes q, under, where, limit and cursor"
                    ));
                }
            }
        }
        let search = Search::new(query, under, filters).map_err(|e| e.to_string())?;
        Ok((search, limit, cursor))
    })();
    let (search, limit, cursor) = match parsed {
        Ok(parsed) => parsed,
        Err(message) => return plain_error(StatusCode::BAD_REQUEST, &message),
    };
    let ctx = app.ctx.clone();
    let answered = crate::reads::run(move || {
        tools::run(
            &Caller::new(&ctx, &principal.grants),
            &search,
            limit,
            cursor.as_deref(),
        )
        .map(|page| page.map(|page| tools::structured(&page, &search.fingerprint())))
    })
    .await;
    match answered {
        Ok(Ok(Ok(value))) => Json(value).into_response(),
        Ok(Ok(Err(e))) => plain_error(StatusCode::BAD_REQUEST, &e.to_string()),
        Ok(Err(e)) => read_failed(e),
        Err(e) => {
            tracing::error!("handler failed: {e}");
            plain_error(StatusCode::INTERNAL_SERVER_ERROR, "internal error")
        }
    }
}

/// GET `/resource?uri=…`: one document as plain JSON, for viewers and scripts.
async fn get_resource(
    State(app): State<Arc<App>>,
    Extension(principal): Extension<Arc<Principal>>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let Some(uri_text) = query.get("uri").cloned() else {
        return plain_error(StatusCode::BAD_REQUEST, "missing query parameter uri");
    };
    let key: DocKey = match uri::parse(&uri_text) {
        Ok(key) => key,
        Err(e) => return plain_error(StatusCode::BAD_REQUEST, &format!("invalid uri: {e}")),
    };
    let ctx = app.ctx.clone();
    let fetched = crate::reads::run(move || match Caller::new(&ctx, &principal.grants).store() {
        Some(store) => store.reader()?.get(&key, handlers::MAX_READ_BYTES),
        None => Ok(None),
    })
    .await;
    let doc = match fetched {
        Ok(Ok(Some(Fetched::Document(doc)))) => doc,
        Ok(Ok(None)) => {
            return (
                StatusCode::NOT_FOUND,
                Json(json!({ "error": "not found", "uri": uri_text })),
            )
                .into_response();
        }
        Ok(Ok(Some(Fetched::TooLarge { size }))) => {
            return plain_error(
                StatusCode::PAYLOAD_TOO_LARGE,
                &format!("the document is {size} bytes, more than a response may carry"),
            );
        }
        Ok(Err(e)) => return read_failed(e),
        Err(e) => {
            tracing::error!("handler failed: {e}");
            return plain_error(StatusCode::INTERNAL_SERVER_ERROR, "internal error");
        }
    };
    let frontmatter = doc
        .frontmatter
        .as_deref()
        .and_then(|f| serde_json::from_str::<Value>(f).ok())
        .unwrap_or(Value::Null);
    let mut body = json!({
        "uri": uri::format(&doc.key),
        "mimeType": MIME_TYPE,
        "title": doc.title,
        "frontmatter": frontmatter,
    });
    match (doc.is_text, String::from_utf8(doc.body)) {
        (true, Ok(text)) => body["text"] = Value::from(text),
        (_, Ok(text)) => {
            body["blob"] = Value::from(base64::engine::general_purpose::STANDARD.encode(text))
        }
        (_, Err(e)) => {
            body["blob"] =
                Value::from(base64::engine::general_purpose::STANDARD.encode(e.as_bytes()))
        }
    }
    Json(body).into_response()
}
