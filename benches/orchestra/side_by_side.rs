//! Pages and reads at the largest size beside the smallest, on two servers running at once and measured in alternated rounds: the "a page and a read at 1M cost what they cost at 1k" target, free of the machine's drift between the two sizes' runs.
//!
//! Measured once per size, minutes apart, the two figures moved with the
//! machine more than with the database (1.10× in one run, 1.35× in the
//! next, same command). Here each round measures both servers, one after
//! the other and in the other order in the next round, and the figure is
//! the median of the rounds' ratios.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use crate::Res;
use crate::report::Row;
use crate::rng::Rng;
use crate::serve::{last_full_page, sample_pages};
use crate::stats::{median, micros, percentile_ms};
use crate::stdio_client::Server;

/// Rounds; each one measures both servers.
const ROUNDS: usize = 7;
/// Pages from the start and from the end, each, per server and round.
const PAGES: usize = 100;
/// Reads of documents picked at random, per server and round.
const READS: usize = 500;
/// The largest cost at the large size, as a multiple of the small one's.
const TARGET: f64 = 1.2;

/// One of the costs of [`Costs`].
type Cost = fn(&Costs) -> f64;

/// One server's p50s in one round.
#[derive(Clone, Copy)]
struct Costs {
    page_start_us: f64,
    page_end_us: f64,
    read_us: f64,
}

pub struct SideBySide {
    small_docs: usize,
    large_docs: usize,
    /// (small, large) per round.
    rounds: Vec<(Costs, Costs)>,
}

/// A server of pages of 100 and what to ask it: the last full page's
/// cursor and every document's URI.
struct Subject {
    server: Server,
    end_cursor: Option<String>,
    uris: Vec<String>,
    rng: Rng,
}

impl Subject {
    fn start(bin: &Path, db: &Path, n: usize, seed: u64) -> Res<Subject> {
        let mut server = Server::start(bin, db, Some(100))?;
        let (_, uris, cursors) = server.full_listing()?;
        if uris.len() != n {
            return Err(format!("the listing has {} resources, not {n}", uris.len()).into());
        }
        let end_cursor = last_full_page(&cursors, n);
        // Warm-up, as the per-size measurement does.
        let mut subject = Subject {
            server,
            end_cursor,
            uris,
            rng: Rng::new(seed, 0x5EED),
        };
        subject.reads(50)?;
        Ok(subject)
    }

    fn reads(&mut self, count: usize) -> Res<Vec<Duration>> {
        let mut took = Vec::with_capacity(count);
        for _ in 0..count {
            let uri = &self.uris[self.rng.below(self.uris.len())];
            let line = self.server.read_line(uri);
            let (t, reply) = self.server.call_line(&line)?;
            Server::check_read(&reply)?;
            took.push(t);
        }
        Ok(took)
    }

    fn round(&mut self) -> Res<Costs> {
        let (mut start, mut end) =
            sample_pages(&mut self.server, self.end_cursor.as_deref(), PAGES)?;
        let mut reads = self.reads(READS)?;
        Ok(Costs {
            page_start_us: micros(median(&mut start)),
            page_end_us: micros(median(&mut end)),
            read_us: micros(median(&mut reads)),
        })
    }
}

/// Both databases served at once, measured in [`ROUNDS`] alternated rounds.
pub fn measure(
    bin: &Path,
    (small_db, small_docs): (&Path, usize),
    (large_db, large_docs): (&Path, usize),
    seed: u64,
) -> Res<SideBySide> {
    let mut small = Subject::start(bin, small_db, small_docs, seed)?;
    let mut large = Subject::start(bin, large_db, large_docs, seed)?;
    let mut rounds = Vec::with_capacity(ROUNDS);
    for round in 0..ROUNDS {
        let pair = if round % 2 == 0 {
            let s = small.round()?;
            (s, large.round()?)
        } else {
            let l = large.round()?;
            (small.round()?, l)
        };
        rounds.push(pair);
    }
    small.server.stop()?;
    large.server.stop()?;
    Ok(SideBySide {
        small_docs,
        large_docs,
        rounds,
    })
}

impl SideBySide {
    /// The median over rounds of the large size's cost ÷ the small one's.
    fn ratio(&self, cost: impl Fn(&Costs) -> f64) -> f64 {
        percentile_ms(
            &self
                .rounds
                .iter()
                .map(|(s, l)| cost(l) / cost(s))
                .collect::<Vec<_>>(),
            50.0,
        )
    }

    /// The median over rounds of one size's cost.
    fn typical(&self, large: bool, cost: impl Fn(&Costs) -> f64) -> f64 {
        let costs: Vec<f64> = self
            .rounds
            .iter()
            .map(|(s, l)| cost(if large { l } else { s }))
            .collect();
        percentile_ms(&costs, 50.0)
    }

    /// Whether these are the sizes `small` and `large`.
    pub fn compares(&self, small: usize, large: usize) -> bool {
        (self.small_docs, self.large_docs) == (small, large)
    }

    /// The page ratio the target judges: the end page's, the dearer one.
    pub fn page_ratio(&self) -> f64 {
        self.ratio(|c| c.page_end_us)
    }

    pub fn read_ratio(&self) -> f64 {
        self.ratio(|c| c.read_us)
    }

    pub fn rows(&self) -> Vec<Row> {
        let costs: [(&str, Cost, bool); 3] = [
            ("page of 100 at the start", |c| c.page_start_us, false),
            ("page of 100 at the end", |c| c.page_end_us, true),
            (
                "`resources/read` p50, random documents",
                |c| c.read_us,
                true,
            ),
        ];
        costs
            .iter()
            .map(|(what, cost, judged)| {
                let ratio = self.ratio(cost);
                let per_round: Vec<String> = self
                    .rounds
                    .iter()
                    .map(|(s, l)| format!("{:.2}", cost(l) / cost(s)))
                    .collect();
                Row {
                    unit: "µs",
                    figure: format!(
                        "{what}, {} beside {} documents, {ROUNDS} alternated rounds (raw: the smaller)",
                        self.large_docs, self.small_docs
                    ),
                    raw: Some(self.typical(false, cost)),
                    orchestra: Ok(self.typical(true, cost)),
                    ratio: format!("{ratio:.2}×"),
                    target: if *judged {
                        format!("≤ {TARGET}× the smaller")
                    } else {
                        String::new()
                    },
                    meets: judged.then_some(ratio <= TARGET),
                    why: format!("rounds: {}", per_round.join(", ")),
                }
            })
            .collect()
    }

    pub fn to_json(&self) -> Value {
        let costs = |c: &Costs| {
            json!({
                "page_start_us": c.page_start_us,
                "page_end_us": c.page_end_us,
                "read_p50_us": c.read_us,
            })
        };
        json!({
            "small_docs": self.small_docs,
            "large_docs": self.large_docs,
            "page_end_ratio": self.page_ratio(),
            "read_ratio": self.read_ratio(),
            "rounds": self.rounds.iter().map(|(s, l)| json!({"small": costs(s), "large": costs(l)})).collect::<Vec<_>>(),
        })
    }
}
