//! Subscriptions of one session, in both eras, and the notifications a batch of changes becomes for them.
//!
//! Handshake era: `resources/subscribe` / `unsubscribe`, and `list_changed`
//! for every initialized session. 2026-07-28: each `subscriptions/listen`
//! request is a stream of its own, tagged with its request id, carrying only
//! what it asked for, until `notifications/cancelled` ends it.
//!
//! Notifications are coalesced per batch (one commit, or several when the
//! server fell behind): one `updated` per subscribed URI, one `list_changed`.

use std::collections::{HashMap, HashSet};

use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::error::RpcError;
use crate::access::Areas;
use crate::doc::{ChangeKind, DocKey};
use crate::store::ChangeBatch;
use crate::uri;

/// Subscribed URIs per session, over all listens: bounds memory whatever a
/// client asks for.
pub const MAX_SUBSCRIPTIONS: usize = 100_000;

const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// URIs by key, as the client spelled them: notifications use the client's
/// spelling so it can match them to what it asked for.
type Uris = HashMap<DocKey, String>;

/// Where a session's notifications go: stdout on stdio; on HTTP, the
/// session's GET stream (handshake era) or the listen's own response stream.
pub type Sink = mpsc::Sender<String>;

struct Listen {
    id: Value,
    uris: Uris,
    list_changed: bool,
    sink: Sink,
}

/// Which stream a notification belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Handshake,
    Listen(usize),
}

#[derive(Default)]
pub struct Subscriptions {
    /// Handshake era: the session is initialized, so list changes go to it.
    handshake: bool,
    /// Where handshake-era notifications go, when anywhere.
    handshake_sink: Option<Sink>,
    resources: Uris,
    listens: Vec<Listen>,
    /// The documents the session's caller may read (`None`: all): changes
    /// to others notify nothing, as if they were not there.
    visible: Option<Areas>,
}

impl Subscriptions {
    /// What the caller of the session's last request may read: its
    /// notifications follow it (a token's scopes may grow by a step-up).
    pub fn set_visible(&mut self, visible: Option<Areas>) {
        self.visible = visible;
    }

    fn sees(&self, key: &DocKey) -> bool {
        self.visible
            .as_ref()
            .is_none_or(|areas| areas.contains(key))
    }

    fn count(&self) -> usize {
        self.resources.len() + self.listens.iter().map(|l| l.uris.len()).sum::<usize>()
    }

    /// The session completed `initialize`: list changes go to it from now
    /// on, to `sink` (or, on HTTP, to the GET stream once one is open).
    pub fn start_handshake(&mut self, sink: Option<Sink>) {
        self.handshake = true;
        self.handshake_sink = sink;
    }

    /// HTTP: the client opened the session's GET stream.
    pub fn set_handshake_sink(&mut self, sink: Sink) {
        self.handshake_sink = Some(sink);
    }

    /// `resources/subscribe`. A document that does not exist yet may be
    /// subscribed to: its creation is an update.
    pub fn subscribe(&mut self, params: Option<&Value>) -> Result<(), RpcError> {
        let uri_text = uri_param(params)?;
        let key = uri::parse(uri_text)?;
        if !self.resources.contains_key(&key) && self.count() >= MAX_SUBSCRIPTIONS {
            return Err(too_many());
        }
        self.resources.insert(key, uri_text.to_string());
        Ok(())
    }

    /// `resources/unsubscribe`; unsubscribing what was not subscribed is not an error.
    pub fn unsubscribe(&mut self, params: Option<&Value>) -> Result<(), RpcError> {
        let key = uri::parse(uri_param(params)?)?;
        self.resources.remove(&key);
        Ok(())
    }

    /// `subscriptions/listen`: registers the stream and sends its
    /// acknowledgement to `sink`; the caller holds this session's lock, so
    /// it reaches the client before any of the listen's notifications. URIs
    /// that cannot name a document are not honoured and left out of the
    /// acknowledgement.
    pub async fn listen(
        &mut self,
        id: &Value,
        params: Option<&Value>,
        sink: Sink,
    ) -> Result<(), RpcError> {
        let ack = self.register(id, params, sink.clone())?;
        let _ = sink.send(ack).await;
        Ok(())
    }

