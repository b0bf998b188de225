//! How samples are taken and summarized: sample counts shared by the raw baseline and orchestra, medians and nearest-rank percentiles.

use std::time::Duration;

/// Samples per page-cost figure.
pub const PAGE_SAMPLES: usize = 50;
/// Full listings timed per server (the median is reported).
pub const LISTING_RUNS: usize = 3;

pub fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

pub fn median(samples: &mut [Duration]) -> Duration {
    percentile(samples, 50.0)
}

/// Nearest-rank percentile.
pub fn percentile(samples: &mut [Duration], p: f64) -> Duration {
    samples.sort();
    let rank = ((p / 100.0) * samples.len() as f64).ceil() as usize;
    samples[rank.clamp(1, samples.len()) - 1]
}

/// Nearest-rank percentile of samples already in a unit (ms, µs).
pub fn percentile_ms(samples: &[f64], p: f64) -> f64 {
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}
