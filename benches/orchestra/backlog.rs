//! The synthetic backlog: the deterministic path and bytes of every document, the words planted for search, the links between documents, writing N of them, rewriting 1%, and the 5 MB manual of the tools' figures.

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

/// The document that [`backlinkers`] link to: `features/FEAT-0000000`.
pub const LINKED: usize = 0;
/// The PRNG stream of the links, apart from the documents' own streams so
/// that links change no other byte choice.
const LINK_STREAM: u64 = 0x11_4C5;

/// How many documents link to [`LINKED`]: 1,000, or a tenth of a smaller
/// backlog.
pub fn backlinkers(n: usize) -> usize {
    (n / 10).min(1000)
}

/// The link sentence of document `i` of `n` (at `path`), if it has one: the
/// same for every variant of the document, so rewrites keep the links.
///
/// The [`backlinkers`] (every `n / count`-th document from 1) link to
/// [`LINKED`], alternately by a bare mention of its id and by a relative
/// Markdown link. Every other document, with its own dice: a third mention
/// a random feature's id, a sixth hold a relative link to a random
/// document; never to [`LINKED`], so that its backlinks are exactly
/// [`backlinkers`].
fn links_of(i: usize, n: usize, seed: u64, path: &str) -> Option<String> {
    // `../` up to the project root from the document's folder.
    let up = "../".repeat(path.matches('/').count());
    let relative = |j: usize, text: &str| {
        let target = doc_path(j, &mut Rng::new(seed, j as u64));
        format!("[{text}]({up}{target}.md)")
    };
    let count = backlinkers(n);
    let stride = n / count.max(1);
    if i % stride == 1 && i / stride < count {
        return Some(match (i / stride) % 2 {
            0 => format!("Blocked by FEAT-{LINKED:07} until it ships."),
            _ => format!(
                "See {} for the plan.",
                relative(LINKED, "the parent feature")
            ),
        });
    }
    let mut rng = Rng::new(seed ^ LINK_STREAM, i as u64);
    let (mention, link) = (rng.below(3) == 0, rng.below(6) == 0);
    // A feature other than LINKED and the one with a non-ASCII id.
    let feature = loop {
        let j = 10 * rng.below(n.div_ceil(10)) + rng.below(3);
        if j != LINKED && j < n && j != i && j % 1000 != 500 {
            break j;
        }
    };
    let other = loop {
        let j = rng.below(n);
        if j != LINKED && j != i {
            break j;
        }
    };
    match (mention, link) {
        (false, false) => None,
        (true, false) => Some(format!("Depends on FEAT-{feature:07}.")),
        (false, true) => Some(format!("Background in {}.", relative(other, "this page"))),
        (true, true) => Some(format!(
            "Depends on FEAT-{feature:07}; background in {}.",
            relative(other, "this page")
        )),
    }
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
    let links = links_of(i, n, seed, path);
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
        if paragraph == 1
            && let Some(links) = &links
        {
            text.push_str(links);
            text.push_str("\n\n");
        }
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

/// Where the manual goes below the project (`orchestra://docs/bench/manual`).
pub const MANUAL_PATH: &str = "docs/bench/manual";
/// The manual's size, in bytes (at least).
pub const MANUAL_BYTES: usize = 5_000_000;
const CHAPTERS: usize = 100;
const SECTIONS: usize = 5;

/// A long document: its text, and the headings of its `###` sections (each
/// unique: `read`'s `section` names one by its text alone).
pub struct Manual {
    pub text: String,
    pub sections: Vec<String>,
    /// Headings of every level.
    pub headings: usize,
}

/// A 5 MB manual: frontmatter, a title, 100 `##` chapters of 5 `###`
/// sections of ~10 KB each (paragraphs, a list, a fenced code block whose
/// `# comment` lines are no headings, now and then a mention of a feature).
pub fn manual(seed: u64) -> Manual {
    let mut rng = Rng::new(seed ^ 0x3A_4E_A1, 0);
    let mut text = String::with_capacity(MANUAL_BYTES + 64 * 1024);
    text.push_str("---\ntitle: \"The operations manual\"\nstatus: open\ntags: [docs, ops]\n---\n");
    text.push_str("# The operations manual\n\n");
    let mut sections = Vec::with_capacity(CHAPTERS * SECTIONS);
    for c in 1..=CHAPTERS {
        text.push_str(&format!("## Chapter {c}: "));
        words(&mut rng, &mut text, 3);
        text.push_str("\n\n");
        for s in 1..=SECTIONS {
            let mut heading = format!("Section {c}.{s}: ");
            words(&mut rng, &mut heading, 3);
            text.push_str("### ");
            text.push_str(&heading);
            text.push_str("\n\n");
            sections.push(heading);
            // Each section ends where its share of the whole does.
            let end = MANUAL_BYTES * sections.len() / (CHAPTERS * SECTIONS);
            let mut paragraph = 0;
            while text.len() < end {
                match paragraph % 6 {
                    2 => {
                        for _ in 0..4 {
                            text.push_str("- ");
                            words(&mut rng, &mut text, 8);
                            text.push('\n');
                        }
                    }
                    4 => {
                        text.push_str("```sh\n# ");
                        words(&mut rng, &mut text, 6);
                        text.push_str("\norchestra import . --json\n```\n");
                    }
                    _ => {
                        let count = 40 + rng.below(60);
                        words(&mut rng, &mut text, count);
                        if rng.below(20) == 0 {
                            write!(text, " (FEAT-{:07})", 10 * (1 + rng.below(90))).unwrap();
                        }
                        text.push_str(".\n");
                    }
                }
                text.push('\n');
                paragraph += 1;
            }
        }
    }
    Manual {
        text,
        sections,
        headings: 1 + CHAPTERS * (1 + SECTIONS),
    }
}
