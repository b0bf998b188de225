//! What a listed resource costs on the wire: the JSON bytes of a full listing's pages (500 a page) per resource, and the same with every resource's `icons` stripped, the bound an icon adds to.

use std::path::Path;

use serde_json::{Value, json};

use crate::Res;
use crate::report::Row;
use crate::stdio_client::Server;

/// The target of issue 34: a listed resource, icon included.
const TARGET_BYTES: f64 = 500.0;

pub struct PageBytes {
    pub resources: usize,
    /// Every page's reply line (without its newline), summed.
    pub page_bytes: u64,
    /// The same pages re-serialized with each resource's `icons` removed.
    pub stripped_bytes: u64,
}

pub fn measure(bin: &Path, db: &Path, n: usize) -> Res<PageBytes> {
    let mut server = Server::start(bin, db, None)?;
    let mut figures = PageBytes {
        resources: 0,
        page_bytes: 0,
        stripped_bytes: 0,
    };
    let mut cursor: Option<String> = None;
    loop {
        let params = match &cursor {
            Some(cursor) => json!({ "cursor": cursor }),
            None => json!({}),
        };
        let line = server.request_line("resources/list", &params);
        let (_, reply) = server.call_line(&line)?;
        let reply = reply.trim_end();
        figures.page_bytes += reply.len() as u64;
        let mut value: Value = serde_json::from_str(reply)?;
        let result = &mut value["result"];
        cursor = result["nextCursor"].as_str().map(str::to_string);
        let resources = result["resources"]
            .as_array_mut()
            .ok_or("resources/list without resources")?;
        figures.resources += resources.len();
        for resource in resources {
            if let Some(object) = resource.as_object_mut() {
                object.remove("icons");
            }
        }
        figures.stripped_bytes += serde_json::to_string(&value)?.len() as u64;
        if cursor.is_none() {
            break;
        }
    }
    server.stop()?;
    if figures.resources != n {
        return Err(format!("the listing has {} resources, not {n}", figures.resources).into());
    }
    Ok(figures)
}

impl PageBytes {
    pub fn per_resource(&self) -> f64 {
        self.page_bytes as f64 / self.resources as f64
    }

    pub fn stripped_per_resource(&self) -> f64 {
        self.stripped_bytes as f64 / self.resources as f64
    }

    /// One row: the bytes a listed resource costs, beside the bound without
    /// icons (in the raw column: no raw equivalent has icons either).
    pub fn rows(&self) -> Vec<Row> {
        let with = self.per_resource();
        let without = self.stripped_per_resource();
        vec![Row {
            figure: "bytes per listed resource (raw: icons stripped)".into(),
            unit: "B",
            raw: Some(without),
            orchestra: Ok(with),
            ratio: format!("+{:.0} B", with - without),
            target: format!("≤ {TARGET_BYTES:.0} B"),
            meets: Some(with <= TARGET_BYTES),
            why: String::new(),
        }]
    }

    pub fn to_json(&self) -> Value {
        json!({
            "resources": self.resources,
            "page_bytes": self.page_bytes,
            "stripped_bytes": self.stripped_bytes,
            "per_resource": self.per_resource(),
            "stripped_per_resource": self.stripped_per_resource(),
        })
    }
}
