//! A document's Markdown as safe HTML for the viewer: CommonMark with GFM tables, task lists and strikethrough, heading anchors and a table of contents, links to other documents resolved to viewer pages (or marked broken), bare mentions of an id (`FEAT-004`) made links to the documents the store resolved them to, and everything sanitized.
//!
//! pulldown-cmark passes raw HTML (`<script>`, `onerror=`, `javascript:`)
//! through untouched, so its output always goes through ammonia's allow-list
//! before it reaches a page; the page's Content-Security-Policy is the
//! second wall.

use std::collections::HashMap;
use std::sync::LazyLock;

use pulldown_cmark::{CowStr, Event, HeadingLevel, Options, Parser, Tag, TagEnd};

use crate::doc::DocKey;
use crate::links::{Target, resolve};
use crate::uri;

/// Heading ids in a rendered document start with this, so that a document
/// can never name (clobber) an element of the page around it.
pub const ID_PREFIX: &str = "md-";

/// One entry of a document's table of contents.
#[derive(Debug, Clone, PartialEq)]
pub struct Heading {
    pub level: u8,
    pub text: String,
    /// The element id, [`ID_PREFIX`] included.
    pub anchor: String,
}

/// A rendered document.
#[derive(Debug, Clone, PartialEq)]
pub struct Rendered {
    pub html: String,
    pub headings: Vec<Heading>,
}

/// The viewer's path of a document's page: `/doc/{prefix}/{id…}`, each id
/// segment percent-encoded as in its URI.
pub fn doc_path(key: &DocKey) -> String {
    format!("/doc/{}", uri_path(key))
}

/// `prefix/id` with the id percent-encoded as in the document's URI.
pub fn uri_path(key: &DocKey) -> String {
    uri::format(key)
        .strip_prefix(uri::SCHEME_PREFIX)
        .unwrap_or_default()
        .to_string()
}

/// Renders `markdown`, the body of the document `from`. `exists` says
/// whether a linked document is in the store; `mentions` maps each name
/// the document mentions (`FEAT-004`) to the document the store resolved
/// it to (its out-links that are mentions), and a mention of any other
/// name stays text. A first heading of level 1 whose text is `title` is
/// left out: the page shows the title above.
pub fn render(
    from: &DocKey,
    markdown: &str,
    title: &str,
    exists: impl Fn(&DocKey) -> bool,
    mentions: &HashMap<String, DocKey>,
) -> Rendered {
    let options =
        Options::ENABLE_TABLES | Options::ENABLE_TASKLISTS | Options::ENABLE_STRIKETHROUGH;
    let events: Vec<Event> = Parser::new_ext(markdown, options).collect();
    let mut events = link_mentions(from, events, mentions);
    let mut headings = anchor_headings(&mut events);
    if headings
        .first()
        .is_some_and(|h| h.level == 1 && h.text == title.trim())
        && let Some(start) = events
            .iter()
            .position(|e| matches!(e, Event::Start(Tag::Heading { .. })))
        && let Some(len) = events[start..]
            .iter()
            .position(|e| matches!(e, Event::End(TagEnd::Heading(_))))
    {
        events.drain(start..=start + len);
        headings.remove(0);
    }
    // For each open link, whether its start tag was rewritten (so its end must be).
    let mut rewritten: Vec<bool> = Vec::new();
    for event in events.iter_mut() {
        match event {
            Event::Start(Tag::Link {
                dest_url, title, ..
            }) => {
                let (href, broken) = match resolve(from, dest_url) {
                    Target::Document(key, fragment) => {
                        let mut href = doc_path(&key);
                        if let Some(fragment) = fragment.filter(|f| !f.is_empty()) {
                            href.push('#');
                            href.push_str(ID_PREFIX);
                            href.push_str(&fragment);
                        }
                        let broken = !exists(&key);
                        (href, broken.then_some(key))
                    }
                    Target::Other => {
                        // An anchor in this document: its ids carry the prefix.
                        if let Some(fragment) = dest_url.strip_prefix('#')
                            && !fragment.is_empty()
                        {
                            *dest_url = format!("#{ID_PREFIX}{fragment}").into();
                        }
                        rewritten.push(false);
                        continue;
                    }
                };
                rewritten.push(true);
                let tag = match broken {
                    Some(key) => format!(
                        "<a class=\"broken\" title=\"no such document: {}\" href=\"{}\">",
                        escape(&uri::format(&key)),
                        escape(&href)
                    ),
                    None if !title.is_empty() => format!(
                        "<a class=\"doc\" title=\"{}\" href=\"{}\">",
                        escape(title),
                        escape(&href)
                    ),
                    None => format!("<a class=\"doc\" href=\"{}\">", escape(&href)),
                };
                *event = Event::InlineHtml(tag.into());
            }
            Event::End(TagEnd::Link) if rewritten.pop() == Some(true) => {
                *event = Event::InlineHtml("</a>".into());
            }
            _ => {}
        }
    }
    let mut raw = String::with_capacity(markdown.len() * 3 / 2);
    pulldown_cmark::html::push_html(&mut raw, events.into_iter());
    Rendered {
        html: SANITIZER.clean(&raw).to_string(),
        headings,
    }
}

