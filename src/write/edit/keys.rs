//! The `frontmatter` edit: a block's top-level keys found line by line, rewritten as one `KEY: VALUE` line each (values written as YAML that reads back as the same JSON), and the block read again to prove it.

use serde_json::{Map, Value};

use super::BOM;
use crate::frontmatter::{self, Extracted};

/// A key the `frontmatter` edit may name.
pub(super) fn plain_key(key: &str) -> bool {
    !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

/// The frontmatter block of `text`: where its YAML starts, and where its
/// closing line starts.
fn block(text: &str) -> Option<(usize, usize)> {
    let (yaml, _) = frontmatter::split(text)?;
    let bom = if text.starts_with(BOM) { BOM.len() } else { 0 };
    let start = bom + text[bom..].find('\n')? + 1;
    Some((start, start + yaml.len()))
}

/// One top-level entry of a frontmatter block: its key (`None` for one this
/// module does not read), the bytes of its lines, and where its key's
/// colon ends and its first line's text ends.
#[derive(Debug)]
struct Entry {
    key: Option<String>,
    start: usize,
    end: usize,
    colon: usize,
    line_end: usize,
}

/// The top-level entries of the YAML between `from` and `to`.
fn entries(text: &str, from: usize, to: usize) -> Vec<Entry> {
    let mut found: Vec<Entry> = Vec::new();
    let mut open = false;
    let mut pos = from;
    while pos < to {
        let end = text[pos..to].find('\n').map_or(to, |i| pos + i + 1);
        let line = text[pos..end].trim_end_matches(['\n', '\r']);
        if line.trim().is_empty() {
            // A blank line belongs to an entry only when the entry goes on.
        } else if line.starts_with([' ', '\t'])
            || line == "-"
            || line.starts_with("- ")
            || line.starts_with("-\t")
        {
            if open && let Some(entry) = found.last_mut() {
                entry.end = end;
            }
        } else if line.starts_with('#') {
            open = false;
        } else {
            let key = key_of(line);
            let mapping = key.is_some()
                || line.contains(": ")
                || line.contains(":\t")
                || line.ends_with(':')
                || line.starts_with('?');
            if !mapping && open {
                // The rest of a flow collection or scalar begun above.
                if let Some(entry) = found.last_mut() {
                    entry.end = end;
                }
                pos = end;
                continue;
            }
            let (key, colon) = match key {
                Some((key, colon)) => (Some(key), pos + colon),
                None => (None, pos),
            };
            found.push(Entry {
                key,
                start: pos,
                end,
                colon,
                line_end: pos + line.len(),
            });
            open = true;
        }
        pos = end;
    }
    found
}

/// The key of a mapping line at column 0 (plain, `"double"` or `'single'`
/// quoted without escapes) and where its colon ends.
fn key_of(line: &str) -> Option<(String, usize)> {
    let (key, rest_at) = match line.as_bytes().first()? {
        quote @ (b'"' | b'\'') => {
            let close = line[1..].find(*quote as char)? + 1;
            let key = &line[1..close];
            if key.contains(['\\', '"', '\'']) {
                return None;
            }
            (key, close + 1)
        }
        b'?' | b'[' | b'{' | b'&' | b'*' | b'!' | b'|' | b'>' | b'%' | b'@' | b'`' | b'-' => {
            return None;
        }
        _ => {
            let colon = line
                .match_indices(':')
                .map(|(i, _)| i)
                .find(|&i| matches!(line.as_bytes().get(i + 1), None | Some(b' ' | b'\t')))?;
            (line[..colon].trim_end_matches([' ', '\t']), colon)
        }
    };
    let after = &line[rest_at..];
    let spaces = after.len() - after.trim_start_matches([' ', '\t']).len();
    let colon = rest_at + spaces;
    if line.as_bytes().get(colon) != Some(&b':')
        || !matches!(line.as_bytes().get(colon + 1), None | Some(b' ' | b'\t'))
        || key.is_empty()
    {
        return None;
    }
    Some((key.to_string(), colon + 1))
}

/// The comment at the end of an entry's first line (from the blanks before
/// its `#`), if any: outside quotes, which open only where a value or a
/// flow item starts.
fn line_comment(value: &str) -> Option<usize> {
    let bytes = value.as_bytes();
    let mut quote: Option<u8> = None;
    let mut item_start = true;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        match quote {
            Some(b'"') if b == b'\\' => i += 1,
            Some(q) if b == q => {
                if q == b'\'' && bytes.get(i + 1) == Some(&b'\'') {
                    i += 1;
                } else {
                    quote = None;
                }
            }
            Some(_) => {}
            None => {
                if (b == b' ' || b == b'\t') && bytes.get(i + 1) == Some(&b'#') {
                    let value = value[..i].trim_end_matches([' ', '\t']);
                    return Some(value.len());
                }
                if item_start && (b == b'"' || b == b'\'') {
                    quote = Some(b);
                }
                if !(b == b' ' || b == b'\t') {
                    item_start = matches!(b, b'[' | b'{' | b',' | b':');
                }
            }
        }
        i += 1;
    }
    None
}

