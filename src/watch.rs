//! `serve --watch DIR`: watches the project folder and runs the incremental import when its documents change.
//!
//! Events are debounced: the first relevant event starts a window that closes
//! after a quiet spell (or a maximum wait, under constant churn), and the
//! whole window becomes one import. A `git checkout` touching 10k files is
//! one import, and the server's change feed turns it into one notification
//! per affected subscribed URI.

use std::path::{Component, Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use notify::{EventKind, RecursiveMode, Watcher};

use crate::doc::Prefix;
use crate::import;
use crate::store::Location;

/// An import starts once no relevant event arrived for this long…
const QUIET: Duration = Duration::from_millis(150);
/// …or this long after the first event, whichever comes first.
const MAX_WAIT: Duration = Duration::from_secs(3);

/// Starts watching `opts.dir` on a thread of its own; each debounced burst of
/// changes runs [`import::run`] with `opts`. Failures are logged: the server
/// goes on serving what the database holds.
pub fn spawn(opts: import::Options) -> Result<()> {
    let root = opts
        .dir
        .canonicalize()
        .with_context(|| format!("cannot watch {}", opts.dir.display()))?;
    let (events, incoming) = mpsc::channel();
    let mut watcher = notify::recommended_watcher(move |event| {
        let _ = events.send(event);
    })
    .context("cannot start the file watcher")?;
    watcher
        .watch(&root, RecursiveMode::Recursive)
        .with_context(|| format!("cannot watch {}", root.display()))?;
    std::thread::Builder::new()
        .name("orchestra-watch".into())
        .spawn(move || {
            // The watcher lives as long as this thread.
            let _watcher = watcher;
            while wait_for_burst(&incoming, &root) {
                run_import(&opts);
            }
        })?;
    Ok(())
}

/// Blocks until a burst of relevant events has settled. False when the
/// watcher is gone.
fn wait_for_burst(incoming: &mpsc::Receiver<notify::Result<notify::Event>>, root: &Path) -> bool {
    // The first relevant event opens the window.
    loop {
        match incoming.recv() {
            Ok(event) if relevant(&event, root) => break,
            Ok(_) => {}
            Err(_) => return false,
        }
    }
    let opened = Instant::now();
    loop {
        let left = MAX_WAIT.saturating_sub(opened.elapsed());
        if left.is_zero() {
            return true;
        }
        match incoming.recv_timeout(QUIET.min(left)) {
            Ok(_) => {}
            Err(mpsc::RecvTimeoutError::Timeout) => return true,
            Err(mpsc::RecvTimeoutError::Disconnected) => return false,
        }
    }
}

/// Whether an event may change a document: under a prefix folder, not in a
/// hidden entry (the database often lives in `.orchestra/` inside the
/// project, and its own writes must not trigger imports).
fn relevant(event: &notify::Result<notify::Event>, root: &Path) -> bool {
    match event {
        Ok(event) => {
            !matches!(event.kind, EventKind::Access(_))
                && event.paths.iter().any(|path| is_document_path(path, root))
        }
        Err(e) => {
            tracing::warn!("file watcher: {e}");
            // A lost event (queue overflow) may hide any change: re-import.
            matches!(e.kind, notify::ErrorKind::MaxFilesWatch) || e.paths.is_empty()
        }
    }
}

fn is_document_path(path: &Path, root: &Path) -> bool {
    let Ok(rel) = path.strip_prefix(root) else {
        return false;
    };
    let mut parts = rel.components();
    let under_prefix = matches!(parts.next(), Some(Component::Normal(first))
        if first.to_str().and_then(Prefix::parse).is_some());
    under_prefix
        && rel.components().all(|c| match c {
            Component::Normal(name) => !name.to_string_lossy().starts_with('.'),
            _ => true,
        })
}

fn run_import(opts: &import::Options) {
    match import::run(opts) {
        Ok(report) => {
            for warning in &report.warnings {
                tracing::warn!("import: {warning}");
            }
            tracing::info!("{}", report.summary(&opts.dir));
        }
        Err(e) => tracing::error!("import failed: {e:#}"),
    }
}

/// The options `serve --watch` imports with.
pub fn import_options(dir: PathBuf, db: Location) -> import::Options {
    import::Options {
        dir,
        db,
        dry_run: false,
        replace: false,
        max_file_size: import::DEFAULT_MAX_FILE_SIZE,
        progress: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_documents_count() {
        let root = Path::new("/p");
        let cases = [
            ("/p/features/FEAT-001.md", true),
            ("/p/docs/adr/0001.md", true),
            ("/p/docs/adr", true),
            ("/p/notes", true),
            ("/p/.orchestra/orchestra.db-wal", false),
            ("/p/features/.FEAT-001.md.swp", false),
            ("/p/.git/index", false),
            ("/p/src/main.rs", false),
            ("/elsewhere/features/x.md", false),
        ];
        for (path, expected) in cases {
            assert_eq!(is_document_path(Path::new(path), root), expected, "{path}");
        }
    }
}
