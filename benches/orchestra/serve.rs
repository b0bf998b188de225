//! `orchestra serve` over a pipe: full listing, pages of 100 at the start and the end, `resources/read` latency and throughput, the round-trip floor and server RSS; and their rows beside the raw baseline.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::json;

use crate::process::proc_rss;
use crate::raw_sqlite::RawReads;
use crate::report::Row;
use crate::rng::Rng;
use crate::stats::{LISTING_RUNS, PAGE_SAMPLES, median, micros, percentile};
use crate::stdio_client::Server;
use crate::units::{mb, ratio, thousands};
use crate::{Options, Res};

/// Requests kept in flight by the throughput test (the server's own limit).
pub const IN_FLIGHT: usize = 64;

pub struct ServeFigures {
    pub listing_s: f64,
    pub listing_runs_s: Vec<f64>,
    pub pages_500: usize,
    pub server_rss_kb: u64,
    pub server_rss_after_reads_kb: u64,
    /// Reads sent before `server_rss_after_reads_kb` (warm-up, sequential, pipelined).
    pub reads: usize,
    pub server_hwm_kb: u64,
    pub read_p50_us: f64,
    pub read_p99_us: f64,
    pub ping_p50_us: f64,
    /// Round trip of a read-sized line through `cat`: the pipe floor.
    pub echo_p50_us: Option<f64>,
    pub reads_per_s: f64,
    pub page_start_us: f64,
    pub page_end_us: f64,
    pub page_listing_s: f64,
}

/// p50 round trip of a `len`-byte line through `cat`, or `None` without `cat`.
fn echo_floor(len: usize, samples: usize) -> Res<Option<f64>> {
    let Ok(mut echo) = Server::spawn(Command::new("cat")) else {
        return Ok(None);
    };
    let line = format!("{}\n", "x".repeat(len.saturating_sub(1).max(1)));
    let mut took = Vec::with_capacity(samples);
    for _ in 0..samples + 50 {
        took.push(echo.call_line(&line)?.0);
    }
    echo.stop()?;
    Ok(Some(micros(median(&mut took[50..]))))
}

/// The cursor of the last page of 100 that is full, from a listing's
/// cursors: the last page's when N is a multiple of 100.
pub fn last_full_page(cursors: &[Option<String>], n: usize) -> Option<String> {
    let from_end = if n.is_multiple_of(100) { 1 } else { 2 };
    cursors[cursors.len() - from_end].clone()
}

/// `count` first pages of 100 and as many at `end_cursor`, interleaved:
/// their round trips, start and end.
pub fn sample_pages(
    server: &mut Server,
    end_cursor: Option<&str>,
    count: usize,
) -> Res<(Vec<Duration>, Vec<Duration>)> {
    let (mut start, mut end) = (Vec::with_capacity(count), Vec::with_capacity(count));
    for _ in 0..count {
        let (took, page) = server.list(None)?;
        assert_eq!(page.resources.len(), 100);
        start.push(took);
        let (took, page) = server.list(end_cursor)?;
        assert_eq!(page.resources.len(), 100);
        end.push(took);
    }
    Ok((start, end))
}

pub fn measure(bin: &Path, db: &Path, n: usize, opts: &Options) -> Res<ServeFigures> {
    // Default page size: full listing, reads, memory.
    let mut server = Server::start(bin, db, None)?;
    let mut runs = Vec::new();
    let mut uris = Vec::new();
    let mut pages_500 = 0;
    for _ in 0..LISTING_RUNS {
        let (took, listed, cursors) = server.full_listing()?;
        if listed.len() != n {
            return Err(format!("the listing has {} resources, not {n}", listed.len()).into());
        }
        runs.push(took);
        uris = listed;
        pages_500 = cursors.len();
    }
    let (server_rss_kb, _) = proc_rss(server.pid());
    let listing_runs_s: Vec<f64> = runs.iter().map(Duration::as_secs_f64).collect();

    let mut rng = Rng::new(opts.seed, 0xFEED);
    // Warm-up, then sequential round trips.
    for _ in 0..50 {
        let line = server.read_line(&uris[rng.below(n)]);
        let (_, reply) = server.call_line(&line)?;
        Server::check_read(&reply)?;
    }
    let mut reply_len = 0;
    let mut pings = Vec::with_capacity(opts.reads);
    for _ in 0..opts.reads {
        let line = server.request_line("ping", &json!({}));
        let (took, reply) = server.call_line(&line)?;
        Server::check_read(&reply)?;
        pings.push(took);
    }
    let mut latencies = Vec::with_capacity(opts.reads);
    for _ in 0..opts.reads {
        let line = server.read_line(&uris[rng.below(n)]);
        let (took, reply) = server.call_line(&line)?;
        Server::check_read(&reply)?;
        latencies.push(took);
        reply_len += reply.len();
    }
    let echo_p50_us = echo_floor(reply_len / opts.reads, opts.reads)?;
    let lines: Vec<String> = (0..opts.pipelined)
        .map(|_| {
            let uri = &uris[rng.below(n)];
            server.read_line(uri)
        })
        .collect();
    let took = server.pipelined(&lines, IN_FLIGHT)?;
    let reads_per_s = opts.pipelined as f64 / took.as_secs_f64();
    let (server_rss_after_reads_kb, server_hwm_kb) = proc_rss(server.pid());
    server.stop()?;

    // Page of 100 at the start and at the end.
    let mut server = Server::start(bin, db, Some(100))?;
    let (page_listing, listed, cursors) = server.full_listing()?;
    if listed.len() != n {
        return Err(format!("the listing has {} resources, not {n}", listed.len()).into());
    }
    let end_cursor = last_full_page(&cursors, n);
    let (mut start_samples, mut end_samples) =
        sample_pages(&mut server, end_cursor.as_deref(), PAGE_SAMPLES)?;
    server.stop()?;

    Ok(ServeFigures {
        listing_s: median(&mut runs).as_secs_f64(),
        listing_runs_s,
        pages_500,
        server_rss_kb,
        server_rss_after_reads_kb,
        reads: 50 + opts.reads + opts.pipelined,
        server_hwm_kb,
        read_p50_us: micros(percentile(&mut latencies, 50.0)),
        read_p99_us: micros(percentile(&mut latencies, 99.0)),
        ping_p50_us: micros(median(&mut pings)),
        echo_p50_us,
        reads_per_s,
        page_start_us: micros(median(&mut start_samples)),
        page_end_us: micros(median(&mut end_samples)),
        page_listing_s: page_listing.as_secs_f64(),
    })
}

