//! Transport-independent message handling: parse a JSON-RPC message, admit it by era and session state, answer it or run its handler off the async threads.
//!
//! stdio and HTTP both go through here, so the two transports answer every
//! message alike; they differ only in where the answers travel.

use std::future::Future;
use std::sync::Arc;

use serde_json::Value;
use tokio::sync::{Mutex, broadcast};

use super::error::RpcError;
use super::session::{Admitted, Era, Session};
use super::subscriptions::{Sink, Subscriptions};
use super::{Caller, Context, handlers};
use crate::access::Principal;
use crate::store::ChangeBatch;

/// A well-formed JSON-RPC message.
#[derive(Debug)]
pub enum Message {
    Request {
        id: Value,
        method: String,
        params: Option<Value>,
    },
    Notification {
        method: String,
        params: Option<Value>,
    },
    /// A response to a request of the server's (`roots/list`), or a
    /// malformed notification (`id` null, `result` none): nothing answers it.
    Response { id: Value, result: Option<Value> },
}

impl Message {
    pub fn method(&self) -> Option<&str> {
        match self {
            Message::Request { method, .. } | Message::Notification { method, .. } => Some(method),
            Message::Response { .. } => None,
        }
    }

    pub fn params(&self) -> Option<&Value> {
        match self {
            Message::Request { params, .. } | Message::Notification { params, .. } => {
                params.as_ref()
            }
            Message::Response { .. } => None,
        }
    }
}

/// Parses one message. The error is the response to send: `-32700` for
/// what is not JSON, `-32600` for batches and malformed messages.
pub fn parse(bytes: &[u8]) -> Result<Message, String> {
    let message: Value = serde_json::from_slice(bytes).map_err(|e| {
        error_line(
            &Value::Null,
            &RpcError::parse_error(format!("Parse error: {e}")),
        )
    })?;
    let mut message = match message {
        Value::Object(map) => map,
        Value::Array(_) => {
            return Err(error_line(
                &Value::Null,
                &RpcError::invalid_request("batches are not supported"),
            ));
        }
        _ => {
            return Err(error_line(
                &Value::Null,
                &RpcError::invalid_request("a message must be a JSON object"),
            ));
        }
    };
    let id = message.remove("id");
    let valid_id = match &id {
        None | Some(Value::String(_)) => true,
        Some(Value::Number(n)) => n.is_i64() || n.is_u64(),
        Some(_) => false,
    };
    let reply_id = match (&id, valid_id) {
        (Some(id), true) => id.clone(),
        _ => Value::Null,
    };
    let invalid = |why: &str| Err(error_line(&reply_id, &RpcError::invalid_request(why)));
    if message.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return invalid("jsonrpc must be \"2.0\"");
    }
    if !valid_id {
        return invalid("id must be a string or an integer");
    }
    let method = match message.remove("method") {
        Some(Value::String(method)) => method,
        Some(_) => return invalid("method must be a string"),
        None if id.is_some()
            && (message.contains_key("result") || message.contains_key("error")) =>
        {
            return Ok(Message::Response {
                id: reply_id,
                result: message.remove("result"),
            });
        }
        None => return invalid("not a request, notification or response"),
    };
    let params = message.remove("params");
    if params.as_ref().is_some_and(|p| !p.is_object()) {
        return match id {
            Some(id) => Err(error_line(
                &id,
                &RpcError::invalid_params("params must be an object"),
            )),
            // A malformed notification gets no answer.
            None => Ok(Message::Response {
                id: Value::Null,
                result: None,
            }),
        };
    }
    Ok(match id {
        Some(id) => Message::Request { id, method, params },
        None => Message::Notification { method, params },
    })
}

/// A request to run on a handler.
#[derive(Debug)]
pub struct Request {
    pub id: Value,
    pub era: Era,
    /// The protocol version the answer is shaped for.
    pub version: &'static str,
    pub method: String,
    pub params: Option<Value>,
    /// Who asks: the handler answers with what they may see.
    pub principal: Arc<Principal>,
}

/// What a transport must do with an admitted message.
#[derive(Debug)]
pub enum Step {
    /// Nothing to send (a notification, a response).
    Done,
    /// Answered already: send this response.
    Reply(String),
    /// `initialize` succeeded: send this response; the session now exists.
    Initialized(String),
    /// Run the handler, then send its response.
    Run(Request),
    /// A `subscriptions/listen` is open: its acknowledgement went to the
    /// sink; its notifications follow there until it is cancelled.
    Listening,
}

/// One session's state: its era and its subscriptions.
#[derive(Default)]
pub struct SessionState {
    pub session: Mutex<Session>,
    pub subs: Arc<Mutex<Subscriptions>>,
}

