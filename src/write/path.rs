//! The file of a document key, and the checks that keep every write inside the project folder and importable as that key.
//!
//! [`file_of`] is the inverse of import's mapping (`import::walk`: the file
//! `root/{prefix}/{id}.md` is the key `(prefix, id)`): the id's segments
//! become folders and the last one the file name. An id is refused when its
//! file would land outside `root/{prefix}`, would not be imported (hidden,
//! not UTF-8 on disk, too long a name), or would import as another key.
//! [`check_no_symlinks`] then refuses a path through a symbolic link, which
//! could lead anywhere. Messages are one line each, for the agent.
//!
//! Writes happen under the project's lock, so the only thing that can change
//! a checked path before the write is another program: a folder swapped for
//! a symlink in between is not caught here.

use std::fmt;
use std::path::{Component, Path, PathBuf};

use unicode_normalization::UnicodeNormalization;

use crate::doc::{DocKey, MAX_ID_LEN, is_valid_id};

/// The longest file or folder name, in bytes (Linux, macOS and Windows
/// filesystems alike).
pub const MAX_NAME_LEN: usize = 255;

/// What import adds to an id's last segment to make its file name.
const EXTENSION: &str = ".md";

/// Characters that look like `/` and are no path separator: a name with
/// one reads as a path it is not.
const SLASH_LOOKALIKES: &[char] = &[
    '\u{FF0F}', // ／ fullwidth solidus
    '\u{2215}', // ∕ division slash
    '\u{2044}', // ⁄ fraction slash
    '\u{29F8}', // ⧸ big solidus
    '\u{2571}', // ╱ box drawings light diagonal
    '\u{27CB}', // ⟋ mathematical rising diagonal
];

/// Characters that look like `\`, the separator of Windows paths.
const BACKSLASH_LOOKALIKES: &[char] = &[
    '\u{FF3C}', // ＼ fullwidth reverse solidus
    '\u{29F5}', // ⧵ reverse solidus operator
    '\u{29F9}', // ⧹ big reverse solidus
    '\u{FE68}', // ﹨ small reverse solidus
    '\u{2572}', // ╲ box drawings light diagonal
    '\u{27CD}', // ⟍ mathematical falling diagonal
];

/// Invisible characters that reorder the text around them: a name with one
/// shows as another name.
const BIDI_CONTROLS: &[char] = &[
    '\u{200E}', '\u{200F}', '\u{202A}', '\u{202B}', '\u{202C}', '\u{202D}', '\u{202E}', '\u{2066}',
    '\u{2067}', '\u{2068}', '\u{2069}',
];

/// Why a document cannot be written at a path: a one-line message for the agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathError(pub String);

impl fmt::Display for PathError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PathError {}

fn refuse(key: &DocKey, why: impl fmt::Display) -> PathError {
    PathError(format!("cannot write {:?}: {why}", key.to_string()))
}

