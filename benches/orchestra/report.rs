//! What a run prints and writes: one table per size, the page cost across sizes, the same figures as JSON, and progress lines on stderr.

use std::fmt::Write as _;

use serde_json::{Value, json};

use crate::ONE_MILLION;
use crate::http_load::HttpLoad;
use crate::units::{fmt_value, thousands};

/// A progress line on stderr.
pub fn step(n: usize, what: &str) {
    eprintln!("[{n} docs] {what}");
}

pub struct Row {
    pub figure: String,
    pub unit: &'static str,
    pub raw: Option<f64>,
    pub orchestra: Result<f64, &'static str>,
    pub ratio: String,
    pub target: String,
    pub meets: Option<bool>,
    /// Shown after yes/NO, e.g. the compared quantity.
    pub why: String,
}

pub struct SizeResult {
    pub docs: usize,
    pub bytes: u64,
    pub generate_s: f64,
    pub rows: Vec<Row>,
    pub details: Value,
    pub page_start_us: f64,
    pub page_end_us: f64,
    /// The HTTP load test, run at the largest size only.
    pub http: Option<HttpLoad>,
}

impl Row {
    fn meets_text(&self) -> String {
        let verdict = match self.meets {
            Some(true) => "yes",
            Some(false) => "**NO**",
            None if !self.why.is_empty() => return self.why.clone(),
            None => return if self.target.is_empty() { "" } else { "—" }.to_string(),
        };
        if self.why.is_empty() {
            verdict.to_string()
        } else {
            format!("{verdict} ({})", self.why)
        }
    }

    fn to_json(&self) -> Value {
        json!({
            "figure": self.figure,
            "unit": self.unit,
            "raw": self.raw,
            "orchestra": match self.orchestra {
                Ok(v) => json!(v),
                Err(text) => json!(text),
            },
            "ratio": self.ratio,
            "target": self.target,
            "meets": self.meets,
            "note": self.why,
        })
    }
}

impl SizeResult {
    pub fn table(&self) -> String {
        let mut out = format!(
            "## {} documents ({:.0} MB of Markdown, generated in {:.1} s)\n\n",
            thousands(self.docs as u64),
            self.bytes as f64 / 1e6,
            self.generate_s
        );
        out.push_str("| figure | raw | orchestra | ratio | target | meets? |\n");
        out.push_str("|---|---:|---:|---:|---|---|\n");
        for row in &self.rows {
            let raw = row.raw.map_or("—".to_string(), |v| fmt_value(v, row.unit));
            let orch = match row.orchestra {
                Ok(v) => fmt_value(v, row.unit),
                Err(text) => text.to_string(),
            };
            let ratio = if row.ratio.is_empty() {
                "—"
            } else {
                &row.ratio
            };
            let target = if row.target.is_empty() {
                "—"
            } else {
                &row.target
            };
            writeln!(
                out,
                "| {} | {raw} | {orch} | {ratio} | {target} | {} |",
                row.figure,
                row.meets_text()
            )
            .unwrap();
        }
        if let Some(http) = &self.http {
            out.push('\n');
            out.push_str(&http.table(self.docs));
        }
        out
    }

    pub fn to_json(&self) -> Value {
        json!({
            "docs": self.docs,
            "rows": self.rows.iter().map(Row::to_json).collect::<Vec<_>>(),
            "details": self.details,
            "http_load": self.http.as_ref().map(HttpLoad::to_json),
        })
    }
}

/// The page-of-100 cost at every size, for the "page at 1M ≤ 1.5× page at
/// 1k" target (the end-of-listing page, the worse of the two, is compared).
pub fn across_sizes(results: &[SizeResult]) -> String {
    let mut out = String::from("## Page of 100 across sizes\n\n");
    out.push_str(
        "| documents | page at the start | page at the end | end ÷ smallest size's end |\n",
    );
    out.push_str("|---:|---:|---:|---:|\n");
    let base = results.first().map_or(1.0, |r| r.page_end_us);
    for r in results {
        writeln!(
            out,
            "| {} | {:.0} µs | {:.0} µs | {:.2}× |",
            thousands(r.docs as u64),
            r.page_start_us,
            r.page_end_us,
            r.page_end_us / base
        )
        .unwrap();
    }
    let small = results.iter().find(|r| r.docs == 1_000);
    let large = results.iter().find(|r| r.docs == ONE_MILLION);
    match (small, large) {
        (Some(small), Some(large)) => {
            let factor = large.page_end_us / small.page_end_us;
            writeln!(
                out,
                "\nTarget page at 1M ≤ 1.5× page at 1k: {factor:.2}× → {}",
                if factor <= 1.5 {
                    "meets"
                } else {
                    "**NOT MET**"
                }
            )
            .unwrap();
        }
        _ => out.push_str(
            "\nTarget page at 1M ≤ 1.5× page at 1k: not evaluated (run with `--docs 1000 --1m`).\n",
        ),
    }
    out
}

pub fn across_json(results: &[SizeResult]) -> Value {
    results
        .iter()
        .map(|r| json!({"docs": r.docs, "page_start_us": r.page_start_us, "page_end_us": r.page_end_us}))
        .collect()
}
