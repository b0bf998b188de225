//! The synthetic backlog: the deterministic path and bytes of every document, the words planted for search, writing N of them, and rewriting 1%.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;
use std::time::Instant;

use crate::Res;
use crate::rng::Rng;

/// Body vocabulary, split on spaces (a few non-ASCII words on purpose).
const WORDS: &str = "the backlog feature user should be able to import export search filter notes document server client request response latency cache \
    index page cursor listing resource template migration schema database transaction commit rollback error retry timeout config option default value and \
    or with without when then given a an of in on for is are must may not every team release milestone sprint review design naïve über café déjà-vu façade rôle";
const TAGS: &str =
    "api ui backend frontend perf security docs infra mcp import search ux tech-debt";
const STATUSES: &str = "open in-progress review done blocked";

fn split(text: &'static str) -> Vec<&'static str> {
    text.split_whitespace().collect()
}
static WORD_LIST: LazyLock<Vec<&str>> = LazyLock::new(|| split(WORDS));
static TAG_LIST: LazyLock<Vec<&str>> = LazyLock::new(|| split(TAGS));
static STATUS_LIST: LazyLock<Vec<&str>> = LazyLock::new(|| split(STATUSES));

/// Words planted in bodies for the search figures, none of them in `WORDS`:
/// each rare word in as many documents as `RARE_DOCS` says, spread over the
/// backlog.
pub const RARE_WORDS: [&str; 3] = ["quokka", "zeppelin", "xylograph"];
pub const RARE_DOCS: [usize; 3] = [1, 5, 10];
/// Planted in about half of the documents (a coin flip per document).
pub const HALF_WORD: &str = "meridian";
/// The PRNG stream of the planting, apart from the documents' own streams so
/// that planting changes no other byte choice.
const PLANT_STREAM: u64 = 0x9_1A47;

/// The words planted in document `i` of `n`: the same for every variant of
/// the document, so rewrites keep the hit counts.
pub fn planted(i: usize, n: usize, seed: u64) -> Vec<&'static str> {
    let mut words = Vec::new();
    for (k, (&word, &docs)) in RARE_WORDS.iter().zip(&RARE_DOCS).enumerate() {
        if (0..docs).any(|m| (m * n / docs + 1 + 7 * k) % n == i) {
            words.push(word);
        }
    }
    if Rng::new(seed ^ PLANT_STREAM, i as u64).below(2) == 0 {
        words.push(HALF_WORD);
    }
    words
}

/// The path (below the backlog root, `/`-separated) of document `i`.
pub fn doc_path(i: usize, rng: &mut Rng) -> String {
    match i % 10 {
        0..=2 if i % 1000 == 500 => format!("features/FEAT-{i:07}-ü"),
        0..=2 => format!("features/FEAT-{i:07}"),
        3..=5 if i % 1000 == 3 => format!("notes/café-{i}"),
        3..=5 if i % 5000 == 13 => format!("notes/メモ-{i}"),
        3 | 4 => format!("notes/note-{i:07}"),
        5 => format!("notes/team-{}/note-{i:07}", rng.below(8)),
        _ if i % 1000 == 7 => format!("docs/área-{}/résumé-{i}", rng.below(20)),
        _ => format!(
            "docs/area-{:02}/topic-{}/page-{i:07}",
            rng.below(20),
            rng.below(10)
        ),
    }
}

/// Every folder `doc_path` can produce, so generation never has to create one.
fn all_folders() -> Vec<String> {
    let mut dirs = vec!["features".to_string(), "notes".to_string()];
    for t in 0..8 {
        dirs.push(format!("notes/team-{t}"));
    }
    for a in 0..20 {
        dirs.push(format!("docs/área-{a}"));
        for t in 0..10 {
            dirs.push(format!("docs/area-{a:02}/topic-{t}"));
        }
    }
    dirs
}

fn words(rng: &mut Rng, out: &mut String, count: usize) {
    for k in 0..count {
        if k > 0 {
            out.push(' ');
        }
        out.push_str(rng.pick(&WORD_LIST));
    }
}

