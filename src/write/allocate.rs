//! The id a `create` under a folder gets: the next number in the folder's pattern (`FEAT-012` → `FEAT-013`), else a slug of the title.
//!
//! Pure but for [`names_in`], which reads a folder. The caller holds the
//! project's write lock from reading the names to creating the file (which
//! also refuses an existing name), so concurrent creates get distinct ids.

use std::collections::HashMap;
use std::io;
use std::path::Path;

use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::is_combining_mark;

/// The longest slug made of a title, in bytes.
pub const MAX_SLUG_LEN: usize = 80;

/// The next name in a folder whose documents are named `names` (file stems,
/// the last id segment only, e.g. `["FEAT-001", "FEAT-012", "notes"]`):
/// - when some names are numbered, `LETTERS-DIGITS` (`FEAT-012` →
///   `FEAT-013`) or `DIGITS` / `DIGITS-slug` (`0006-offline-sync` →
///   `0007-` and the slug of `title`, or `0007` without one): the pattern is
///   the one most names follow (ties: the one with the highest number), the
///   number one more than its highest, zero-padded to the width of that
///   highest (`FEAT-999` → `FEAT-1000`). Names that start with a date
///   (`2024-05-01-standup`) are not numbered;
/// - else the slug of `title` (lowercase ASCII letters, digits and `-`,
///   accents folded, at most [`MAX_SLUG_LEN`] bytes), with `-2`, `-3`… when
///   taken;
/// - else `None`: no title, or one with no letter or digit that folds to
///   ASCII (the caller asks for a uri).
///
/// A name is taken when a name in `names` equals it ignoring ASCII case
/// (one file on a case-insensitive filesystem).
pub fn next_name(names: &[&str], title: Option<&str>) -> Option<String> {
    let taken = |name: &str| names.iter().any(|n| n.eq_ignore_ascii_case(name));
    let slug = title.map(slug).filter(|s| !s.is_empty());
    if let Some(pattern) = most_common_pattern(names) {
        let mut number = pattern.highest.checked_add(1)?;
        loop {
            let digits = format!("{number:0width$}", width = pattern.width);
            let name = match (pattern.letters, &slug) {
                (Some(letters), _) => format!("{letters}-{digits}"),
                (None, Some(slug)) => format!("{digits}-{slug}"),
                (None, None) => digits,
            };
            if !taken(&name) {
                return Some(name);
            }
            number = number.checked_add(1)?;
        }
    }
    let slug = slug?;
    if !taken(&slug) {
        return Some(slug);
    }
    (2u64..).find_map(|n| {
        let suffix = format!("-{n}");
        let name = format!("{}{suffix}", cut(&slug, MAX_SLUG_LEN - suffix.len()));
        (!taken(&name)).then_some(name)
    })
}

/// The names of the Markdown documents directly in `folder` (file stems of
/// `*.md`, hidden ones and names that are not UTF-8 skipped, as import
/// skips them), sorted. A folder named `x.md` counts too: no file can take
/// its name. A missing folder has none.
pub fn names_in(folder: &Path) -> io::Result<Vec<String>> {
    let entries = match std::fs::read_dir(folder) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut names = Vec::new();
    for entry in entries {
        let name = entry?.file_name();
        let Some(name) = name.to_str() else { continue };
        if name.starts_with('.') {
            continue;
        }
        if let Some(stem) = name.strip_suffix(".md").filter(|s| !s.is_empty()) {
            names.push(stem.to_string());
        }
    }
    names.sort_unstable();
    Ok(names)
}

/// One numbered name: its letters (`None` for `DIGITS` / `DIGITS-slug`),
/// its number and the number's width as written.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Numbered<'a> {
    letters: Option<&'a str>,
    number: u64,
    width: usize,
}

/// A pattern of a folder: how many names follow it, its highest number and
/// that number's width.
struct Pattern<'a> {
    letters: Option<&'a str>,
    count: usize,
    highest: u64,
    width: usize,
}

fn most_common_pattern<'a>(names: &[&'a str]) -> Option<Pattern<'a>> {
    let mut patterns: HashMap<Option<&str>, Pattern> = HashMap::new();
    for numbered in names.iter().filter_map(|name| numbered(name)) {
        let pattern = patterns.entry(numbered.letters).or_insert(Pattern {
            letters: numbered.letters,
            count: 0,
            highest: 0,
            width: 0,
        });
        pattern.count += 1;
        if pattern.count == 1
            || (numbered.number, numbered.width) > (pattern.highest, pattern.width)
        {
            pattern.highest = numbered.number;
            pattern.width = numbered.width;
        }
    }
    patterns.into_values().max_by(|a, b| {
        (a.count, a.highest)
            .cmp(&(b.count, b.highest))
            // Still tied: an order that does not depend on the hash map's.
            .then_with(|| b.letters.cmp(&a.letters))
    })
}