/// Admits one message of `principal`'s, in arrival order. `sink` receives
/// a listen's acknowledgement and notifications; `handshake_sink` is where
/// an `initialize`d session's notifications go, if it is already known.
pub async fn admit(
    message: Message,
    principal: &Arc<Principal>,
    state: &SessionState,
    ctx: &Context,
    sink: &Sink,
    handshake_sink: Option<Sink>,
) -> Step {
    let (id, method, params) = match message {
        Message::Response { .. } => return Step::Done,
        Message::Notification { method, params } => {
            tracing::debug!("notification {method}");
            if method == "notifications/cancelled"
                && let Some(request) = params.as_ref().and_then(|p| p.get("requestId"))
            {
                state.subs.lock().await.cancel(request);
            }
            return Step::Done;
        }
        Message::Request { id, method, params } => (id, method, params),
    };
    let (admitted, version) = {
        let mut session = state.session.lock().await;
        let admitted = session.admit(&method, params.as_ref());
        let version = match &admitted {
            Ok(Admitted::Request(era)) => session.version(*era),
            _ => "",
        };
        (admitted, version)
    };
    let era = match admitted {
        Err(error) => return Step::Reply(error_line(&id, &error)),
        Ok(Admitted::Initialize { version }) => {
            let mut subs = state.subs.lock().await;
            subs.set_visible(principal.grants.read_filter());
            subs.start_handshake(handshake_sink);
            return Step::Initialized(result_line(&id, &ctx.initialize_json(version)));
        }
        Ok(Admitted::Request(era)) => era,
    };
    // Subscriptions change session state: handled here, in arrival order.
    let subscribed = match (era, method.as_str()) {
        (Era::Handshake, "resources/subscribe") => {
            let mut subs = state.subs.lock().await;
            subs.set_visible(principal.grants.read_filter());
            subs.subscribe(params.as_ref())
        }
        (Era::Handshake, "resources/unsubscribe") => {
            state.subs.lock().await.unsubscribe(params.as_ref())
        }
        (Era::Stateless, "subscriptions/listen") => {
            // The request stays open until the client cancels it.
            let mut subs = state.subs.lock().await;
            subs.set_visible(principal.grants.read_filter());
            return match subs.listen(&id, params.as_ref(), sink.clone()).await {
                Ok(()) => Step::Listening,
                Err(error) => Step::Reply(error_line(&id, &error)),
            };
        }
        _ => {
            return Step::Run(Request {
                id,
                era,
                version,
                method,
                params,
                principal: principal.clone(),
            });
        }
    };
    Step::Reply(match subscribed {
        Ok(()) => result_line(&id, "{}"),
        Err(error) => error_line(&id, &error),
    })
}

/// Runs a request's handler on a blocking thread (every handler reads
/// SQLite) and returns the response. A panic becomes `-32603`.
pub async fn run(ctx: Arc<Context>, request: Request) -> String {
    run_coded(ctx, request).await.0
}

/// [`run`], and the JSON-RPC error code when the response is an error (the
/// HTTP transport maps some to statuses).
pub async fn run_coded(ctx: Arc<Context>, request: Request) -> (String, Option<i32>) {
    let Request {
        id,
        era,
        version,
        method,
        params,
        principal,
    } = request;
    let handled = {
        let ctx = ctx.clone();
        crate::reads::run(move || {
            let caller = Caller::new(&ctx, &principal.grants);
            handlers::handle(&caller, era, version, &method, params)
        })
        .await
    };
    match handled {
        Ok(Ok(handled)) => (result_line(&id, &ctx.finish(era, handled)), None),
        Ok(Err(error)) => (error_line(&id, &error), Some(error.code())),
        Err(panic) => {
            tracing::error!("handler failed: {panic}");
            let error = RpcError::internal("Internal error");
            (error_line(&id, &error), Some(error.code()))
        }
    }
}

/// Turns each published batch of changes into one session's notifications,
/// until the feed closes or `until` completes.
pub async fn notify(
    mut changes: broadcast::Receiver<Arc<ChangeBatch>>,
    subs: Arc<Mutex<Subscriptions>>,
    until: impl Future<Output = ()>,
) {
    tokio::pin!(until);
    loop {
        let received = tokio::select! {
            _ = &mut until => return,
            received = changes.recv() => received,
        };
        let batch = match received {
            Ok(batch) => batch,
            // Too far behind to know what changed: say that anything may have.
            Err(broadcast::error::RecvError::Lagged(_)) => Arc::new(ChangeBatch {
                truncated: true,
                ..ChangeBatch::default()
            }),
            Err(broadcast::error::RecvError::Closed) => return,
        };
        let outgoing = subs.lock().await.prepare(&batch);
        for (sink, line) in outgoing {
            // A closed stream (the client went away) is pruned next time.
            let _ = sink.send(line).await;
        }
    }
}

pub fn result_line(id: &Value, result: &str) -> String {
    format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{result}}}")
}

pub fn error_line(id: &Value, error: &RpcError) -> String {
    let error = serde_json::to_string(&error.0).unwrap_or_default();
    format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"error\":{error}}}")
}