/// Makes each bare mention of a name in `mentions` a link to its
/// document: in text outside code, images and links (Markdown ones, and
/// `<a>` written as HTML), as `links::extract` found them at import.
fn link_mentions<'a>(
    from: &DocKey,
    events: Vec<Event<'a>>,
    mentions: &HashMap<String, DocKey>,
) -> Vec<Event<'a>> {
    if mentions.is_empty() {
        return events;
    }
    let mut out = Vec::with_capacity(events.len());
    // Depths of the code blocks, images, links and HTML `<a>` around.
    let (mut code, mut image, mut link, mut html_link) = (0usize, 0usize, 0usize, 0usize);
    for event in events {
        match &event {
            Event::Start(Tag::CodeBlock(_)) => code += 1,
            Event::End(TagEnd::CodeBlock) => code = code.saturating_sub(1),
            Event::Start(Tag::Image { .. }) => image += 1,
            Event::End(TagEnd::Image) => image = image.saturating_sub(1),
            Event::Start(Tag::Link { .. }) => link += 1,
            Event::End(TagEnd::Link) => link = link.saturating_sub(1),
            Event::Html(html) | Event::InlineHtml(html) => {
                let (opened, closed) = html_anchors(html);
                html_link = (html_link + opened).saturating_sub(closed);
            }
            Event::Text(text) if code + image + link + html_link == 0 => {
                let mut rest = 0;
                for (offset, word) in crate::links::mentions(text) {
                    let Some(target) = mentions.get(word).filter(|&k| k != from) else {
                        continue;
                    };
                    if offset > rest {
                        out.push(Event::Text(text[rest..offset].to_string().into()));
                    }
                    out.push(Event::InlineHtml(
                        format!(
                            "<a class=\"doc mention\" title=\"{}\" href=\"{}\">",
                            escape(&uri::format(target)),
                            escape(&doc_path(target))
                        )
                        .into(),
                    ));
                    out.push(Event::Text(word.to_string().into()));
                    out.push(Event::InlineHtml("</a>".into()));
                    rest = offset + word.len();
                }
                if rest > 0 {
                    if rest < text.len() {
                        out.push(Event::Text(text[rest..].to_string().into()));
                    }
                    continue;
                }
            }
            _ => {}
        }
        out.push(event);
    }
    out
}

/// The `<a …>` start tags and `</a>` end tags in a piece of raw HTML.
fn html_anchors(html: &str) -> (usize, usize) {
    let lower = html.to_ascii_lowercase();
    let count = |tag: &str| {
        lower
            .match_indices(tag)
            .filter(|(i, _)| {
                lower[i + tag.len()..]
                    .chars()
                    .next()
                    .is_some_and(|c| c == '>' || c.is_ascii_whitespace())
            })
            .count()
    };
    (count("<a"), count("</a"))
}