pub(super) fn set_frontmatter(
    text: &str,
    keys: &[(String, Option<Value>)],
    eol: &str,
) -> Result<String, String> {
    let before = match block(text) {
        Some(_) => match frontmatter::extract(text) {
            Extracted {
                frontmatter: Some(Value::Object(map)),
                ..
            } => map,
            Extracted { warning, .. } => {
                return Err(format!(
                    "the frontmatter block cannot be edited by keys: {}; fix the block with a replace edit, or write the whole document",
                    warning.unwrap_or_else(|| "it is not a mapping".to_string())
                ));
            }
        },
        None => Map::new(),
    };
    let mut expected = before.clone();
    for (key, value) in keys {
        match value {
            Some(value) => expected.insert(key.clone(), value.clone()),
            None => expected.remove(key),
        };
    }
    if expected == before {
        // Only keys already absent removed, or values already there: no
        // byte changes.
        return Ok(text.to_string());
    }
    let mut text = text.to_string();
    if block(&text).is_none() {
        let bom = if text.starts_with(BOM) { BOM.len() } else { 0 };
        text.insert_str(bom, &format!("---{eol}---{eol}"));
    }
    for (key, value) in keys {
        let (from, to) = block(&text).expect("the block is there");
        let all = entries(&text, from, to);
        let mine: Vec<&Entry> = all
            .iter()
            .filter(|e| e.key.as_deref() == Some(key.as_str()))
            .collect();
        let mut pieces: Vec<(usize, usize, String)> = Vec::new();
        match value {
            Some(value) => {
                let value = yaml_value(value, false);
                match mine.split_first() {
                    Some((first, rest)) => {
                        let comment = line_comment(&text[first.colon..first.line_end])
                            .map_or("", |at| &text[first.colon + at..first.line_end]);
                        let line =
                            format!("{} {value}{comment}{eol}", &text[first.start..first.colon]);
                        pieces.push((first.start, first.end, line));
                        pieces.extend(rest.iter().map(|e| (e.start, e.end, String::new())));
                    }
                    None => {
                        pieces.push((to, to, format!("{}: {value}{eol}", yaml_string(key, false))))
                    }
                }
            }
            None => pieces.extend(mine.iter().map(|e| (e.start, e.end, String::new()))),
        }
        for (start, end, with) in pieces.into_iter().rev() {
            text.replace_range(start..end, &with);
        }
    }
    let after = frontmatter::extract(&text).frontmatter;
    if after != Some(Value::Object(expected.clone())) {
        let differ: Vec<&str> = keys
            .iter()
            .map(|(key, _)| key.as_str())
            .filter(|key| after.as_ref().and_then(|a| a.get(key)) != expected.get(*key))
            .collect();
        return Err(format!(
            "the frontmatter block would not read back as asked{}; edit the block with a replace edit instead",
            if differ.is_empty() {
                " (other keys would change)".to_string()
            } else {
                format!(" (keys {})", differ.join(", "))
            }
        ));
    }
    Ok(text)
}

/// `value` as YAML on one line; `flow` inside a flow collection.
pub(super) fn yaml_value(value: &Value, flow: bool) -> String {
    match value {
        Value::Null => "null".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => yaml_string(s, flow),
        Value::Array(items) => format!(
            "[{}]",
            items
                .iter()
                .map(|v| yaml_value(v, true))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Value::Object(map) => format!(
            "{{{}}}",
            map.iter()
                .map(|(k, v)| format!("{}: {}", yaml_string(k, true), yaml_value(v, true)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// A string as YAML: plain when every reader takes it for that string, else
/// double-quoted.
fn yaml_string(s: &str, flow: bool) -> String {
    if plain_string(s, flow) {
        s.to_string()
    } else {
        double_quoted(s)
    }
}

/// Words that YAML 1.1 or 1.2 readers take for something else than a
/// string, compared in lower case.
const RESERVED: &[&str] = &[
    "null", "~", "true", "false", "yes", "no", "on", "off", "y", "n", "=", "<<", "nan", "inf",
    "infinity",
];

fn plain_string(s: &str, flow: bool) -> bool {
    let Some(first) = s.chars().next() else {
        return false;
    };
    s.trim() == s
        && s.chars().all(|c| printable(c) && c != '\t')
        && !"-?:,[]{}#&*!|>'\"%@`+.".contains(first)
        && !first.is_ascii_digit()
        && !RESERVED.contains(&s.to_lowercase().as_str())
        && !s.contains(": ")
        && !s.contains(" #")
        && !s.ends_with(':')
        && !(flow && s.contains([',', '[', ']', '{', '}', ':', '#']))
}

/// A character YAML writes as itself: printable, and no line break or BOM.
fn printable(c: char) -> bool {
    matches!(c as u32, 0x20..=0x7E | 0xA0..=0xD7FF | 0xE000..=0xFFFD | 0x10000..)
        && !matches!(c, '\u{2028}' | '\u{2029}' | '\u{FEFF}')
}

fn double_quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\0' => out.push_str("\\0"),
            c if printable(c) => out.push(c),
            c if (c as u32) <= 0xFF => out.push_str(&format!("\\x{:02X}", c as u32)),
            c if (c as u32) <= 0xFFFF => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push_str(&format!("\\U{:08X}", c as u32)),
        }
    }
    out.push('"');
    out
}