/// The bytes of document `i` of `n`; `variant` > 0 gives the same document
/// rewritten (the same planted words in other text).
pub fn doc_text(i: usize, n: usize, variant: u64, seed: u64, rng: &mut Rng, path: &str) -> String {
    let plant = planted(i, n, seed);
    // The paragraph the planted words end (0 to 2: every body has more).
    let plant_at = Rng::new(seed ^ PLANT_STREAM ^ variant, i as u64).below(3);
    let mut body_rng = Rng::new(seed ^ variant.wrapping_mul(0x1234_5678_9ABC_DEF1), i as u64);
    let rng = if variant == 0 { rng } else { &mut body_rng };
    let target = 1500 + rng.below(1000);
    let mut text = String::with_capacity(target + 200);
    let mut title = format!("{} {i}: ", path.split('/').next().unwrap_or("doc"));
    let title_words = 3 + rng.below(5);
    words(rng, &mut title, title_words);
    if variant > 0 {
        write!(title, " (rev {variant})").unwrap();
    }
    if rng.below(10) != 0 {
        text.push_str("---\ntitle: \"");
        text.push_str(&title);
        text.push_str("\"\ndescription: \"");
        let n = 8 + rng.below(12);
        words(rng, &mut text, n);
        text.push_str("\"\nstatus: ");
        text.push_str(rng.pick(&STATUS_LIST));
        text.push_str("\ntags: [");
        for k in 0..1 + rng.below(4) {
            if k > 0 {
                text.push_str(", ");
            }
            text.push_str(rng.pick(&TAG_LIST));
        }
        text.push_str("]\n---\n");
    }
    text.push_str("# ");
    text.push_str(&title);
    text.push_str("\n\n");
    let mut paragraph = 0;
    while text.len() < target {
        let count = 20 + rng.below(40);
        words(rng, &mut text, count);
        if paragraph == plant_at {
            for word in &plant {
                text.push(' ');
                text.push_str(word);
            }
        }
        paragraph += 1;
        text.push_str(".\n\n");
    }
    if paragraph <= plant_at && !plant.is_empty() {
        text.push_str(&plant.join(" "));
        text.push_str(".\n");
    }
    text
}

pub struct Backlog {
    pub tmp: tempfile::TempDir,
    pub root: PathBuf,
    pub project: PathBuf,
    pub bytes: u64,
    pub seconds: f64,
}

/// Writes N documents, on as many threads as there are cores; the bytes
/// depend only on the seed and N.
pub fn generate(n: usize, seed: u64, parent: Option<&Path>) -> Res<Backlog> {
    let started = Instant::now();
    let tmp = match parent {
        Some(dir) => tempfile::Builder::new()
            .prefix("orchestra-bench-")
            .tempdir_in(dir)?,
        None => tempfile::Builder::new()
            .prefix("orchestra-bench-")
            .tempdir()?,
    };
    let root = tmp.path().to_path_buf();
    let project = root.join("project");
    for dir in all_folders() {
        fs::create_dir_all(project.join(dir))?;
    }
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let bytes = std::thread::scope(|scope| -> Res<u64> {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let project = &project;
                scope.spawn(move || -> std::io::Result<u64> {
                    let mut bytes = 0;
                    for i in (t..n).step_by(threads) {
                        let mut rng = Rng::new(seed, i as u64);
                        let path = doc_path(i, &mut rng);
                        let text = doc_text(i, n, 0, seed, &mut rng, &path);
                        fs::write(project.join(format!("{path}.md")), &text)?;
                        bytes += text.len() as u64;
                    }
                    Ok(bytes)
                })
            })
            .collect();
        let mut total = 0;
        for handle in handles {
            total += handle.join().map_err(|_| "generator thread panicked")??;
        }
        Ok(total)
    })?;
    Ok(Backlog {
        tmp,
        root,
        project,
        bytes,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// Rewrites the bodies of 1% of the documents (every 100th) as `variant`
/// (1 and up; each call with a new variant changes them again); returns how
/// many.
pub fn touch_one_percent(backlog: &Backlog, n: usize, seed: u64, variant: u64) -> Res<usize> {
    let mut changed = 0;
    for i in (37..n).step_by(100) {
        let mut rng = Rng::new(seed, i as u64);
        let path = doc_path(i, &mut rng);
        let text = doc_text(i, n, variant, seed, &mut rng, &path);
        fs::write(backlog.project.join(format!("{path}.md")), text)?;
        changed += 1;
    }
    Ok(changed)
}

/// Rewrites every document as `variant` (a new body and title), on as many
/// threads as there are cores; returns how many.
pub fn rewrite_all(backlog: &Backlog, n: usize, seed: u64, variant: u64) -> Res<usize> {
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let project = &backlog.project;
    std::thread::scope(|scope| -> Res<()> {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                scope.spawn(move || -> std::io::Result<()> {
                    for i in (t..n).step_by(threads) {
                        let mut rng = Rng::new(seed, i as u64);
                        let path = doc_path(i, &mut rng);
                        let text = doc_text(i, n, variant, seed, &mut rng, &path);
                        fs::write(project.join(format!("{path}.md")), text)?;
                    }
                    Ok(())
                })
            })
            .collect();
        for handle in handles {
            handle.join().map_err(|_| "rewriter thread panicked")??;
        }
        Ok(())
    })?;
    Ok(n)
}
