//! How a figure is written: its unit, thousands separators, ratios, KiB as MB.

pub fn fmt_value(v: f64, unit: &str) -> String {
    match unit {
        "docs/s" | "reads/s" | "edits/s" => format!("{}/s", thousands(v.round() as u64)),
        "s" if v < 0.1 => format!("{:.1} ms", v * 1000.0),
        "s" => format!("{v:.2} s"),
        "µs" if v >= 1000.0 => format!("{:.2} ms", v / 1000.0),
        "µs" => format!("{v:.0} µs"),
        "MB" => format!("{v:.1} MB"),
        "ms" => format!("{v:.1} ms"),
        "%" => format!("{v:.1}%"),
        "B" => format!("{v:.0} B"),
        _ => format!("{v:.2} {unit}"),
    }
}

pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// orchestra's figure over the raw one, e.g. `1.33×`.
pub fn ratio(raw: f64, orch: f64) -> String {
    format!("{:.2}×", orch / raw)
}

/// KiB (as `wait4` and `/proc` give them) in MB.
pub fn mb(kb: u64) -> f64 {
    kb as f64 / 1024.0
}
