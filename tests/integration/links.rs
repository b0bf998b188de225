//! Links between documents on the real binary: a generated project with links of every kind planted (and the same text in code, which must not count) against what the test planted, backlinks through edits, renames and removals, broken links made whole, and the upgrade of a database from before links.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::cli::{check, run};
use crate::support::{Db, Project, on_postgres};

/// A link the test plants: the kind of spelling, and its target's key.
#[derive(Clone, Copy, Debug)]
enum Kind {
    /// `[text](orchestra://KEY)`
    Uri,
    /// `<orchestra://KEY>`
    Autolink,
    /// `[text](RELATIVE.md#part)`, relative to the linking document.
    Relative,
    /// `[text](/KEY.md)`, from the project's root.
    Rooted,
    /// The target's id written bare (its id has a mention's shape).
    Mention,
}

/// A project the test writes: each document's planted links, in order.
type Plants = BTreeMap<String, Vec<(Kind, String)>>;

/// A small deterministic generator (splitmix64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// The documents: features with mentionable ids, notes in a folder, ADRs.
fn keys() -> Vec<String> {
    let mut keys = Vec::new();
    for i in 1..=8 {
        keys.push(format!("features/FEAT-{i:03}"));
        keys.push(format!("notes/team/note-{i}"));
        keys.push(format!("docs/adr/{i:04}"));
    }
    keys.push("docs/tasks/TASK-0061".into());
    keys
}

/// `to` as a path relative to the folder of `from` (both keys).
fn relative(from: &str, to: &str) -> String {
    let from_dirs: Vec<&str> = from.split('/').collect();
    let from_dirs = &from_dirs[..from_dirs.len() - 1];
    let to_parts: Vec<&str> = to.split('/').collect();
    let common = from_dirs
        .iter()
        .zip(&to_parts)
        .take_while(|(a, b)| a == b)
        .count();
    let mut path: Vec<String> = vec!["..".to_string(); from_dirs.len() - common];
    path.extend(to_parts[common..].iter().map(|s| s.to_string()));
    format!("{}.md", path.join("/"))
}

fn plant(rng: &mut Rng, keys: &[String], from: &str) -> Vec<(Kind, String)> {
    let mentionable: Vec<&String> = keys
        .iter()
        .filter(|k| k.starts_with("features/") || k.contains("TASK-"))
        .collect();
    let mut links = Vec::new();
    for _ in 0..rng.below(6) {
        let kind = [
            Kind::Uri,
            Kind::Autolink,
            Kind::Relative,
            Kind::Rooted,
            Kind::Mention,
        ][rng.below(5)];
        let target = match kind {
            Kind::Mention => mentionable[rng.below(mentionable.len())].clone(),
            // Now and then, a document that does not exist.
            _ if rng.below(8) == 0 => format!("features/FEAT-9{:02}", rng.below(3)),
            _ => keys[rng.below(keys.len())].clone(),
        };
        if target != from {
            links.push((kind, target));
        }
    }
    links
}

/// The text of a document with `links`, one a line, between lines that
/// hold the same spellings in code, an image, another site and a mention
/// of an id no document has: none of those count. The expected links:
/// (line, target, mention, text).
fn render(from: &str, links: &[(Kind, String)]) -> (String, Vec<(u32, String, bool, String)>) {
    let mut text = format!("---\ntitle: {from}\nsee: FEAT-001\n---\n# {from}\n\n");
    let mut line = 7;
    let mut expected = Vec::new();
    for (i, (kind, target)) in links.iter().enumerate() {
        let id = target.rsplit('/').next().unwrap();
        let label = format!("link {i}");
        let (written, shown) = match kind {
            Kind::Uri => (format!("[{label}](orchestra://{target})"), label),
            Kind::Autolink => (
                format!("<orchestra://{target}>"),
                format!("orchestra://{target}"),
            ),
            Kind::Relative => (format!("[{label}]({}#part)", relative(from, target)), label),
            Kind::Rooted => (format!("[{label}](/{target}.md)"), label),
            Kind::Mention => (id.to_string(), id.to_string()),
        };
        text.push_str(&format!(
            "Line {i}: {written}, not `{written}` nor ![img](/{target}.md) nor [web](https://x.org/{id}.md) nor ZZZ-404.\n"
        ));
        expected.push((line, target.clone(), matches!(kind, Kind::Mention), shown));
        line += 1;
        text.push_str(&format!("\n```\n{written}\n```\n\n"));
        line += 5;
    }
    (text, expected)
}