    fn register(
        &mut self,
        id: &Value,
        params: Option<&Value>,
        sink: Sink,
    ) -> Result<String, RpcError> {
        let asked = params.and_then(|p| p.get("notifications")).ok_or_else(|| {
            RpcError::invalid_params("subscriptions/listen needs params.notifications")
        })?;
        if !asked.is_object() {
            return Err(RpcError::invalid_params(
                "params.notifications must be an object",
            ));
        }
        let list_changed = match asked.get("resourcesListChanged") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => {
                return Err(RpcError::invalid_params(
                    "resourcesListChanged must be a boolean",
                ));
            }
        };
        let mut uris = Uris::new();
        match asked.get("resourceSubscriptions") {
            None | Some(Value::Null) => {}
            Some(Value::Array(items)) => {
                for item in items {
                    let Some(text) = item.as_str() else {
                        return Err(RpcError::invalid_params(
                            "resourceSubscriptions must hold URI strings",
                        ));
                    };
                    if let Ok(key) = uri::parse(text) {
                        uris.insert(key, text.to_string());
                    }
                }
            }
            Some(_) => {
                return Err(RpcError::invalid_params(
                    "resourceSubscriptions must be an array",
                ));
            }
        }
        if self.count() + uris.len() > MAX_SUBSCRIPTIONS {
            return Err(too_many());
        }
        if self.listens.iter().any(|l| &l.id == id) {
            return Err(RpcError::invalid_request(
                "a listen with this id is already open",
            ));
        }
        let mut honoured = serde_json::Map::new();
        if asked
            .get("resourceSubscriptions")
            .is_some_and(Value::is_array)
        {
            let mut listed: Vec<&String> = uris.values().collect();
            listed.sort();
            honoured.insert("resourceSubscriptions".into(), json!(listed));
        }
        if list_changed {
            honoured.insert("resourcesListChanged".into(), Value::Bool(true));
        }
        let ack = notification(
            "notifications/subscriptions/acknowledged",
            json!({ "_meta": { SUBSCRIPTION_ID: id }, "notifications": honoured }),
        );
        self.listens.push(Listen {
            id: id.clone(),
            uris,
            list_changed,
            sink,
        });
        Ok(ack)
    }

    /// `notifications/cancelled` for a listen ends it. Returns whether it was one.
    pub fn cancel(&mut self, request_id: &Value) -> bool {
        let before = self.listens.len();
        self.listens.retain(|l| &l.id != request_id);
        self.listens.len() != before
    }

    /// This session's notifications for `batch`, each with the stream it
    /// goes to; listens whose stream is gone are dropped first. The caller
    /// sends them after releasing the session's lock, so a client that stops
    /// reading cannot block its own session's requests.
    pub fn prepare(&mut self, batch: &ChangeBatch) -> Vec<(Sink, String)> {
        self.listens.retain(|l| !l.sink.is_closed());
        self.notifications(batch)
            .into_iter()
            .filter_map(|(target, line)| {
                let sink = match target {
                    Target::Handshake => self.handshake_sink.as_ref()?,
                    Target::Listen(i) => &self.listens[i].sink,
                };
                Some((sink.clone(), line))
            })
            .collect()
    }

    fn everything(&self, batch: &ChangeBatch) -> Everything<'_> {
        batch.truncated.then_some(&self.visible)
    }

    /// The notification lines `batch` makes for this session, coalesced,
    /// each with the stream it belongs to.
    pub fn notifications(&self, batch: &ChangeBatch) -> Vec<(Target, String)> {
        let mut changed: HashSet<&DocKey> = HashSet::with_capacity(batch.changes.len());
        let mut list_changed = batch.truncated;
        for (kind, key) in batch.changes.iter().filter(|(_, key)| self.sees(key)) {
            changed.insert(key);
            list_changed |= *kind != ChangeKind::Updated;
        }
        let mut lines = Vec::new();
        if self.handshake && self.handshake_sink.is_some() {
            for line in updated(&self.resources, &changed, self.everything(batch), None) {
                lines.push((Target::Handshake, line));
            }
            if list_changed {
                let line = notification("notifications/resources/list_changed", Value::Null);
                lines.push((Target::Handshake, line));
            }
        }
        for (i, listen) in self.listens.iter().enumerate() {
            for line in updated(
                &listen.uris,
                &changed,
                self.everything(batch),
                Some(&listen.id),
            ) {
                lines.push((Target::Listen(i), line));
            }
            if list_changed && listen.list_changed {
                let line = notification(
                    "notifications/resources/list_changed",
                    json!({ "_meta": { SUBSCRIPTION_ID: listen.id } }),
                );
                lines.push((Target::Listen(i), line));
            }
        }
        lines
    }
}

