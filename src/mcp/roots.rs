//! Client roots (handshake era): asking a client that offers `roots` where it works, and serving the first of its folders that holds a project, imported and watched.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

use super::StoreSlot;
use crate::store::{Location, Store};
use crate::write::Writer;
use crate::{import, watch};

/// How long the server waits for a client's `roots/list` answer.
const ANSWER_WAIT: Duration = Duration::from_secs(10);

/// A session's roots: whether it may ask, what it asked, what it chose.
#[derive(Default)]
pub struct Roots {
    /// The server started with nothing to serve: the client's roots decide.
    wanted: bool,
    /// The client declared the `roots` capability in `initialize`.
    offered: bool,
    asked: u64,
    pending: HashMap<String, oneshot::Sender<Option<Value>>>,
    /// The project folder served now, if one was chosen.
    chosen: Arc<Mutex<Option<PathBuf>>>,
}

impl Roots {
    pub fn new(wanted: bool) -> Roots {
        Roots {
            wanted,
            ..Roots::default()
        }
    }

    /// Notes what `initialize` says of the client.
    pub fn initialize(&mut self, params: Option<&Value>) {
        self.offered = params
            .and_then(|p| p.get("capabilities"))
            .and_then(|c| c.get("roots"))
            .is_some_and(Value::is_object);
    }

    /// Whether a notification calls for asking the client's roots.
    pub fn asks_after(&self, method: &str) -> bool {
        self.wanted
            && self.offered
            && matches!(
                method,
                "notifications/initialized" | "notifications/roots/list_changed"
            )
    }

    /// Hands a response to the request it answers; false when it answers none.
    pub fn answer(&mut self, id: &Value, result: Option<Value>) -> bool {
        match id.as_str().and_then(|id| self.pending.remove(id)) {
            Some(waiting) => {
                let _ = waiting.send(result);
                true
            }
            None => false,
        }
    }

    /// Sends `roots/list` to the client, and returns the task that waits for
    /// its answer and switches the served project when it names another.
    pub fn ask(
        &mut self,
        out: mpsc::Sender<String>,
        slot: StoreSlot,
    ) -> impl Future<Output = ()> + Send + 'static {
        self.asked += 1;
        let id = format!("orchestra-roots-{}", self.asked);
        let (answered, answer) = oneshot::channel();
        self.pending.insert(id.clone(), answered);
        let chosen = self.chosen.clone();
        async move {
            let request = json!({"jsonrpc": "2.0", "id": id, "method": "roots/list"});
            if out.send(request.to_string()).await.is_err() {
                return;
            }
            let result = match tokio::time::timeout(ANSWER_WAIT, answer).await {
                Ok(Ok(Some(result))) => result,
                Ok(Ok(None)) => {
                    tracing::warn!(
                        "the client answered roots/list with an error: serving as before"
                    );
                    return;
                }
                _ => {
                    tracing::warn!(
                        "no answer to roots/list within {ANSWER_WAIT:?}: serving as before"
                    );
                    return;
                }
            };
            let current = chosen.lock().unwrap_or_else(|e| e.into_inner()).clone();
            let writes = slot.writes_later();
            let picked = tokio::task::spawn_blocking(move || {
                let (root, store) = pick(&result, current.as_deref())?;
                let writer = match writes {
                    true => Writer::new(&root, store.clone(), import::DEFAULT_MAX_FILE_SIZE)
                        .inspect_err(|e| {
                            tracing::warn!("the root {} is served read-only: {e:#}", root.display())
                        })
                        .ok(),
                    false => None,
                };
                Some((root, store, writer))
            })
            .await;
            let Ok(Some((root, store, writer))) = picked else {
                return;
            };
            eprintln!(
                "orchestra: serving the project {} (a root of the client)",
                root.display()
            );
            *chosen.lock().unwrap_or_else(|e| e.into_inner()) = Some(root);
            slot.set(store, writer);
            let changed =
                json!({"jsonrpc": "2.0", "method": "notifications/resources/list_changed"});
            let _ = out.send(changed.to_string()).await;
        }
    }
}

/// The folder of a `file://` URI (no host, or `localhost`), percent-decoded.
fn folder_of(uri: &str) -> Option<PathBuf> {
    let rest = uri.strip_prefix("file://")?;
    let path = rest.strip_prefix("localhost").unwrap_or(rest);
    if !path.starts_with('/') {
        return None;
    }
    let decoded = percent_encoding::percent_decode_str(path)
        .decode_utf8()
        .ok()?;
    Some(PathBuf::from(decoded.as_ref()))
}

/// The first root that holds a project, imported into its own
/// `.orchestra/orchestra.db` and watched; `None` when none does, or when it
/// is the one served already. Blocking.
fn pick(result: &Value, current: Option<&Path>) -> Option<(PathBuf, Store)> {
    let roots = result.get("roots").and_then(Value::as_array)?;
    for root in roots {
        let uri = root.get("uri").and_then(Value::as_str).unwrap_or_default();
        let Some(folder) = folder_of(uri) else {
            tracing::info!("root {uri:?} skipped: not a file:// folder");
            continue;
        };
        if !folder.is_dir() || std::fs::read_dir(&folder).is_err() {
            tracing::info!("root {uri:?} skipped: not a readable folder");
            continue;
        }
        if !import::is_project(&folder) {
            tracing::info!("root {uri:?} skipped: no features/, notes/ or docs/");
            continue;
        }
        let folder = folder.canonicalize().unwrap_or(folder);
        if current == Some(folder.as_path()) {
            return None;
        }
        let db = import::data_folder::default_db(&folder);
        let opts = watch::import_options(folder.clone(), Location::File(db.clone()));
        let opened = import::run(&opts)
            .and_then(|report| {
                tracing::info!("{}", report.summary(&folder));
                Store::open_existing(&db)
            })
            .and_then(|store| watch::spawn(opts).map(|()| store));
        match opened {
            Ok(store) => return Some((folder, store)),
            Err(e) => tracing::warn!("root {uri:?} skipped: {e:#}"),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_uris_name_folders() {
        let check = |uri: &str, folder: Option<&str>| {
            assert_eq!(folder_of(uri), folder.map(PathBuf::from), "{uri}");
        };
        check("file:///home/a/project", Some("/home/a/project"));
        check("file://localhost/srv/x", Some("/srv/x"));
        check("file:///caf%C3%A9%20notes", Some("/café notes"));
        check("file://server/share", None);
        check("https://example.com/", None);
        check("file:relative", None);
    }
}