/// `LETTERS-DIGITS` (ASCII letters), `DIGITS` or `DIGITS-slug`; a number
/// too large for 64 bits or a date is not one.
fn numbered(name: &str) -> Option<Numbered<'_>> {
    let digits_at = |s: &str| s.bytes().take_while(u8::is_ascii_digit).count();
    let letters_len = name.bytes().take_while(u8::is_ascii_alphabetic).count();
    let (letters, rest) = if letters_len > 0 {
        (
            Some(&name[..letters_len]),
            name[letters_len..].strip_prefix('-')?,
        )
    } else {
        (None, name)
    };
    let width = digits_at(rest);
    if width == 0 {
        return None;
    }
    let after = &rest[width..];
    let fits = match letters {
        Some(_) => after.is_empty(),
        None => after.is_empty() || (after.len() > 1 && after.starts_with('-')),
    };
    if !fits || (letters.is_none() && starts_with_date(name)) {
        return None;
    }
    let number = rest[..width].parse().ok()?;
    Some(Numbered {
        letters,
        number,
        width,
    })
}

/// `YYYY-MM-DD` at the start of `name`, not followed by another digit.
fn starts_with_date(name: &str) -> bool {
    let b = name.as_bytes();
    let digit = |i: usize| b.get(i).is_some_and(u8::is_ascii_digit);
    (0..4).all(digit)
        && b.get(4) == Some(&b'-')
        && (5..7).all(digit)
        && b.get(7) == Some(&b'-')
        && (8..10).all(digit)
        && !digit(10)
}

/// The slug of `title`: ASCII letters (lowercased) and digits kept, accents
/// and compatibility forms folded (`é` → `e`, `ﬁ` → `fi`, `ß` → `ss`),
/// apostrophes dropped, every other run of characters one `-`, none at
/// either end; cut to [`MAX_SLUG_LEN`] bytes at a `-` where there is one.
/// Empty when nothing in the title folds to ASCII.
pub fn slug(title: &str) -> String {
    let mut slug = String::with_capacity(title.len().min(MAX_SLUG_LEN + 8));
    // A run of other characters since the last letter or digit.
    let mut gap = false;
    for ch in title.nfkd() {
        if is_combining_mark(ch) || matches!(ch, '\'' | '\u{2019}' | '\u{02BC}') {
            continue;
        }
        let mut ascii = [0; 4];
        let text: &str = if ch.is_ascii_alphanumeric() {
            ch.to_ascii_lowercase().encode_utf8(&mut ascii)
        } else if let Some(folded) = fold(ch) {
            folded
        } else {
            gap = true;
            continue;
        };
        if gap && !slug.is_empty() {
            slug.push('-');
        }
        gap = false;
        slug.push_str(text);
        if slug.len() > MAX_SLUG_LEN {
            break;
        }
    }
    cut(&slug, MAX_SLUG_LEN).to_string()
}

/// Letters without a decomposition that still have a plain ASCII spelling.
fn fold(ch: char) -> Option<&'static str> {
    Some(match ch {
        'ß' | 'ẞ' => "ss",
        'æ' | 'Æ' => "ae",
        'œ' | 'Œ' => "oe",
        'ø' | 'Ø' => "o",
        'đ' | 'Đ' | 'ð' | 'Ð' => "d",
        'ł' | 'Ł' => "l",
        'þ' | 'Þ' => "th",
        'ı' => "i",
        'ħ' | 'Ħ' => "h",
        'ŧ' | 'Ŧ' => "t",
        _ => return None,
    })
}