/// Whether a batch may have changed anything: it was truncated (a reader
/// too far behind). Then every subscribed document the caller sees counts
/// as changed.
type Everything<'a> = Option<&'a Option<Areas>>;

/// One `updated` line per subscribed URI that changed (every visible one
/// when `everything`), walking whichever set is smaller.
fn updated(
    subscribed: &Uris,
    changed: &HashSet<&DocKey>,
    everything: Everything,
    listen: Option<&Value>,
) -> Vec<String> {
    let mut hits: Vec<&String> = if let Some(visible) = everything {
        subscribed
            .iter()
            .filter(|(key, _)| visible.as_ref().is_none_or(|areas| areas.contains(key)))
            .map(|(_, uri)| uri)
            .collect()
    } else if subscribed.len() <= changed.len() {
        subscribed
            .iter()
            .filter(|(key, _)| changed.contains(key))
            .map(|(_, uri)| uri)
            .collect()
    } else {
        changed
            .iter()
            .filter_map(|key| subscribed.get(*key))
            .collect()
    };
    hits.sort();
    hits.into_iter()
        .map(|uri| {
            let params = match listen {
                Some(id) => json!({ "_meta": { SUBSCRIPTION_ID: id }, "uri": uri }),
                None => json!({ "uri": uri }),
            };
            notification("notifications/resources/updated", params)
        })
        .collect()
}

fn notification(method: &str, params: Value) -> String {
    let message = if params.is_null() {
        json!({ "jsonrpc": "2.0", "method": method })
    } else {
        json!({ "jsonrpc": "2.0", "method": method, "params": params })
    };
    message.to_string()
}

fn uri_param(params: Option<&Value>) -> Result<&str, RpcError> {
    params
        .and_then(|p| p.get("uri"))
        .and_then(Value::as_str)
        .ok_or_else(|| RpcError::invalid_params("invalid params: missing field `uri`"))
}

