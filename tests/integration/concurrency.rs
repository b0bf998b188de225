//! An import commits while four clients page through the listing and read: no errors, no document twice, none that existed throughout skipped.

use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::{Project, Server};

const DOCS: usize = 4000;

fn body(i: usize, version: u32) -> String {
    format!(
        "---\ntitle: Feature {i} v{version}\n---\n\n# Feature {i}\n\n{}\n",
        "text ".repeat(40)
    )
}

fn uri(i: usize) -> String {
    format!("orchestra://features/F{i:05}")
}

/// One client's work: list everything again and again until told to stop,
/// reading a document that exists throughout on every page.
fn client(db: &std::path::Path, stable: &[usize], stop: &AtomicBool) -> Vec<Vec<String>> {
    let mut server = Server::start(db, &["--page-size", "50"]);
    let init = server.request(&json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "t", "version": "1"}}}));
    assert!(init["result"].is_object(), "{init}");
    let mut listings = Vec::new();
    let mut id = 1;
    let mut read = 0;
    while !stop.load(Ordering::Relaxed) || listings.is_empty() {
        let mut listing = Vec::new();
        let mut cursor = Value::Null;
        loop {
            id += 1;
            let params = if cursor.is_null() {
                json!({})
            } else {
                json!({"cursor": cursor})
            };
            let page = server.request(
                &json!({"jsonrpc": "2.0", "id": id, "method": "resources/list", "params": params}),
            );
            assert!(page.get("error").is_none(), "listing failed: {page}");
            for r in page["result"]["resources"].as_array().unwrap() {
                listing.push(r["uri"].as_str().unwrap().to_string());
            }
            id += 1;
            read = (read + 7) % stable.len();
            let doc = server.request(
                &json!({"jsonrpc": "2.0", "id": id, "method": "resources/read",
                                             "params": {"uri": uri(stable[read])}}),
            );
            assert!(doc.get("error").is_none(), "read failed: {doc}");
            cursor = page["result"]["nextCursor"].clone();
            if cursor.is_null() {
                break;
            }
        }
        listings.push(listing);
    }
    let (_, status) = server.close();
    assert!(status.success());
    listings
}

#[test]
fn listings_and_reads_survive_a_concurrent_import() {
    let project = Project::new();
    for i in 0..DOCS {
        project.file(&format!("features/F{i:05}.md"), body(i, 1));
    }
    project.import(&[]).assert_success();

    // The next state: the first 400 removed, 400 added after the end, every
    // third one rewritten.
    let removed: HashSet<usize> = (0..400).collect();
    let added: Vec<usize> = (DOCS..DOCS + 400).collect();
    let stable: Vec<usize> = (400..DOCS).collect();

    let stop = Arc::new(AtomicBool::new(false));
    let db = project.db();
    let clients: Vec<_> = (0..4)
        .map(|_| {
            let (db, stable, stop) = (db.clone(), stable.clone(), stop.clone());
            std::thread::spawn(move || client(&db, &stable, &stop))
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    for i in &removed {
        project.remove(&format!("features/F{i:05}.md"));
    }
    for i in &added {
        project.file(&format!("features/F{i:05}.md"), body(*i, 1));
    }
    for i in stable.iter().step_by(3) {
        project.file(&format!("features/F{i:05}.md"), body(*i, 2));
    }
    let started = Instant::now();
    let report = project.import_json(&[]);
    let counts = report.counts();
    assert_eq!((counts.new, counts.removed), (400, 400));
    // Let every client finish at least one listing that began after the commit.
    std::thread::sleep(Duration::from_millis(500).max(started.elapsed()));
    stop.store(true, Ordering::Relaxed);

    let throughout: BTreeSet<String> = stable.iter().map(|i| uri(*i)).collect();
    let possible: HashSet<String> = (0..DOCS + 400).map(uri).collect();
    let mut listings = 0;
    for handle in clients {
        for listing in handle.join().unwrap() {
            listings += 1;
            let unique: HashSet<&String> = listing.iter().collect();
            assert_eq!(unique.len(), listing.len(), "a document listed twice");
            for uri in &throughout {
                assert!(
                    unique.contains(uri),
                    "{uri} existed throughout but was skipped"
                );
            }
            assert!(listing.iter().all(|u| possible.contains(u)));
            let mut sorted = listing.clone();
            sorted.sort();
            assert_eq!(sorted, listing, "listing out of order");
        }
    }
    assert!(
        listings >= 8,
        "each client listed at least twice ({listings})"
    );
}