/// Gives every heading an id from its text (`md-` + a slug, numbered when
/// repeated) and returns them in order.
fn anchor_headings(events: &mut [Event]) -> Vec<Heading> {
    let mut headings = Vec::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut i = 0;
    while i < events.len() {
        if let Event::Start(Tag::Heading { level, .. }) = &events[i] {
            let level = heading_level(*level);
            let mut text = String::new();
            let mut j = i + 1;
            while j < events.len() && !matches!(events[j], Event::End(TagEnd::Heading(_))) {
                if let Event::Text(t) | Event::Code(t) = &events[j] {
                    text.push_str(t);
                }
                j += 1;
            }
            let mut slug = slug(&text);
            let count = seen.entry(slug.clone()).or_insert(0);
            *count += 1;
            if *count > 1 {
                slug = format!("{slug}-{count}");
            }
            if let Event::Start(Tag::Heading { id, .. }) = &mut events[i] {
                // ammonia adds ID_PREFIX to every id it keeps.
                *id = Some(CowStr::from(slug.clone()));
            }
            headings.push(Heading {
                level,
                text: text.trim().to_string(),
                anchor: format!("{ID_PREFIX}{slug}"),
            });
            i = j;
        }
        i += 1;
    }
    headings
}

fn heading_level(level: HeadingLevel) -> u8 {
    match level {
        HeadingLevel::H1 => 1,
        HeadingLevel::H2 => 2,
        HeadingLevel::H3 => 3,
        HeadingLevel::H4 => 4,
        HeadingLevel::H5 => 5,
        HeadingLevel::H6 => 6,
    }
}

/// Lowercase letters and digits, other runs as one `-`: `Sync & Offline` →
/// `sync-offline`.
fn slug(text: &str) -> String {
    let mut slug = String::new();
    for c in text.chars().flat_map(char::to_lowercase) {
        if c.is_alphanumeric() {
            slug.push(c);
        } else if !slug.is_empty() && !slug.ends_with('-') {
            slug.push('-');
        }
    }
    let slug = slug.trim_end_matches('-').to_string();
    if slug.is_empty() {
        "section".to_string()
    } else {
        slug
    }
}