/// The file of `key` under the project folder `root`: `root/{prefix}/{id}.md`,
/// the inverse of import's mapping (a file this returns imports back as
/// `key`). Refused, with the reason: an empty id or one over
/// [`MAX_ID_LEN`] bytes; an empty, `.`, `..` or hidden (`.x`) segment; a
/// backslash, NUL, control character, line or paragraph separator, or
/// bidirectional control; a name over [`MAX_NAME_LEN`] bytes (the last
/// segment with `.md`); a segment that compatibility normalization (NFKC)
/// makes `.`, `..`, hidden, or a path with `/` or `\`, or that holds a
/// slash or backslash look-alike; an id already ending in `.md` (almost
/// always a file name given for an id: `FEAT-001.md` would be written as
/// `FEAT-001.md.md`); on Windows, also what Windows reads as something
/// else (`:`, `<>"|?*`, a trailing dot or space, `CON`, `NUL`, `COM1`…).
pub fn file_of(root: &Path, key: &DocKey) -> Result<PathBuf, PathError> {
    let id = key.id.as_str();
    if id.is_empty() {
        return Err(refuse(key, "the id is empty"));
    }
    if id.len() > MAX_ID_LEN {
        return Err(refuse(
            key,
            format!(
                "the id is {} bytes, longer than the {MAX_ID_LEN}-byte limit",
                id.len()
            ),
        ));
    }
    if let Some(ch) = id.chars().find(|&ch| forbidden_char(ch)) {
        return Err(refuse(key, format!("the id holds {}", describe(ch))));
    }
    let segments: Vec<&str> = id.split('/').collect();
    for (i, segment) in segments.iter().enumerate() {
        let last = i + 1 == segments.len();
        check_segment(segment, last).map_err(|why| refuse(key, why))?;
    }
    if id.ends_with(EXTENSION) {
        return Err(refuse(
            key,
            format!(
                "the id ends in {EXTENSION}: name the document without it (its file is the id plus {EXTENSION})"
            ),
        ));
    }
    if !is_valid_id(id) {
        return Err(refuse(key, "the id cannot name a document"));
    }

    let base = root.join(key.prefix.as_str());
    let mut file = base.clone();
    for segment in &segments[..segments.len() - 1] {
        file.push(segment);
    }
    file.push(format!("{}{EXTENSION}", segments[segments.len() - 1]));
    // Belt and braces: one plain name per segment, below the prefix folder.
    let below = file.strip_prefix(&base).ok().filter(|rel| {
        rel.components().count() == segments.len()
            && rel.components().all(|c| matches!(c, Component::Normal(_)))
    });
    if below.is_none() {
        return Err(refuse(key, "the id is not a path inside the project"));
    }
    Ok(file)
}

/// Characters refused anywhere in an id: none can be in a file name import
/// reads back as the same id on every system, or all of them mislead.
fn forbidden_char(ch: char) -> bool {
    ch == '\\'
        || ch.is_control()
        || matches!(ch, '\u{2028}' | '\u{2029}')
        || BIDI_CONTROLS.contains(&ch)
        || (cfg!(windows) && matches!(ch, ':' | '<' | '>' | '"' | '|' | '?' | '*'))
}

fn describe(ch: char) -> String {
    match ch {
        '\\' => "a backslash (\\), which is a path separator on Windows".to_string(),
        '\0' => "a NUL character".to_string(),
        ch if ch.is_control() => format!("the control character U+{:04X}", u32::from(ch)),
        ch if BIDI_CONTROLS.contains(&ch) => format!(
            "the invisible bidirectional control U+{:04X}",
            u32::from(ch)
        ),
        ch => format!("{ch:?} (U+{:04X})", u32::from(ch)),
    }
}

/// Why one `/`-separated segment of an id cannot be a file or folder name.
fn check_segment(segment: &str, last: bool) -> Result<(), String> {
    if segment.is_empty() {
        return Err("the id has an empty segment (a leading, trailing or doubled /)".to_string());
    }
    if segment == "." || segment == ".." {
        return Err(format!("the id has a {segment:?} segment"));
    }
    if segment.starts_with('.') {
        return Err(format!(
            "the segment {segment:?} starts with a dot: hidden files and folders are never imported"
        ));
    }
    let name_len = segment.len() + if last { EXTENSION.len() } else { 0 };
    if name_len > MAX_NAME_LEN {
        return Err(format!(
            "a segment makes a name of {name_len} bytes, longer than the {MAX_NAME_LEN}-byte limit of file names"
        ));
    }
    if let Some(ch) = segment
        .chars()
        .find(|ch| SLASH_LOOKALIKES.contains(ch) || BACKSLASH_LOOKALIKES.contains(ch))
    {
        return Err(format!(
            "the segment {segment:?} holds {ch:?} (U+{:04X}), which looks like a path separator",
            u32::from(ch)
        ));
    }
    let folded: String = segment.nfkc().collect();
    if folded == "." || folded == ".." || folded.starts_with('.') {
        return Err(format!(
            "the segment {segment:?} reads as {folded:?} once normalized (NFKC)"
        ));
    }
    if folded.contains(['/', '\\']) {
        return Err(format!(
            "the segment {segment:?} reads as a path ({folded:?}) once normalized (NFKC)"
        ));
    }
    if cfg!(windows) {
        check_windows_name(segment)?;
    }
    Ok(())
}

