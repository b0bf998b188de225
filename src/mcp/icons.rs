//! Icons (SEP-973): one small SVG per prefix and one for orchestra itself, shipped inside the binary and served as `data:` URIs, never as network addresses.

use std::sync::LazyLock;

use percent_encoding::{AsciiSet, CONTROLS, utf8_percent_encode};
use rmcp::model::Icon;

use crate::doc::Prefix;

const ORCHESTRA: &str = include_str!("../../assets/icons/orchestra.svg");
const FEATURES: &str = include_str!("../../assets/icons/features.svg");
const NOTES: &str = include_str!("../../assets/icons/notes.svg");
const DOCS: &str = include_str!("../../assets/icons/docs.svg");

/// What a `data:` URI must escape: controls, and the characters that end or
/// confuse a URI (`"` `#` `%` `<` `>` and the space). An SVG escaped so is
/// smaller than in base64, and readable.
const DATA_URI: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'<')
    .add(b'>');

fn icon(svg: &str) -> Icon {
    let svg = svg.trim();
    Icon::new(format!(
        "data:image/svg+xml,{}",
        utf8_percent_encode(svg, DATA_URI)
    ))
    .with_mime_type("image/svg+xml")
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

    #[test]
    fn icons_are_small_data_uris() {
        let all = Prefix::ALL
            .into_iter()
            .map(of)
            .chain([server()])
            .collect::<Vec<_>>();
        for icons in &all {
            assert_eq!(icons.len(), 1);
            let icon = &icons[0];
            assert!(icon.src.starts_with("data:image/svg+xml,"), "{}", icon.src);
            assert!(icon.src.len() < 1024, "{} bytes", icon.src.len());
            assert_eq!(icon.mime_type.as_deref(), Some("image/svg+xml"));
            assert_eq!(icon.sizes.as_deref(), Some(&["any".to_string()][..]));
            // The URI decodes back to the SVG, and points nowhere else.
            let svg =
                percent_encoding::percent_decode_str(&icon.src["data:image/svg+xml,".len()..])
                    .decode_utf8()
                    .unwrap();
            assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"), "{svg}");
            assert!(!svg.contains("href"), "no links in an icon");
        }
        let distinct: std::collections::HashSet<&str> =
            all.iter().map(|i| i[0].src.as_str()).collect();
        assert_eq!(distinct.len(), 4);
    }
}