/// `slug` cut to at most `max` bytes, at its last `-` within them when it
/// has one, without a `-` at the end.
fn cut(slug: &str, max: usize) -> &str {
    if slug.len() <= max {
        return slug.trim_end_matches('-');
    }
    let head = &slug[..max];
    let head = if slug.as_bytes()[max] == b'-' {
        head
    } else {
        head.rfind('-').map_or(head, |dash| &head[..dash])
    };
    head.trim_end_matches('-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(names: &[&str], title: Option<&str>, expected: Option<&str>) {
        assert_eq!(
            next_name(names, title).as_deref(),
            expected,
            "next_name({names:?}, {title:?})"
        );
    }

    #[test]
    fn next_names() {
        let long_title = "word ".repeat(30);
        let long_slug = ["word"; 16].join("-");
        let long_2 = format!("{}-2", ["word"; 15].join("-"));
        let cases: &[(&[&str], Option<&str>, Option<&str>)] = &[
            // LETTERS-DIGITS.
            (&["TASK-003"], None, Some("TASK-004")),
            (&["FEAT-001", "FEAT-012", "notes"], None, Some("FEAT-013")),
            (&["FEAT-001", "FEAT-012"], Some("A title"), Some("FEAT-013")),
            (&["FEAT-999"], None, Some("FEAT-1000")),
            (&["FEAT-999", "FEAT-1000"], None, Some("FEAT-1001")),
            (&["FEAT-1", "FEAT-2"], None, Some("FEAT-3")),
            (&["FEAT-0009"], None, Some("FEAT-0010")),
            (&["task-7"], None, Some("task-8")),
            (&["FEAT-000"], None, Some("FEAT-001")),
            // DIGITS and DIGITS-slug.
            (
                &["0006-offline-sync"],
                Some("Conflict resolution"),
                Some("0007-conflict-resolution"),
            ),
            (&["0006-offline-sync"], None, Some("0007")),
            (&["0001", "0002"], None, Some("0003")),
            (&["0001", "0002"], Some("Next"), Some("0003-next")),
            (&["0001-a", "0005", "0003-c"], Some("x"), Some("0006-x")),
            (&["9-nine"], Some("ten"), Some("10-ten")),
            (&["0006-x"], Some("!!!"), Some("0007")),
            // The most common pattern; ties to the highest number.
            (&["FEAT-001", "FEAT-002", "BUG-010"], None, Some("FEAT-003")),
            (&["FEAT-001", "BUG-010"], None, Some("BUG-011")),
            (&["FEAT-020", "0001-a", "0002-b"], Some("T"), Some("0003-t")),
            (&["FEAT-002", "0001-a"], Some("T"), Some("FEAT-003")),
            (
                &["FEAT-001", "feat-002", "feat-003"],
                None,
                Some("feat-004"),
            ),
            // Mixed folders: other names do not count, but are not taken again.
            (
                &["FEAT-001", "README", "index", "roadmap"],
                None,
                Some("FEAT-002"),
            ),
            (
                &["FEAT-001", "FEAT-002", "feat-003"],
                None,
                Some("FEAT-004"),
            ),
            (
                &["0001-a", "2024-05-01-standup", "2024-06-01"],
                Some("x"),
                Some("0002-x"),
            ),
            // Not numbered.
            (
                &["2024-05-01-standup", "2024-06-01"],
                Some("Retro"),
                Some("retro"),
            ),
            (
                &["FEAT-001-login", "v2", "a-1b", "FEAT-", "-12", "12-"],
                Some("T"),
                Some("t"),
            ),
            (&["99999999999999999999"], Some("Big"), Some("big")),
            (&["0006-x"], None, Some("0007")),
            // Slugs of titles.
            (&[], Some("Offline sync"), Some("offline-sync")),
            (
                &["notes"],
                Some("Café crème: déjà vu!"),
                Some("cafe-creme-deja-vu"),
            ),
            (
                &[],
                Some("Straße & Œuvre, Łódź"),
                Some("strasse-oeuvre-lodz"),
            ),
            (&[], Some("Don't panic"), Some("dont-panic")),
            (&[], Some("  --Hello,   World--  "), Some("hello-world")),
            (&[], Some("ﬁle Ｖ２"), Some("file-v2")),
            (&[], Some("C++ / Rust (2026)"), Some("c-rust-2026")),
            (&[], Some("Ünïcödé"), Some("unicode")),
            (&[], Some(".hidden"), Some("hidden")),
            (&[], Some("../../etc/passwd"), Some("etc-passwd")),
            // Slug collisions.
            (
                &["offline-sync"],
                Some("Offline sync"),
                Some("offline-sync-2"),
            ),
            (
                &["offline-sync", "offline-sync-2"],
                Some("Offline sync"),
                Some("offline-sync-3"),
            ),
            (
                &["Offline-Sync"],
                Some("offline sync"),
                Some("offline-sync-2"),
            ),
            (&[], Some(&long_title), Some(&long_slug)),
            (&[&long_slug], Some(&long_title), Some(&long_2)),
            // Nothing to go on.
            (&[], None, None),
            (&["notes", "ideas"], None, None),
            (&[], Some(""), None),
            (&[], Some("日本語"), None),
            (&[], Some("!!! ???"), None),
        ];
        for (names, title, expected) in cases {
            check(names, *title, *expected);
        }
    }

    #[test]
    fn slugs_are_short_and_plain() {
        for title in [
            "word ".repeat(40),
            "x".repeat(200),
            "é".repeat(200),
            format!("{} tail", "a".repeat(79)),
            format!("{}-b", "a".repeat(80)),
        ] {
            let s = slug(&title);
            assert!(s.len() <= MAX_SLUG_LEN, "{s}");
            assert!(!s.starts_with('-') && !s.ends_with('-'), "{s}");
            assert!(
                s.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'),
                "{s}"
            );
        }
        assert_eq!(slug(&"word ".repeat(40)).len(), 79);
        assert_eq!(slug(&format!("{} tail", "a".repeat(79))), "a".repeat(79));
        assert_eq!(slug(&format!("{}-b", "a".repeat(80))), "a".repeat(80));
        assert_eq!(slug(&"x".repeat(200)), "x".repeat(80));
    }

    #[test]
    fn names_are_read_from_disk() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("tasks");
        assert_eq!(names_in(&folder).unwrap(), Vec::<String>::new());
        for file in [
            "TASK-001.md",
            "TASK-003.md",
            "notes.txt",
            ".TASK-099.md",
            ".orchestra-write-abc",
            ".md",
            "sub/TASK-050.md",
            "taken.md/inner.md",
        ] {
            let path = folder.join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, "x").unwrap();
        }
        let names = names_in(&folder).unwrap();
        assert_eq!(names, ["TASK-001", "TASK-003", "taken"]);
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        assert_eq!(next_name(&names, None).as_deref(), Some("TASK-004"));
    }
}