/// Escapes text for an HTML attribute value or element content.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The allow-list: ammonia's defaults (no script, style, event handlers or
/// `javascript:` URLs), plus what CommonMark and GFM produce: heading ids,
/// task-list checkboxes, and the classes of document links and mentions.
static SANITIZER: LazyLock<ammonia::Builder<'static>> = LazyLock::new(|| {
    let mut builder = ammonia::Builder::default();
    builder
        .add_tags(["input"])
        .add_tag_attributes("input", ["type", "checked", "disabled"])
        .set_tag_attribute_value("input", "disabled", "")
        .add_allowed_classes("a", ["doc", "broken", "mention"])
        .id_prefix(Some(ID_PREFIX));
    for h in ["h1", "h2", "h3", "h4", "h5", "h6"] {
        builder.add_tag_attributes(h, ["id"]);
    }
    builder
});

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::Prefix;

    fn key(s: &str) -> DocKey {
        let (prefix, id) = s.split_once('/').unwrap();
        DocKey::new(Prefix::parse(prefix).unwrap(), id)
    }

    #[test]
    fn hostile_markup_is_removed() {
        let from = key("notes/x");
        let html = render(
            &from,
            "<script>window.pwned = 1</script>\n\n<img src=x onerror=\"window.pwned=1\">\n\n\
             [click](javascript:window.pwned=1) <a href=\"javascript:alert(1)\" onclick=\"x()\">a</a>\n\n\
             <iframe src=\"https://example.com\"></iframe><style>body{}</style>\n\n\
             <h2 id=\"top\">Top</h2>",
            "Evil",
            |_| true,
            &HashMap::new(),
        )
        .html;
        for banned in [
            "<script",
            "onerror",
            "javascript:",
            "onclick",
            "<iframe",
            "<style",
            "id=\"top\"",
        ] {
            assert!(!html.contains(banned), "{banned} in {html}");
        }
        assert!(html.contains("id=\"md-top\""), "{html}");
    }

    #[test]
    fn gfm_and_headings() {
        let md = "# Title\n\n## Sync & Offline\n\n## Sync & Offline\n\n\
                  | a | b |\n|---|---|\n| 1 | 2 |\n\n- [x] done\n- [ ] todo\n\n~~old~~\n\n```rust\nfn x() {}\n```\n";
        let rendered = render(&key("features/F"), md, "Other", |_| true, &HashMap::new());
        let anchors: Vec<&str> = rendered
            .headings
            .iter()
            .map(|h| h.anchor.as_str())
            .collect();
        assert_eq!(
            anchors,
            ["md-title", "md-sync-offline", "md-sync-offline-2"]
        );
        // The title heading is left out when the page shows it already.
        let titled = render(&key("features/F"), md, "Title", |_| true, &HashMap::new());
        assert_eq!(titled.headings.len(), 2);
        assert!(!titled.html.contains("<h1"), "{}", titled.html);
        assert!(titled.html.contains("<h2 id=\"md-sync-offline\">"));
        for expected in [
            "<h2 id=\"md-sync-offline\">",
            "<table>",
            "<td>1</td>",
            "type=\"checkbox\"",
            "checked",
            "<del>old</del>",
            "<pre><code>fn x() {}",
        ] {
            assert!(
                rendered.html.contains(expected),
                "{expected} not in {}",
                rendered.html
            );
        }
    }

    #[test]
    fn links_to_documents_open_in_the_viewer_or_show_as_broken() {
        let html = render(
            &key("features/FEAT-001"),
            "[two](FEAT-002.md) [gone](FEAT-404.md) [adr](../docs/adr/0006.md#context) [uri](orchestra://notes/x)",
            "",
            |k| k.id != "FEAT-404",
            &HashMap::new(),
        )
        .html;
        assert!(
            html.contains("<a class=\"doc\" href=\"/doc/features/FEAT-002\""),
            "{html}"
        );
        assert!(
            html.contains(
                "<a class=\"broken\" title=\"no such document: orchestra://features/FEAT-404\" href=\"/doc/features/FEAT-404\""
            ),
            "{html}"
        );
        assert!(
            html.contains("href=\"/doc/docs/adr/0006#md-context\""),
            "{html}"
        );
        assert!(html.contains("href=\"/doc/notes/x\""), "{html}");
        // An anchor within the document meets its heading.
        let html = render(
            &key("notes/x"),
            "## Sync\n\n[up](#sync)\n",
            "",
            |_| true,
            &HashMap::new(),
        )
        .html;
        assert!(html.contains("<h2 id=\"md-sync\">"), "{html}");
        assert!(html.contains("href=\"#md-sync\""), "{html}");
    }

    #[test]
    fn mentions_link_to_the_documents_the_store_named() {
        let mentions: HashMap<String, DocKey> = [
            ("FEAT-004".to_string(), key("features/FEAT-004")),
            ("TASK-7".to_string(), key("docs/tasks/TASK-7")),
            ("FEAT-001".to_string(), key("features/FEAT-001")),
        ]
        .into();
        let html = render(
            &key("features/FEAT-001"),
            "# FEAT-004 heading\n\nNeeds FEAT-004, TASK-7 <b>and</b> FEAT-999; FEAT-004x FEAT-0041.\n\n\
             `FEAT-004` [see FEAT-004](https://example.com) <a href=\"x\">FEAT-004</a> ![FEAT-004](p.png)\n\n\
             FEAT-001 is me.\n\n```\nFEAT-004\n```\n",
            "",
            |_| true,
            &mentions,
        )
        .html;
        let link = "<a class=\"doc mention\" title=\"orchestra://features/FEAT-004\" \
                    href=\"/doc/features/FEAT-004\" rel=\"noopener noreferrer\">FEAT-004</a>";
        assert_eq!(html.matches(link).count(), 2, "{html}");
        assert!(
            html.contains(&format!(
                "<h1 id=\"md-feat-004-heading\">{link} heading</h1>"
            )),
            "{html}"
        );
        assert!(html.contains(&format!("<p>Needs {link}, <a class=\"doc mention\" title=\"orchestra://docs/tasks/TASK-7\" href=\"/doc/docs/tasks/TASK-7\" rel=\"noopener noreferrer\">TASK-7</a> <b>and</b> FEAT-999; FEAT-004x FEAT-0041.</p>")), "{html}");
        for plain in [
            "<code>FEAT-004</code>",
            ">see FEAT-004</a>",
            "<a href=\"x\" rel=\"noopener noreferrer\">FEAT-004</a>",
            "alt=\"FEAT-004\"",
            "<p>FEAT-001 is me.</p>",
            "<pre><code>FEAT-004\n</code></pre>",
        ] {
            assert!(html.contains(plain), "{plain} not in {html}");
        }
    }
}