fn write(p: &Project, plants: &Plants) {
    for (key, links) in plants {
        p.file(&format!("{key}.md"), render(key, links).0);
    }
}

fn json_lines(p: &Project, args: &[&str]) -> Vec<Value> {
    let out = run(p, args);
    assert!(matches!(out.code, Some(0 | 1)), "{args:?}: {out:?}");
    out.stdout_lines()
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// What `orchestra links --json` must say of every document of `plants`.
fn expected_links(plants: &Plants) -> BTreeMap<String, (Vec<Value>, Vec<Value>)> {
    let mut all: BTreeMap<String, (Vec<Value>, Vec<Value>)> = BTreeMap::new();
    for (key, links) in plants {
        let (_, expected) = render(key, links);
        let mut seen = Vec::new();
        for (line, target, mention, text) in expected {
            // One link per target and line; a mention names the document.
            if seen.contains(&(line, target.clone())) {
                continue;
            }
            seen.push((line, target.clone()));
            let exists = plants.contains_key(&target);
            if mention && !exists {
                continue;
            }
            all.entry(key.clone()).or_default().0.push(json!({
                "direction": "out", "line": line, "target": format!("orchestra://{target}"),
                "exists": exists, "mention": mention, "text": text,
            }));
            if exists {
                all.entry(target.clone()).or_default().1.push(json!({
                    "direction": "in", "source": format!("orchestra://{key}"), "line": line,
                    "mention": mention,
                }));
            }
        }
    }
    all
}

/// Checks every document's links and backlinks against `plants`.
#[track_caller]
fn assert_links(p: &Project, plants: &Plants) {
    let expected = expected_links(plants);
    for key in plants.keys() {
        let (out, incoming) = expected.get(key).cloned().unwrap_or_default();
        assert_eq!(
            json_lines(p, &["links", key, "--out", "--json"]),
            out,
            "links of {key}"
        );
        let got: Vec<Value> = json_lines(p, &["links", key, "--in", "--json"])
            .into_iter()
            .map(|mut l| {
                let o = l.as_object_mut().unwrap();
                assert!(o.remove("text").is_some() && o.remove("context").is_some());
                l
            })
            .collect();
        assert_eq!(got, incoming, "backlinks of {key}");
    }
}

#[test]
fn planted_links_of_every_kind_are_found_and_none_in_code() {
    let p = Project::new();
    let keys = keys();
    let mut rng = Rng(34);
    let mut plants: Plants = keys
        .iter()
        .map(|k| (k.clone(), plant(&mut rng, &keys, k)))
        .collect();
    write(&p, &plants);
    p.import(&[]).assert_success();
    assert_links(&p, &plants);

    // Edits: a third of the documents get new links.
    for key in keys.iter().step_by(3) {
        let links = plant(&mut rng, &keys, key);
        plants.insert(key.clone(), links);
    }
    write(&p, &plants);
    p.import(&[]).assert_success();
    assert_links(&p, &plants);

    // A rename: the links to the old key break, the document's own links
    // come from the new key.
    let (old, new) = ("docs/adr/0003", "docs/adr/0003-renamed");
    p.rename(&format!("{old}.md"), &format!("{new}.md"));
    let links = plants.remove(old).unwrap();
    let moved: Vec<(Kind, String)> = links
        .into_iter()
        // Relative links were written from the old place: the same folder.
        .collect();
    p.file(&format!("{new}.md"), render(new, &moved).0);
    plants.insert(new.to_string(), moved);
    // A removal, of a document that mentions and is mentioned.
    p.remove("features/FEAT-002.md");
    plants.remove("features/FEAT-002");
    p.import(&[]).assert_success();
    assert_links(&p, &plants);

    // The broken links become whole when their targets are imported.
    let broken: Vec<String> = expected_links(&plants)
        .values()
        .flat_map(|(out, _)| out)
        .filter(|l| l["exists"] == false)
        .map(|l| {
            l["target"]
                .as_str()
                .unwrap()
                .trim_start_matches("orchestra://")
                .to_string()
        })
        .collect();
    assert!(!broken.is_empty(), "the generator planted no broken link");
    for target in &broken {
        p.file(&format!("{target}.md"), format!("# {target}\n"));
        plants.insert(target.clone(), Vec::new());
    }
    p.file("features/FEAT-002.md", "# Back\n");
    plants.insert("features/FEAT-002".into(), Vec::new());
    p.import(&[]).assert_success();
    assert_links(&p, &plants);
    assert!(
        expected_links(&plants)
            .values()
            .all(|(out, _)| out.iter().all(|l| l["exists"] == true))
    );
}

#[test]
fn links_from_the_terminal() {
    let p = Project::new();
    p.file(
        "features/FEAT-001.md",
        "# Sync\n\nBlocked by TASK-0061; see [the ADR](../docs/adr/0006.md).\n[Gone](FEAT-404.md)\n",
    );
    p.file("docs/adr/0006.md", "# ADR\n\nFor FEAT-001 and FEAT-001.\n");
    p.file("docs/tasks/TASK-0061.md", "# Task\n");
    p.import(&[]).assert_success();
    let f = "orchestra://features/FEAT-001";
    // In a pipe: one row a link, fields two spaces apart.
    check(
        &p,
        &["links", "features/FEAT-001"],
        0,
        &[
            &format!("out  {f}:3  orchestra://docs/tasks/TASK-0061  TASK-0061"),
            &format!("out  {f}:3  orchestra://docs/adr/0006  the ADR"),
            &format!("out  {f}:4  orchestra://features/FEAT-404 (missing)  Gone"),
            &format!("in  orchestra://docs/adr/0006:3  {f}  For FEAT-001 and FEAT-001."),
        ],
        &[],
    );
    check(
        &p,
        &["links", "docs/tasks/TASK-0061", "--out"],
        1,
        &[],
        &["orchestra: no links in orchestra://docs/tasks/TASK-0061"],
    );
    check(
        &p,
        &["links", "features/FEAT-009"],
        1,
        &[],
        &[
            "orchestra: no document features/FEAT-009",
            "did you mean: features/FEAT-001",
        ],
    );
    let out = run(&p, &["links", "features/FEAT-001", "--in", "--out"]);
    assert_eq!(out.code, Some(2), "{out:?}");
}

#[test]
fn a_database_from_before_links_gets_them_on_the_next_import() {
    let p = Project::new();
    p.file("notes/a.md", "# A\n\nSee [b](b.md) and FEAT-001.\n");
    p.file("notes/b.md", "# B\n");
    p.file("features/FEAT-001.md", "# F\n");
    // Large enough for a stored outline (migration 0019).
    p.file(
        "docs/large.md",
        format!("# Large\n\n{}\n## End\n", "words. ".repeat(40_000)),
    );
    p.import(&[]).assert_success();
    // The database as orchestra left it before links: schema 15, without
    // the tables of 0016 to 0020.
    let before = 15;
    let set_version = match on_postgres() {
        true => format!("UPDATE orchestra_schema SET version = {before}"),
        false => format!("PRAGMA user_version = {before}"),
    };
    Db::writable(&p.db()).batch(&format!(
        "DROP TABLE links; DROP TABLE names; DROP TABLE skipped; DROP TABLE moves; DROP TABLE outlines; \
         DROP TABLE api_keys; {set_version}"
    ));
    let out = run(&p, &["links", "notes/a"]);
    assert_eq!(
        out.code,
        Some(2),
        "read-only commands do not upgrade: {out:?}"
    );
    let out = p.import(&[]);
    out.assert_success();
    if !on_postgres() {
        assert!(
            out.stderr.contains(&format!(
                "upgrading the database from schema {before} to {} (4 documents)",
                crate::cli::migrations()
            )),
            "{out:?}"
        );
    }
    let links: Vec<String> = json_lines(&p, &["links", "notes/a", "--out", "--json"])
        .iter()
        .map(|l| l["target"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        links,
        ["orchestra://notes/b", "orchestra://features/FEAT-001"]
    );
    // The large document's outline, and only its.
    let mut db = Db::open(&p.db());
    assert_eq!(db.int("SELECT count(*) FROM outlines", &[]), 1);
    assert_eq!(
        db.int("SELECT count(*) FROM outlines WHERE id = 'large'", &[]),
        1
    );
    drop(db);
    // Made small, it has none; large again, one; removed, none.
    let count = || Db::open(&p.db()).int("SELECT count(*) FROM outlines", &[]);
    p.file("docs/large.md", "# Small now\n");
    p.import(&[]).assert_success();
    assert_eq!(count(), 0);
    p.file(
        "docs/large.md",
        format!("# Large\n\n{}\n", "again. ".repeat(40_000)),
    );
    p.import(&[]).assert_success();
    assert_eq!(count(), 1);
    p.remove("docs/large.md");
    p.import(&[]).assert_success();
    assert_eq!(count(), 0);
}
