//! The web viewer over HTTP: a document page and a list page (100 documents from a random place), each beside the JSON read of the same document (`/resource`, the same point read without rendering), and the size of its JavaScript plus CSS.

use std::path::Path;
use std::time::{Duration, Instant};

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use rusqlite::Connection;
use serde_json::{Value, json};

use crate::Res;
use crate::http_client::{HttpClient, HttpServer};
use crate::report::Row;
use crate::rng::Rng;
use crate::stats::{micros, percentile};
use crate::units::{fmt_value, ratio};

/// Requests of each kind, after [`WARMUP`] of each.
const REQUESTS: usize = 1000;
const WARMUP: usize = 50;
const HTML: &str = "text/html,application/xhtml+xml";

/// Everything but RFC 3986 unreserved characters, as in a document's URI.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

pub struct ViewerFigures {
    /// Round trips on one keep-alive connection, µs.
    doc_us: Vec<f64>,
    list_us: Vec<f64>,
    json_us: Vec<f64>,
    /// `viewer.js` plus `viewer.css`.
    asset_bytes: usize,
    doc_page_bytes: usize,
}

/// `prefix/id` with every id segment encoded as in its URI.
fn key_path(prefix: &str, id: &str) -> String {
    let segments: Vec<String> = id
        .split('/')
        .map(|s| utf8_percent_encode(s, SEGMENT).to_string())
        .collect();
    format!("{prefix}/{}", segments.join("/"))
}

fn time(client: &mut HttpClient, path: &str, accept: &str) -> Res<(Duration, usize)> {
    let started = Instant::now();
    let (status, body) = client.get(path, accept)?;
    let took = started.elapsed();
    if status != 200 {
        return Err(format!("GET {path}: {status} {}", String::from_utf8_lossy(&body)).into());
    }
    Ok((took, body.len()))
}

pub fn measure(bin: &Path, db: &Path, n: usize, seed: u64) -> Res<ViewerFigures> {
    // Random documents, by rowid (the import's order; rowids are dense).
    let conn = Connection::open(db)?;
    let mut stmt = conn.prepare("SELECT prefix, id FROM documents WHERE rowid = ?1")?;
    let mut rng = Rng::new(seed, 0x71e3);
    let mut keys = Vec::new();
    while keys.len() < WARMUP + REQUESTS {
        let rowid = 1 + rng.below(n);
        if let Ok(key) = stmt.query_row([rowid as i64], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
        }) {
            keys.push(key);
        }
    }
    drop(stmt);
    drop(conn);

    let server = HttpServer::start(bin, db)?;
    let mut client = HttpClient::connect(server.port)?;
    let mut asset_bytes = 0;
    for asset in ["/assets/viewer.js", "/assets/viewer.css"] {
        asset_bytes += time(&mut client, asset, "*/*")?.1;
    }
    let (mut doc, mut list, mut json) = (Vec::new(), Vec::new(), Vec::new());
    let mut doc_page_bytes = 0;
    // Interleaved, so that a noisy moment costs each kind alike.
    for (i, (prefix, id)) in keys.iter().enumerate() {
        let path = key_path(prefix, id);
        let (d, bytes) = time(&mut client, &format!("/doc/{path}"), HTML)?;
        let after = utf8_percent_encode(id, NON_ALPHANUMERIC);
        let (l, _) = time(&mut client, &format!("/ls/{prefix}?after={after}"), HTML)?;
        let uri = utf8_percent_encode(&format!("orchestra://{path}"), NON_ALPHANUMERIC).to_string();
        let (j, _) = time(
            &mut client,
            &format!("/resource?uri={uri}"),
            "application/json",
        )?;
        if i >= WARMUP {
            doc.push(d);
            list.push(l);
            json.push(j);
            doc_page_bytes += bytes;
        }
    }
    server.stop()?;
    let us = |mut samples: Vec<Duration>| -> Vec<f64> {
        samples.sort();
        samples.into_iter().map(micros).collect()
    };
    Ok(ViewerFigures {
        doc_us: us(doc),
        list_us: us(list),
        json_us: us(json),
        asset_bytes,
        doc_page_bytes: doc_page_bytes / REQUESTS,
    })
}

fn p(samples: &[f64], q: f64) -> f64 {
    let mut d: Vec<Duration> = samples
        .iter()
        .map(|us| Duration::from_secs_f64(us / 1e6))
        .collect();
    micros(percentile(&mut d, q))
}

impl ViewerFigures {
    pub fn rows(&self) -> Vec<Row> {
        let json50 = p(&self.json_us, 50.0);
        let page = |figure: String, samples: &[f64]| {
            let p50 = p(samples, 50.0);
            Row {
                figure,
                unit: "µs",
                raw: Some(json50),
                orchestra: Ok(p50),
                ratio: ratio(json50, p50),
                target: "≤ 5 ms".into(),
                meets: Some(p50 <= 5000.0),
                why: format!("p99 {}", fmt_value(p(samples, 99.0), "µs")),
            }
        };
        vec![
            page(
                format!(
                    "viewer: document page p50 (rendered, ~{} KB of HTML; raw: `/resource` JSON of the same document)",
                    self.doc_page_bytes / 1000
                ),
                &self.doc_us,
            ),
            page(
                "viewer: list page p50 (100 documents from a random place, with the count; raw: as above)"
                    .to_string(),
                &self.list_us,
            ),
            Row {
                figure: "viewer: JavaScript plus CSS".to_string(),
                unit: "KB",
                raw: None,
                orchestra: Ok(self.asset_bytes as f64 / 1024.0),
                ratio: String::new(),
                target: "≤ 50 KB".into(),
                meets: Some(self.asset_bytes <= 50 * 1024),
                why: String::new(),
            },
        ]
    }

    pub fn to_json(&self) -> Value {
        json!({
            "doc_page_p50_us": p(&self.doc_us, 50.0),
            "doc_page_p99_us": p(&self.doc_us, 99.0),
            "list_page_p50_us": p(&self.list_us, 50.0),
            "list_page_p99_us": p(&self.list_us, 99.0),
            "json_read_p50_us": p(&self.json_us, 50.0),
            "asset_bytes": self.asset_bytes,
            "doc_page_bytes": self.doc_page_bytes,
        })
    }
}