/// What Windows makes of a name other than the name: a trailing dot or
/// space is dropped, and the device names (with any extension) are devices.
fn check_windows_name(segment: &str) -> Result<(), String> {
    if segment.ends_with(['.', ' ']) {
        return Err(format!(
            "the segment {segment:?} ends in a dot or space, which Windows drops"
        ));
    }
    let stem = segment.split('.').next().unwrap_or(segment).trim_end();
    let device = matches!(
        stem.to_ascii_uppercase().as_str(),
        "CON" | "PRN" | "AUX" | "NUL" | "CONIN$" | "CONOUT$"
    ) || ["COM", "LPT"].iter().any(|dev| {
        let mut rest = stem.get(3..).unwrap_or("").chars();
        stem.get(..3)
            .is_some_and(|head| head.eq_ignore_ascii_case(dev))
            && matches!(rest.next(), Some('0'..='9' | '¹' | '²' | '³'))
            && rest.next().is_none()
    });
    if device {
        return Err(format!(
            "the segment {segment:?} is a device name on Windows"
        ));
    }
    Ok(())
}

/// Refuses a path through a symbolic link: every existing component from
/// `root` (exclusive) to `file` (inclusive) must be a real folder, and
/// `file`, if it exists, a regular file. A missing tail is fine: the write
/// creates it. `file` must lie below `root` (as [`file_of`] makes it).
pub fn check_no_symlinks(root: &Path, file: &Path) -> Result<(), PathError> {
    let shown = |path: &Path| {
        path.strip_prefix(root)
            .unwrap_or(path)
            .display()
            .to_string()
    };
    let rel = file
        .strip_prefix(root)
        .ok()
        .filter(|rel| rel.components().next().is_some())
        .ok_or_else(|| PathError(format!("{} is not inside the project", file.display())))?;
    let count = rel.components().count();
    let mut path = root.to_path_buf();
    for (i, component) in rel.components().enumerate() {
        let Component::Normal(name) = component else {
            return Err(PathError(format!(
                "{} is not a plain path inside the project",
                shown(file)
            )));
        };
        path.push(name);
        let meta = match std::fs::symlink_metadata(&path) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(PathError(format!("cannot check {}: {e}", shown(&path)))),
        };
        let is_file = i + 1 == count;
        if meta.file_type().is_symlink() {
            return Err(PathError(format!(
                "{} is a symbolic link: orchestra does not write through links",
                shown(&path)
            )));
        }
        if is_file && !meta.is_file() {
            return Err(PathError(format!("{} is not a regular file", shown(&path))));
        }
        if !is_file && !meta.is_dir() {
            return Err(PathError(format!("{} is not a folder", shown(&path))));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::Prefix;

    /// What `file_of` should make of an id: `Ok(path below root)` or a
    /// refusal whose message contains the text.
    type Expected = Result<String, &'static str>;

    #[track_caller]
    fn check(id: &str, expected: &Expected) {
        let root = Path::new("/project");
        let key = DocKey::new(Prefix::Docs, id);
        let got = file_of(root, &key);
        match (got, expected) {
            (Ok(path), Ok(want)) => {
                assert_eq!(path, root.join("docs").join(want), "{id:?}");
                assert!(path.starts_with(root.join("docs")), "{id:?}");
            }
            (Err(PathError(msg)), Err(want)) => {
                assert!(msg.contains(*want), "{id:?}: {msg:?} lacks {want:?}");
                assert!(!msg.contains('\n') && !msg.ends_with('.'), "{msg:?}");
            }
            (got, want) => panic!("{id:?}: got {got:?}, expected {want:?}"),
        }
    }

    #[test]
    fn ids_map_to_files_below_the_prefix() {
        let max_last = "a".repeat(MAX_NAME_LEN - 3);
        let max_folder = "f".repeat(MAX_NAME_LEN);
        let cases: Vec<(String, Expected)> = vec![
            ("FEAT-001".into(), Ok("FEAT-001.md".into())),
            ("adr/0006".into(), Ok("adr/0006.md".into())),
            ("café notes".into(), Ok("café notes.md".into())),
            ("日本/語".into(), Ok("日本/語.md".into())),
            ("a..b".into(), Ok("a..b.md".into())),
            ("...x".into(), Err("starts with a dot")),
            ("x...".into(), Ok("x....md".into())),
            ("%2e%2e".into(), Ok("%2e%2e.md".into())),
            ("a.md/b".into(), Ok("a.md/b.md".into())),
            ("readme.MD".into(), Ok("readme.MD.md".into())),
            ("x\u{200B}".into(), Ok("x\u{200B}.md".into())),
            (max_last.clone(), Ok(format!("{max_last}.md"))),
            (format!("{max_folder}/x"), Ok(format!("{max_folder}/x.md"))),
            // Refused.
            ("".into(), Err("the id is empty")),
            ("/etc/passwd".into(), Err("empty segment")),
            ("a/".into(), Err("empty segment")),
            ("a//b".into(), Err("empty segment")),
            ("..".into(), Err("\"..\" segment")),
            ("a/../../b".into(), Err("\"..\" segment")),
            (".".into(), Err("\".\" segment")),
            ("a/./b".into(), Err("\".\" segment")),
            (".hidden".into(), Err("starts with a dot")),
            ("a/.git/config".into(), Err("starts with a dot")),
            (".orchestra-write-x".into(), Err("starts with a dot")),
            ("a\\b".into(), Err("backslash")),
            ("..\\..\\x".into(), Err("backslash")),
            ("C:\\x".into(), Err("backslash")),
            ("nul\0".into(), Err("NUL")),
            ("line\nbreak".into(), Err("U+000A")),
            ("tab\there".into(), Err("U+0009")),
            ("del\u{7F}".into(), Err("U+007F")),
            ("c1\u{85}".into(), Err("U+0085")),
            ("ls\u{2028}".into(), Err("U+2028")),
            ("evil\u{202E}dm.exe".into(), Err("bidirectional")),
            (format!("{max_last}a"), Err("256 bytes")),
            (format!("{max_folder}f/x"), Err("256 bytes")),
            (
                "a/".repeat(MAX_ID_LEN / 2) + "b",
                Err("longer than the 1024-byte limit"),
            ),
            ("x.md".into(), Err("ends in .md")),
            ("adr/0006.md".into(), Err("ends in .md")),
            // Look-alikes and what NFKC makes of a segment.
            ("．．".into(), Err("reads as \"..\"")),
            ("．".into(), Err("reads as \".\"")),
            ("a/．．/b".into(), Err("reads as \"..\"")),
            ("\u{2025}".into(), Err("reads as \"..\"")),
            ("\u{2024}".into(), Err("reads as \".\"")),
            ("．hidden".into(), Err("reads as \".hidden\"")),
            ("a／b".into(), Err("looks like a path separator")),
            ("a∕b".into(), Err("looks like a path separator")),
            ("a⁄b".into(), Err("looks like a path separator")),
            ("a⧸b".into(), Err("looks like a path separator")),
            ("a＼b".into(), Err("looks like a path separator")),
            ("a﹨b".into(), Err("looks like a path separator")),
        ];
        for (id, expected) in &cases {
            check(id, expected);
        }
    }

    #[cfg(windows)]
    #[test]
    fn windows_names() {
        for id in [
            "a:b", "C:x", "CON", "con.txt", "x/COM1", "LPT9.log", "a.", "a ", "a?b",
        ] {
            assert!(
                file_of(Path::new("C:\\p"), &DocKey::new(Prefix::Docs, id)).is_err(),
                "{id}"
            );
        }
    }

    #[test]
    fn windows_device_names_are_recognised() {
        for name in [
            "CON", "con.txt", "Nul", "COM1", "lpt9.log", "COM²", "a.", "a ",
        ] {
            assert!(check_windows_name(name).is_err(), "{name}");
        }
        for name in ["CONS", "COM", "COM10", "console", "a.b", "nullable"] {
            assert!(check_windows_name(name).is_ok(), "{name}");
        }
    }

    /// What a client may send: every URI either does not parse, or names an
    /// id `file_of` refuses, or a harmless name strictly inside the prefix
    /// folder.
    #[test]
    fn hostile_uris() {
        enum Outcome {
            NoParse,
            Refused,
            Inside(&'static str),
        }
        use Outcome::*;
        let cases = [
            ("orchestra://docs/%2e%2e/x", NoParse),
            ("orchestra://docs/%2E%2E/x", NoParse),
            ("orchestra://docs/../x", NoParse),
            ("orchestra://docs/./x", NoParse),
            ("orchestra://docs/%2e", NoParse),
            ("orchestra://docs/a%2fb", NoParse),
            ("orchestra://docs/a%2Fb", NoParse),
            ("orchestra://docs/%2fetc%2fpasswd", NoParse),
            ("orchestra://docs//etc/passwd", NoParse),
            ("orchestra://docs/a/", NoParse),
            ("orchestra://docs/x%00", NoParse),
            ("orchestra://docs/x%00.md", NoParse),
            ("orchestra://docs/%c0%ae%c0%ae/x", NoParse),
            ("orchestra://docs/%e0%80%ae", NoParse),
            ("orchestra://docs/．．/x", NoParse),
            ("orchestra://docs/a\\b", NoParse),
            ("orchestra://docs/a b", NoParse),
            ("orchestra://docs/x?version=1", NoParse),
            ("orchestra://docs/x#frag", NoParse),
            ("orchestra://../docs/x", NoParse),
            ("file:///etc/passwd", NoParse),
            ("orchestra://docs/%5c..%5c..%5cx", Refused),
            ("orchestra://docs/..%5cx", Refused),
            ("orchestra://docs/C:%5cx", Refused),
            ("orchestra://docs/%EF%BC%8E%EF%BC%8E/x", Refused),
            ("orchestra://docs/%EF%BC%8E", Refused),
            ("orchestra://docs/a%EF%BC%8Fb", Refused),
            ("orchestra://docs/a%E2%88%95b", Refused),
            ("orchestra://docs/a%E2%81%84b", Refused),
            ("orchestra://docs/a%E2%A7%B8b", Refused),
            ("orchestra://docs/a%EF%BC%BCb", Refused),
            ("orchestra://docs/.hidden", Refused),
            ("orchestra://docs/%2ehidden", Refused),
            ("orchestra://docs/a/%2egit/config", Refused),
            ("orchestra://docs/...", Refused),
            ("orchestra://docs/x%0a", Refused),
            ("orchestra://docs/x%0d%0a", Refused),
            ("orchestra://docs/x%1b", Refused),
            ("orchestra://docs/x%7f", Refused),
            ("orchestra://docs/x%c2%85", Refused),
            ("orchestra://docs/x%e2%80%ae", Refused),
            ("orchestra://docs/FEAT-001.md", Refused),
            ("orchestra://docs/FEAT-001%2emd", Refused),
            // Decoded once, as every request is: a double encoding is a
            // literal name, harmless.
            ("orchestra://docs/%252e%252e", Inside("%2e%2e.md")),
            ("orchestra://docs/%252e%252e/x", Inside("%2e%2e/x.md")),
            ("orchestra://docs/a%252fb", Inside("a%2fb.md")),
            ("orchestra://docs/%2500", Inside("%00.md")),
            ("orchestra://docs/%255c", Inside("%5c.md")),
            ("orchestra://docs/..%2e", Refused),
            ("orchestra://docs/%2e%2e%2e", Refused),
            ("orchestra://docs/a..b", Inside("a..b.md")),
            ("orchestra://docs/caf%C3%A9", Inside("café.md")),
            ("ORCHESTRA://docs/%46EAT-001", Inside("FEAT-001.md")),
        ];
        let root = Path::new("/project");
        for (uri, outcome) in cases {
            let parsed = crate::uri::parse(uri);
            match (parsed, outcome) {
                (Err(_), NoParse) => {}
                (Ok(key), Refused) => {
                    assert!(file_of(root, &key).is_err(), "{uri}: {key:?} accepted");
                }
                (Ok(key), Inside(want)) => {
                    let file = file_of(root, &key).unwrap_or_else(|e| panic!("{uri}: {e}"));
                    let base = root.join(key.prefix.as_str());
                    assert_eq!(file, base.join(want), "{uri}");
                    let rel = file.strip_prefix(&base).unwrap();
                    assert!(
                        rel.components().all(|c| matches!(c, Component::Normal(_))),
                        "{uri}"
                    );
                }
                (parsed, _) => panic!("{uri}: unexpected {parsed:?}"),
            }
        }
    }

    /// Every id `file_of` accepts, written where it says, is imported back
    /// as exactly that key (through the real walk, as a dry run).
    #[test]
    fn accepted_ids_import_back_as_themselves() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let keys = [
            DocKey::new(Prefix::Features, "FEAT-001"),
            DocKey::new(Prefix::Docs, "adr/0006"),
            DocKey::new(Prefix::Docs, "adr"),
            DocKey::new(Prefix::Docs, "a.md/b"),
            DocKey::new(Prefix::Docs, "x..."),
            DocKey::new(Prefix::Docs, "%2e%2e"),
            DocKey::new(Prefix::Docs, "readme.MD"),
            DocKey::new(Prefix::Notes, "café notes"),
            DocKey::new(Prefix::Notes, "日本/語"),
            DocKey::new(Prefix::Notes, "a".repeat(MAX_NAME_LEN - 3)),
            DocKey::new(Prefix::Notes, "x\u{200B}y"),
        ];
        for key in &keys {
            let file = file_of(&root, key).unwrap();
            check_no_symlinks(&root, &file).unwrap();
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(&file, "# x\n").unwrap();
        }
        let report = crate::import::run(&crate::import::Options {
            dir: root.clone(),
            db: crate::store::Location::File(dir.path().join("never-made.sqlite")),
            dry_run: true,
            replace: false,
            max_file_size: crate::import::DEFAULT_MAX_FILE_SIZE,
            progress: false,
        })
        .unwrap();
        assert!(report.warnings.is_empty(), "{:?}", report.warnings);
        let mut imported: Vec<DocKey> = report.changes.into_iter().map(|(_, key)| key).collect();
        let mut expected = keys.to_vec();
        imported.sort();
        expected.sort();
        assert_eq!(imported, expected);
    }

    #[cfg(unix)]
    #[test]
    fn paths_through_symlinks_are_refused() {
        use std::os::unix::fs::symlink;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("p");
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(root.join("docs/real")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(root.join("docs/real/x.md"), "x").unwrap();
        std::fs::write(outside.join("secret.md"), "s").unwrap();
        symlink(&outside, root.join("docs/linked")).unwrap();
        symlink(outside.join("secret.md"), root.join("docs/file-link.md")).unwrap();
        symlink(dir.path().join("nowhere.md"), root.join("docs/dangling.md")).unwrap();
        symlink(root.join("docs/real"), root.join("docs/inside-link")).unwrap();
        std::fs::create_dir_all(root.join("features")).unwrap();
        std::fs::create_dir_all(root.join("docs/folder.md")).unwrap();
        std::fs::write(root.join("docs/plain"), "not a folder").unwrap();
        symlink(root.join("features"), root.join("notes")).unwrap();

        let cases: &[(&str, Result<(), &str>)] = &[
            ("docs/real/x.md", Ok(())),
            ("docs/real/new.md", Ok(())),
            ("docs/new/deeper/new.md", Ok(())),
            ("features/new.md", Ok(())),
            (
                "docs/linked/secret.md",
                Err("docs/linked is a symbolic link"),
            ),
            ("docs/linked/new.md", Err("docs/linked is a symbolic link")),
            (
                "docs/file-link.md",
                Err("docs/file-link.md is a symbolic link"),
            ),
            (
                "docs/dangling.md",
                Err("docs/dangling.md is a symbolic link"),
            ),
            (
                "docs/inside-link/x.md",
                Err("docs/inside-link is a symbolic link"),
            ),
            ("notes/x.md", Err("notes is a symbolic link")),
            (
                "docs/folder.md",
                Err("docs/folder.md is not a regular file"),
            ),
            ("docs/plain/x.md", Err("docs/plain is not a folder")),
        ];
        for (rel, expected) in cases {
            let got = check_no_symlinks(&root, &root.join(rel));
            match (got, expected) {
                (Ok(()), Ok(())) => {}
                (Err(PathError(msg)), Err(want)) => assert!(msg.contains(want), "{rel}: {msg}"),
                (got, want) => panic!("{rel}: got {got:?}, expected {want:?}"),
            }
        }
        assert!(check_no_symlinks(&root, &outside.join("secret.md")).is_err());
        assert!(check_no_symlinks(&root, &root).is_err());
        assert!(check_no_symlinks(&root, &root.join("docs/../../outside/x.md")).is_err());
    }
}