impl ServeFigures {
    /// Pages, reads, the round-trip floor, throughput, the full listing and
    /// the server's RSS, beside the raw baseline where it has one.
    pub fn rows(&self, raw: &RawReads, n: usize) -> Vec<Row> {
        let mut rows = Vec::new();
        rows.push(Row {
            figure: "page of 100 at the start".into(),
            unit: "µs",
            raw: Some(raw.page_start_us),
            orchestra: Ok(self.page_start_us),
            ratio: ratio(raw.page_start_us, self.page_start_us),
            target: String::new(),
            meets: None,
            why: String::new(),
        });
        let end_over_start = self.page_end_us / self.page_start_us;
        rows.push(Row {
            figure: "page of 100 at the end".into(),
            unit: "µs",
            raw: Some(raw.page_end_us),
            orchestra: Ok(self.page_end_us),
            ratio: ratio(raw.page_end_us, self.page_end_us),
            target: "≤ 1.5× start".into(),
            meets: Some(end_over_start <= 1.5),
            why: format!("{end_over_start:.2}× start"),
        });
        rows.push(Row {
            figure: "resources/read p50".into(),
            unit: "µs",
            raw: Some(raw.read_p50_us),
            orchestra: Ok(self.read_p50_us),
            ratio: ratio(raw.read_p50_us, self.read_p50_us),
            target: "< 250 µs".into(),
            meets: Some(self.read_p50_us < 250.0),
            why: String::new(),
        });
        rows.push(Row {
            figure: "resources/read p99".into(),
            unit: "µs",
            raw: Some(raw.read_p99_us),
            orchestra: Ok(self.read_p99_us),
            ratio: ratio(raw.read_p99_us, self.read_p99_us),
            target: String::new(),
            meets: None,
            why: String::new(),
        });
        rows.push(Row {
            figure: "round-trip floor: ping p50 (raw: `cat` echo of a read-sized line)".into(),
            unit: "µs",
            raw: self.echo_p50_us,
            orchestra: Ok(self.ping_p50_us),
            ratio: self
                .echo_p50_us
                .map_or(String::new(), |echo| ratio(echo, self.ping_p50_us)),
            target: String::new(),
            meets: None,
            why: String::new(),
        });
        rows.push(Row {
            figure: "reads/s, 64 in flight (raw: 1 thread)".into(),
            unit: "reads/s",
            raw: Some(raw.reads_per_s),
            orchestra: Ok(self.reads_per_s),
            ratio: ratio(raw.reads_per_s, self.reads_per_s),
            target: String::new(),
            meets: None,
            why: String::new(),
        });
        rows.push(Row {
            figure: format!("full listing ({} pages of 500)", self.pages_500),
            unit: "s",
            raw: Some(raw.listing_s),
            orchestra: Ok(self.listing_s),
            ratio: ratio(raw.listing_s, self.listing_s),
            target: "< 1.5 s at 100k".into(),
            meets: (n == 100_000).then_some(self.listing_s < 1.5),
            why: String::new(),
        });
        // Issue 34: the same listing per document, beside the raw scan's.
        let per_doc = |s: f64| s * 1e6 / n as f64;
        rows.push(Row {
            figure:
                "full listing per document (pages of 500; raw: the keyset scan in pages of 500)"
                    .into(),
            unit: "µs/doc",
            raw: Some(per_doc(raw.listing_s)),
            orchestra: Ok(per_doc(self.listing_s)),
            ratio: ratio(raw.listing_s, self.listing_s),
            target: "≤ 3 µs/doc at 100k".into(),
            meets: (n == 100_000).then_some(per_doc(self.listing_s) <= 3.0),
            why: String::new(),
        });
        rows.push(Row {
            figure: "server RSS after the listing".into(),
            unit: "MB",
            raw: None,
            orchestra: Ok(mb(self.server_rss_kb)),
            ratio: String::new(),
            target: "< 60 MB".into(),
            meets: Some(mb(self.server_rss_kb) < 60.0),
            why: String::new(),
        });
        let after_reads = mb(self.server_rss_after_reads_kb);
        rows.push(Row {
            figure: format!(
                "server RSS after the listing and {} reads",
                thousands(self.reads as u64)
            ),
            unit: "MB",
            raw: None,
            orchestra: Ok(after_reads),
            ratio: String::new(),
            target: "< 60 MB".into(),
            meets: Some(after_reads < 60.0),
            why: String::new(),
        });
        rows
    }
}