fn too_many() -> RpcError {
    RpcError::invalid_params(format!(
        "too many subscriptions: at most {MAX_SUBSCRIPTIONS} per session"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::Prefix;

    fn batch(changes: &[(ChangeKind, &str)], truncated: bool) -> ChangeBatch {
        ChangeBatch {
            seq: 1,
            changes: changes
                .iter()
                .map(|(kind, id)| (*kind, DocKey::new(Prefix::Features, *id)))
                .collect(),
            truncated,
        }
    }

    fn methods_and_uris(lines: &[(Target, String)]) -> Vec<String> {
        lines
            .iter()
            .map(|(_, l)| {
                let v: Value = serde_json::from_str(l).unwrap();
                let tag = v["params"]["_meta"][SUBSCRIPTION_ID]
                    .as_str()
                    .map(|s| format!(" [{s}]"))
                    .unwrap_or_default();
                match v["params"]["uri"].as_str() {
                    Some(uri) => format!("updated {uri}{tag}"),
                    None => format!("list_changed{tag}"),
                }
            })
            .collect()
    }

    #[test]
    fn handshake_updates_are_coalesced_and_filtered() {
        let mut subs = Subscriptions::default();
        let (sink, _rx) = mpsc::channel(16);
        subs.start_handshake(Some(sink));
        for id in ["A", "B"] {
            subs.subscribe(Some(&json!({"uri": format!("orchestra://features/{id}")})))
                .unwrap();
        }
        let lines = subs.notifications(&batch(
            &[
                (ChangeKind::Updated, "A"),
                (ChangeKind::Updated, "A"),
                (ChangeKind::Updated, "C"),
            ],
            false,
        ));
        assert_eq!(methods_and_uris(&lines), ["updated orchestra://features/A"]);
        let lines = subs.notifications(&batch(
            &[(ChangeKind::Removed, "B"), (ChangeKind::New, "D")],
            false,
        ));
        assert_eq!(
            methods_and_uris(&lines),
            ["updated orchestra://features/B", "list_changed"]
        );
        subs.unsubscribe(Some(&json!({"uri": "orchestra://features/A"})))
            .unwrap();
        let lines = subs.notifications(&batch(&[], true));
        assert_eq!(
            methods_and_uris(&lines),
            ["updated orchestra://features/B", "list_changed"]
        );
    }

    #[test]
    fn listens_get_only_what_they_asked_for() {
        let mut subs = Subscriptions::default();
        let (sink, _rx) = mpsc::channel(16);
        let ack = subs
            .register(
                &json!("l1"),
                Some(&json!({"notifications": {"resourceSubscriptions": [
                    "orchestra://features/A", "not a uri"]}})),
                sink.clone(),
            )
            .unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&ack).unwrap(),
            json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                   "params": {"_meta": {SUBSCRIPTION_ID: "l1"},
                              "notifications": {"resourceSubscriptions": ["orchestra://features/A"]}}})
        );
        subs.register(
            &json!(7),
            Some(&json!({"notifications": {"resourcesListChanged": true}})),
            sink,
        )
        .unwrap();
        let lines = subs.notifications(&batch(
            &[(ChangeKind::Updated, "A"), (ChangeKind::New, "B")],
            false,
        ));
        assert_eq!(
            methods_and_uris(&lines),
            ["updated orchestra://features/A [l1]", "list_changed"]
        );
        assert_eq!(lines[1].0, Target::Listen(1));
        let v: Value = serde_json::from_str(&lines[1].1).unwrap();
        assert_eq!(v["params"]["_meta"][SUBSCRIPTION_ID], 7);
        assert!(subs.cancel(&json!("l1")));
        assert!(!subs.cancel(&json!("l1")));
        let lines = subs.notifications(&batch(&[(ChangeKind::Updated, "A")], false));
        assert!(lines.is_empty(), "{lines:?}");
    }

    #[test]
    fn subscriptions_are_bounded() {
        let mut subs = Subscriptions::default();
        let (sink, _rx) = mpsc::channel(16);
        let uris: Vec<String> = (0..MAX_SUBSCRIPTIONS)
            .map(|i| format!("orchestra://notes/n{i}"))
            .collect();
        subs.register(
            &json!(1),
            Some(&json!({"notifications": {"resourceSubscriptions": uris}})),
            sink,
        )
        .unwrap();
        let err = subs
            .subscribe(Some(&json!({"uri": "orchestra://notes/one-more"})))
            .unwrap_err();
        assert_eq!(err.code(), -32602);
        // A 100k change against 100k subscriptions: one line each, no more.
        let changes: Vec<(ChangeKind, DocKey)> = (0..MAX_SUBSCRIPTIONS)
            .map(|i| {
                (
                    ChangeKind::Updated,
                    DocKey::new(Prefix::Notes, format!("n{i}")),
                )
            })
            .collect();
        let lines = subs.notifications(&ChangeBatch {
            seq: 2,
            changes,
            truncated: false,
        });
        assert_eq!(lines.len(), MAX_SUBSCRIPTIONS);
    }
}
