//! What a run prints and writes: one table per size, the page cost across sizes, the same figures as JSON, and progress lines on stderr.

use std::fmt::Write as _;

use serde_json::{Value, json};

use crate::ONE_MILLION;
use crate::http_load::HttpLoad;
use crate::side_by_side::SideBySide;
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
    pub read_p50_us: f64,
    /// p50 of the rare-word, half-word and filters-only searches.
    pub search_p50_us: Option<[f64; 3]>,
    /// The same three on the raw baseline: FTS5's own ranked queries, and a
    /// scan of the frontmatter for the filter.
    pub raw_search_p50_us: Option<[f64; 3]>,
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

    /// The row as a line of a Markdown table (figure, raw, orchestra,
    /// ratio, target, meets?).
    pub fn line(&self) -> String {
        let raw = self
            .raw
            .map_or("—".to_string(), |v| fmt_value(v, self.unit));
        let orch = match self.orchestra {
            Ok(v) => fmt_value(v, self.unit),
            Err(text) => text.to_string(),
        };
        let dash = |text: &str| match text.is_empty() {
            true => "—".to_string(),
            false => text.to_string(),
        };
        format!(
            "| {} | {raw} | {orch} | {} | {} | {} |\n",
            self.figure,
            dash(&self.ratio),
            dash(&self.target),
            self.meets_text()
        )
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
            out.push_str(&row.line());
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
pub fn across_sizes(results: &[SizeResult], side: Option<&SideBySide>) -> String {
    let mut out = String::from("## Costs across sizes\n\n");
    out.push_str(
        "| documents | page of 100 at the start | at the end | end ÷ smallest size's end | `resources/read` p50 | search p50: rare word | half word | filters only |\n",
    );
    out.push_str("|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    let base = results.first().map_or(1.0, |r| r.page_end_us);
    for r in results {
        let search = |i: usize| {
            r.search_p50_us
                .map_or("—".to_string(), |p| micros_text(p[i]))
        };
        writeln!(
            out,
            "| {} | {:.0} µs | {:.0} µs | {:.2}× | {:.0} µs | {} | {} | {} |",
            thousands(r.docs as u64),
            r.page_start_us,
            r.page_end_us,
            r.page_end_us / base,
            r.read_p50_us,
            search(0),
            search(1),
            search(2),
        )
        .unwrap();
    }
    out.push('\n');
    if let Some(side) = side {
        out.push_str("### Pages and reads, the largest size beside the smallest\n\n");
        out.push_str("| figure | smaller | larger | ratio | target | meets? |\n");
        out.push_str("|---|---:|---:|---:|---|---|\n");
        for row in side.rows() {
            out.push_str(&row.line());
        }
        out.push('\n');
    }
    for (target, verdict) in across_targets(results, side) {
        writeln!(out, "Target {target}: {verdict}").unwrap();
    }
    out
}

fn micros_text(us: f64) -> String {
    if us >= 1000.0 {
        format!("{:.2} ms", us / 1000.0)
    } else {
        format!("{us:.0} µs")
    }
}

/// The targets that compare sizes (issue #15): a page and a read at 1M
/// cost at most 1.2× what they cost at 1k; a search at 1M at most 2× its
/// 100k figure.
fn across_targets(results: &[SizeResult], side: Option<&SideBySide>) -> Vec<(String, String)> {
    let at = |docs: usize| results.iter().find(|r| r.docs == docs);
    let verdict = |factor: f64, limit: f64| {
        let met = if factor <= limit {
            "meets"
        } else {
            "**NOT MET**"
        };
        format!("{factor:.2}× → {met}")
    };
    let (k1, k100, m1) = (at(1_000), at(100_000), at(ONE_MILLION));
    let mut targets = Vec::new();
    let not_run = |sizes: &str| format!("not evaluated (run with `--docs {sizes} --1m`)");
    // Measured side by side when the run had both sizes: the figure the
    // target judges.
    let side = side.filter(|s| s.compares(1_000, ONE_MILLION));
    match (k1, m1) {
        (Some(_), Some(_)) if let Some(side) = side => {
            targets.push((
                "page of 100 at 1M ≤ 1.2× at 1k (side by side, median of the rounds)".to_string(),
                verdict(side.page_ratio(), 1.2),
            ));
            targets.push((
                "`resources/read` p50 at 1M ≤ 1.2× at 1k (side by side, median of the rounds)"
                    .to_string(),
                verdict(side.read_ratio(), 1.2),
            ));
        }
        (Some(small), Some(large)) => {
            targets.push((
                "page of 100 at 1M ≤ 1.2× at 1k".to_string(),
                verdict(large.page_end_us / small.page_end_us, 1.2),
            ));
            targets.push((
                "`resources/read` p50 at 1M ≤ 1.2× at 1k".to_string(),
                verdict(large.read_p50_us / small.read_p50_us, 1.2),
            ));
        }
        _ => targets.push((
            "page and read at 1M ≤ 1.2× at 1k".to_string(),
            not_run("1000"),
        )),
    }
    match (
        k100.and_then(|r| r.search_p50_us),
        m1.and_then(|r| r.search_p50_us),
    ) {
        (Some(mid), Some(large)) => {
            // How SQLite alone grows over the same bytes, beside ours.
            let raw = k100
                .and_then(|r| r.raw_search_p50_us)
                .zip(m1.and_then(|r| r.raw_search_p50_us));
            let raw_what = ["FTS5's own query", "FTS5's own query", "a frontmatter scan"];
            for (i, what) in ["rare word", "half word", "filters only"]
                .iter()
                .enumerate()
            {
                let mut text = verdict(large[i] / mid[i], 2.0);
                if let Some((raw_mid, raw_large)) = raw {
                    write!(
                        text,
                        " (raw, {}: {:.2}×)",
                        raw_what[i],
                        raw_large[i] / raw_mid[i]
                    )
                    .unwrap();
                }
                targets.push((format!("search p50 ({what}) at 1M ≤ 2× at 100k"), text));
            }
        }
        _ => targets.push((
            "search p50 at 1M ≤ 2× at 100k".to_string(),
            not_run("100000"),
        )),
    }
    targets
}

pub fn across_json(results: &[SizeResult]) -> Value {
    results
        .iter()
        .map(|r| {
            json!({
                "docs": r.docs,
                "page_start_us": r.page_start_us,
                "page_end_us": r.page_end_us,
                "read_p50_us": r.read_p50_us,
                "search_p50_us": r.search_p50_us,
                "raw_search_p50_us": r.raw_search_p50_us,
            })
        })
        .collect()
}
