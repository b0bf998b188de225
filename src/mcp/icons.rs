//! Icons (SEP-973): one small SVG per prefix and one for orchestra itself, shipped inside the binary and served as `data:` URIs, never as network addresses.
//!
//! A listing repeats its prefix's icon on every resource, so each byte of
//! an icon is paid once per listed resource. The SVGs in `assets/icons/`
//! are minimized by hand (filled shapes on a grid of 12, no stroke
//! attributes, single quotes, no newline at the end), and each `data:` URI
//! is the shorter of the SVG escaped as a URI requires and its base64,
//! chosen once per icon.

use std::sync::LazyLock;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use percent_encoding::{AsciiSet, CONTROLS, utf8_percent_encode};
use rmcp::model::Icon;

use crate::doc::Prefix;

const ORCHESTRA: &str = include_str!("../../assets/icons/orchestra.svg");
const FEATURES: &str = include_str!("../../assets/icons/features.svg");
const NOTES: &str = include_str!("../../assets/icons/notes.svg");
const DOCS: &str = include_str!("../../assets/icons/docs.svg");

const MIME_TYPE: &str = "image/svg+xml";

/// What a `data:` URI must escape to stay a URI (RFC 2397 over RFC 3986's
/// grammar; the MCP schema declares `src` a `uri`): controls and every byte
/// outside ASCII, `%` (the body is percent-decoded), `#` (it would start a
/// fragment), and the characters no URI holds raw: the space, `"`, `<`,
/// `>`, `\`, `^`, `` ` ``, `{`, `|`, `}`. The SVGs are written to need few:
/// `'` quotes, commas between numbers, one space between attributes.
const DATA_URL: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'<')
    .add(b'>')
    .add(b'\\')
    .add(b'^')
    .add(b'`')
    .add(b'{')
    .add(b'|')
    .add(b'}');

/// `svg` as a `data:` URI: escaped, or in base64 when that is shorter
/// (ties go to the escaped form, which a person can read).
fn data_uri(svg: &str) -> String {
    let escaped = format!("data:{MIME_TYPE},{}", utf8_percent_encode(svg, DATA_URL));
    let base64 = format!("data:{MIME_TYPE};base64,{}", STANDARD.encode(svg));
    if base64.len() < escaped.len() {
        base64
    } else {
        escaped
    }
}

fn icon(svg: &str) -> Icon {
    Icon::new(data_uri(svg))
        .with_mime_type(MIME_TYPE)
        .with_sizes(vec!["any".to_string()])
}

static SERVER: LazyLock<Vec<Icon>> = LazyLock::new(|| vec![icon(ORCHESTRA)]);
static PREFIXES: LazyLock<[Vec<Icon>; 3]> =
    LazyLock::new(|| [vec![icon(DOCS)], vec![icon(FEATURES)], vec![icon(NOTES)]]);

/// orchestra's own icon, for `serverInfo`.
pub fn server() -> Vec<Icon> {
    SERVER.clone()
}

/// The icon of every document (and template) of `prefix`.
pub fn of(prefix: Prefix) -> Vec<Icon> {
    let index = match prefix {
        Prefix::Docs => 0,
        Prefix::Features => 1,
        Prefix::Notes => 2,
    };
    PREFIXES[index].clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The most bytes a prefix's icon URI may take: each listed resource
    /// carries one. The URIs measure 143 (features), 158 (docs) and 164
    /// (notes) bytes escaped for RFC 3986, 263–319 before the SVGs were
    /// minimized.
    const PREFIX_BUDGET: usize = 165;
    /// orchestra's own (once per `serverInfo`): 183 bytes, 353 before.
    const SERVER_BUDGET: usize = 185;

    /// The SVG a `data:` URI carries, decoded from either form.
    fn decode(src: &str) -> String {
        if let Some(base64) = src.strip_prefix("data:image/svg+xml;base64,") {
            String::from_utf8(STANDARD.decode(base64).unwrap()).unwrap()
        } else {
            let escaped = src
                .strip_prefix("data:image/svg+xml,")
                .unwrap_or_else(|| panic!("not an SVG data: URI: {src}"));
            percent_encoding::percent_decode_str(escaped)
                .decode_utf8()
                .unwrap()
                .into_owned()
        }
    }

    #[track_caller]
    fn check(icons: Vec<Icon>, svg: &str, budget: usize) {
        assert_eq!(icons.len(), 1);
        let icon = &icons[0];
        assert!(
            icon.src.len() <= budget,
            "{} bytes, budget {budget}: {}",
            icon.src.len(),
            icon.src
        );
        assert_eq!(icon.mime_type.as_deref(), Some(MIME_TYPE));
        assert_eq!(icon.sizes.as_deref(), Some(&["any".to_string()][..]));
        // The URI decodes back to the very SVG shipped, which has nothing
        // around it to pay for and points nowhere else.
        assert_eq!(decode(&icon.src), svg);
        assert_eq!(svg, svg.trim(), "whitespace around the SVG");
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"), "{svg}");
        assert!(!svg.contains("href"), "no links in an icon");
        // Nothing a data: URL must escape is left raw.
        let body = icon.src.split_once(',').unwrap().1;
        assert!(
            body.bytes()
                .all(|b| b.is_ascii() && !b.is_ascii_control() && !b" \"#<>\\^`{|}".contains(&b)),
            "{body}"
        );
        // An escaped URI is chosen only when base64 is not shorter.
        let base64 = "data:image/svg+xml;base64,".len() + STANDARD.encode(svg).len();
        assert!(icon.src.len() <= base64, "base64 is shorter: {base64}");
    }

    #[test]
    fn icons_are_small_data_uris_of_the_shipped_svgs() {
        check(of(Prefix::Docs), DOCS, PREFIX_BUDGET);
        check(of(Prefix::Features), FEATURES, PREFIX_BUDGET);
        check(of(Prefix::Notes), NOTES, PREFIX_BUDGET);
        check(server(), ORCHESTRA, SERVER_BUDGET);
        let all = [
            of(Prefix::Docs),
            of(Prefix::Features),
            of(Prefix::Notes),
            server(),
        ];
        let distinct: std::collections::HashSet<&str> =
            all.iter().map(|i| i[0].src.as_str()).collect();
        assert_eq!(distinct.len(), 4);
    }

    #[test]
    fn a_data_uri_is_the_shorter_form() {
        // Mostly characters to escape: base64 wins; plain text: escaped.
        let hashes = "<svg>############</svg>";
        assert_eq!(
            data_uri(hashes),
            format!("data:image/svg+xml;base64,{}", STANDARD.encode(hashes))
        );
        let plain = format!("<svg a='b,c'>#é{}</svg>", "x".repeat(40));
        assert_eq!(
            data_uri(&plain),
            format!(
                "data:image/svg+xml,%3Csvg%20a='b,c'%3E%23%C3%A9{}%3C/svg%3E",
                "x".repeat(40)
            )
        );
        assert_eq!(decode(&data_uri(&plain)), plain);
        assert_eq!(decode(&data_uri(hashes)), hashes);
    }
}
