//! The web viewer over HTTP on the real binary: each page's content and headers, raw downloads, assets, the token cookie, live updates; the browser tests are in `browser.rs`, a caller with partial grants in `viewer/grants.rs`.

mod grants;

use std::time::{Duration, Instant};

use crate::http::{HttpServer, Resp};
use crate::support::Project;

/// A small project whose documents link to each other in every way a
/// document can, with a hostile one and a binary one.
pub(crate) fn linked_project() -> Project {
    let p = Project::new();
    p.file(
        "features/FEAT-001.md",
        "---\ntitle: Offline sync\nstatus: open\ntags: [offline, sync]\n---\n\
         # Offline sync\n\nSee [the next one](FEAT-002.md), [the decision](../docs/adr/0006.md#context), \
         [a note](orchestra://notes/field%20notes) and [a lost one](FEAT-404.md).\n\n\
         ## Problem\n\nTechnicians lose work.\n\n## Proposal\n\nQueue edits.\n\n## Risks\n\n- [x] listed\n- [ ] mitigated\n",
    );
    p.file(
        "features/FEAT-002.md",
        "# Photo attachments\n\nBack to [sync](orchestra://features/FEAT-001).\n",
    );
    p.file(
        "docs/adr/0006.md",
        "# ADR 6: conflict policy\n\n## Context\n\nLast writer wins.\n",
    );
    p.file("notes/field notes.md", "# Field notes\n\nCafé visits.\n");
    p.file(
        "notes/evil.md",
        "# Evil\n\n<script>window.pwned = 1</script>\n\n<img src=\"x\" onerror=\"window.pwned = 2\">\n\n\
         [click me](javascript:window.pwned=3)\n\n<a href=\"#\" onclick=\"window.pwned=4\">also</a>\n",
    );
    p.file(
        "notes/blob.md",
        b"\x89PNG\r\n\x1a\n\xff\xfe binary".as_slice(),
    );
    p.import(&[]).assert_success();
    p
}

fn page(server: &HttpServer, path: &str) -> Resp {
    server
        .request("GET", path)
        .header("Accept", "text/html,application/xhtml+xml")
        .send()
}

#[track_caller]
fn assert_contains(resp: &Resp, expected: &[&str]) {
    let text = resp.text();
    for e in expected {
        assert!(text.contains(e), "{e:?} not in:\n{text}");
    }
}

#[track_caller]
fn assert_lacks(resp: &Resp, banned: &[&str]) {
    let text = resp.text();
    for b in banned {
        assert!(!text.contains(b), "{b:?} in:\n{text}");
    }
}

#[test]
fn every_page_is_html_with_a_content_security_policy() {
    let p = linked_project();
    let server = HttpServer::start(&p, &[]);
    for path in [
        "/",
        "/ls/features",
        "/ls/docs/adr",
        "/doc/features/FEAT-001",
        "/doc/notes/field%20notes",
        "/search?q=sync",
    ] {
        let resp = page(&server, path);
        resp.expect(200);
        assert_eq!(
            resp.header("content-type"),
            Some("text/html; charset=utf-8"),
            "{path}"
        );
        assert_eq!(
            resp.header("content-security-policy"),
            Some("default-src 'self'; frame-ancestors 'none'"),
            "{path}"
        );
        assert_eq!(resp.header("x-content-type-options"), Some("nosniff"));
    }
}

#[test]
fn the_home_page_counts_documents_per_prefix() {
    let p = linked_project();
    let server = HttpServer::start(&p, &[]);
    let home = page(&server, "/");
    assert_contains(
        &home,
        &[
            r#"<a href="/ls/docs">docs</a></td><td class="num">1</td>"#,
            r#"<a href="/ls/features">features</a></td><td class="num">2</td>"#,
            r#"<a href="/ls/notes">notes</a></td><td class="num">3</td>"#,
        ],
    );
}

#[test]
fn lists_are_keyset_pages_under_a_prefix_or_folder() {
    let p = Project::new();
    for i in 0..150 {
        p.file(&format!("features/F-{i:03}.md"), format!("# Feature {i}\n"));
    }
    p.file("docs/adr/0001.md", "# One\n")
        .file("docs/adr/0002.md", "# Two\n")
        .file("docs/guide.md", "# Guide\n");
    p.import(&[]).assert_success();
    let server = HttpServer::start(&p, &[]);

    let first = page(&server, "/ls/features");
    first.expect(200);
    let text = first.text();
    assert_eq!(
        text.matches("<tr><td><a href=\"/doc/features/").count(),
        100
    );
    assert_contains(
        &first,
        &[
            "150 documents",
            "Feature 0</a>",
            "Feature 99</a>",
            r#"<a rel="next" href="/ls/features?after=F%2D099">Next page</a>"#,
        ],
    );
    let second = page(&server, "/ls/features?after=F%2D099");
    let text = second.text();
    assert_eq!(text.matches("<tr><td><a href=\"/doc/features/").count(), 50);
    assert_contains(&second, &["Feature 100</a>", "Feature 149</a>"]);
    assert_lacks(&second, &["Feature 99</a>", "rel=\"next\""]);

    let adr = page(&server, "/ls/docs/adr");
    assert_contains(
        &adr,
        &[
            "2 documents",
            r#"<a href="/ls/docs">docs</a> / <a href="/ls/docs/adr">adr</a>"#,
            r#"<a href="/doc/docs/adr/0001">One</a>"#,
        ],
    );
    assert_lacks(&adr, &["Guide"]);
    // The folder part of an id links to the folder's list.
    assert_contains(
        &page(&server, "/ls/docs"),
        &[r#"<a class="folder" href="/ls/docs/adr">adr/</a>0001"#],
    );
    page(&server, "/ls/nothing").expect(404);
    page(&server, "/ls/docs/../x").expect(404);
}

#[test]
fn a_document_page_shows_its_names_frontmatter_contents_and_links() {
    let p = linked_project();
    let server = HttpServer::start(&p, &[]);
    let doc = page(&server, "/doc/features/FEAT-001");
    doc.expect(200);
    assert_contains(
        &doc,
        &[
            // The header: URI and source path, each with a copy button.
            r#"<code id="doc-uri">orchestra://features/FEAT-001</code> <button type="button" class="copy" data-copy="orchestra://features/FEAT-001">"#,
            r#"<code id="doc-path">features/FEAT-001.md</code>"#,
            // Frontmatter as a table.
            "<tr><th>status</th><td>open</td></tr>",
            "<tr><th>tags</th><td>offline, sync</td></tr>",
            // A table of contents, with anchors on the headings.
            r##"<a href="#md-problem">Problem</a>"##,
            r#"<h2 id="md-problem">Problem</h2>"#,
            // Links to documents open them in the viewer; a missing one is broken.
            r#"href="/doc/features/FEAT-002""#,
            r#"href="/doc/docs/adr/0006#md-context""#,
            r#"href="/doc/notes/field%20notes""#,
            r#"<a class="broken" title="no such document: orchestra://features/FEAT-404" href="/doc/features/FEAT-404""#,
            // Task lists.
            r#"type="checkbox""#,
            // The raw source, without JavaScript.
            "<details class=\"source\"><summary>Source</summary><pre>---\ntitle: Offline sync",
        ],
    );
    // The frontmatter block is not rendered as Markdown.
    assert_lacks(&doc, &["<hr", "<h2>title: Offline sync"]);
    // Any spelling of the id that a URI accepts opens the same page.
    assert_contains(
        &page(&server, "/doc/features/%46EAT-001"),
        &["orchestra://features/FEAT-001"],
    );
}

/// The "Linked from" panel of a page's HTML, which must be there.
#[track_caller]
fn linked_from(resp: &Resp) -> String {
    resp.expect(200);
    let text = resp.text();
    let start = text
        .find(r#"<section class="backlinks" id="linked-from">"#)
        .unwrap_or_else(|| panic!("no Linked from panel in:\n{text}"));
    let end = start + text[start..].find("</section>").unwrap();
    text[start..end].to_string()
}

/// The sources' titles listed in a "Linked from" panel, in order.
fn backlink_titles(panel: &str) -> Vec<String> {
    panel
        .split(r#"<li class="backlink"><a href=""#)
        .skip(1)
        .map(|row| {
            let title = &row[row.find("\">").unwrap() + 2..];
            title[..title.find("</a>").unwrap()].to_string()
        })
        .collect()
}

#[test]
fn a_document_linked_from_sixty_lists_fifty_then_the_other_ten() {
    let p = Project::new();
    p.file("features/FEAT-001.md", "# Target\n\nNothing links out.\n");
    p.file("notes/lonely.md", "# Lonely\n");
    for i in 0..60 {
        p.file(
            &format!("notes/n-{i:02}.md"),
            format!("# Note {i}\n\nSee [the target](../features/FEAT-001.md) from note {i}.\n"),
        );
    }
    p.import(&[]).assert_success();
    let server = HttpServer::start(&p, &[]);

    let first = linked_from(&page(&server, "/doc/features/FEAT-001"));
    let expected: Vec<String> = (0..50).map(|i| format!("Note {i}")).collect();
    assert_eq!(backlink_titles(&first), expected);
    assert!(
        first.contains(
            r#"<li class="backlink"><a href="/doc/notes/n-07">Note 7</a> <span class="muted">line 3</span><div class="context">See [the target](../features/FEAT-001.md) from note 7.</div></li>"#
        ),
        "{first}"
    );
    assert!(!first.contains("First links"), "{first}");
    // A plain link to the next page, back to the panel.
    let start = first
        .find(r#"<a class="more" href=""#)
        .unwrap_or_else(|| panic!("no more link in {first}"))
        + r#"<a class="more" href=""#.len();
    let more = &first[start..start + first[start..].find('"').unwrap()];
    assert!(
        more.starts_with("/doc/features/FEAT-001?backlinks=") && more.ends_with("#linked-from"),
        "{more}"
    );
    let path = more.strip_suffix("#linked-from").unwrap();

    let second = linked_from(&page(&server, path));
    let expected: Vec<String> = (50..60).map(|i| format!("Note {i}")).collect();
    assert_eq!(backlink_titles(&second), expected);
    assert!(
        second.contains(
            r##"<a class="first" href="/doc/features/FEAT-001#linked-from">First links</a>"##
        ),
        "{second}"
    );
    assert!(!second.contains(r#"class="more""#), "{second}");

    // A document no other links to says so.
    assert!(
        linked_from(&page(&server, "/doc/notes/lonely"))
            .contains(r#"<p class="muted">No other document links here.</p>"#)
    );
    // Another document's cursor, or a bad one, is refused.
    let cursor = &path[path.find('=').unwrap() + 1..];
    page(&server, &format!("/doc/notes/lonely?backlinks={cursor}")).expect(400);
    page(&server, "/doc/features/FEAT-001?backlinks=nonsense").expect(400);
    // A past version's page has no panel: it never changes, backlinks do.
    assert_lacks(
        &page(&server, "/doc/features/FEAT-001?version=1"),
        &["linked-from"],
    );
}

#[test]
fn a_backlinks_context_is_escaped() {
    let p = Project::new();
    p.file("features/FEAT-001.md", "# Target\n");
    p.file(
        "notes/hostile.md",
        "# Hostile\n\nSee FEAT-001: <script>window.pwned = 1</script> & \"quotes\" <img src=x onerror=alert(1)>\n",
    );
    p.import(&[]).assert_success();
    let server = HttpServer::start(&p, &[]);
    let panel = linked_from(&page(&server, "/doc/features/FEAT-001"));
    assert!(
        panel.contains(
            r#"<li class="backlink"><a href="/doc/notes/hostile">Hostile</a> <span class="muted">line 3</span><div class="context">See FEAT-001: &#60;script&#62;window.pwned = 1&#60;/script&#62; &#38; &#34;quotes&#34; &#60;img src=x onerror=alert(1)&#62;</div></li>"#
        ),
        "{panel}"
    );
    assert!(
        !panel.contains("<script") && !panel.contains("<img"),
        "{panel}"
    );
}

#[test]
fn bare_mentions_link_to_the_document_the_store_resolved() {
    let p = Project::new();
    p.file(
        "features/FEAT-001.md",
        "# Sync\n\nBlocked by FEAT-004 and TASK-7, not by `FEAT-004` or FEAT-999; \
         FEAT-001 is this one.\n",
    );
    p.file("features/FEAT-004.md", "# Attachments\n");
    // Two documents named TASK-7: the first in key order wins.
    p.file("docs/tasks/TASK-7.md", "# Task seven\n");
    p.file("notes/TASK-7.md", "# Another seven\n");
    p.import(&[]).assert_success();
    let server = HttpServer::start(&p, &[]);
    let doc = page(&server, "/doc/features/FEAT-001");
    assert_contains(
        &doc,
        &[concat!(
            r#"<p>Blocked by <a class="doc mention" title="orchestra://features/FEAT-004" href="/doc/features/FEAT-004" rel="noopener noreferrer">FEAT-004</a>"#,
            r#" and <a class="doc mention" title="orchestra://docs/tasks/TASK-7" href="/doc/docs/tasks/TASK-7" rel="noopener noreferrer">TASK-7</a>"#,
            r#", not by <code>FEAT-004</code> or FEAT-999; FEAT-001 is this one.</p>"#
        )],
    );
    assert_lacks(
        &doc,
        &["/doc/notes/TASK-7", "href=\"/doc/features/FEAT-999"],
    );
    // The mentioned document lists the mention among its backlinks.
    let panel = linked_from(&page(&server, "/doc/features/FEAT-004"));
    assert_eq!(backlink_titles(&panel), ["Sync"]);
    assert!(
        panel.contains(r#"<span class="muted">line 3</span>"#),
        "{panel}"
    );
}

#[test]
fn a_hostile_document_cannot_run_script() {
    let p = linked_project();
    let server = HttpServer::start(&p, &[]);
    let evil = page(&server, "/doc/notes/evil");
    evil.expect(200);
    // Not in the rendered article (the escaped source may show the text).
    let text = evil.text();
    let article = &text[text.find("<article").unwrap()..text.find("</article>").unwrap()];
    for banned in ["<script", "onerror", "onclick", "javascript:"] {
        assert!(!article.contains(banned), "{banned} in {article}");
    }
    assert!(text.contains("&#60;script&#62;window.pwned = 1&#60;/script&#62;"));
}

#[test]
fn a_binary_document_is_offered_as_a_download_of_its_exact_bytes() {
    let p = linked_project();
    let server = HttpServer::start(&p, &[]);
    let doc = page(&server, "/doc/notes/blob");
    assert_contains(
        &doc,
        &[r#"Binary, 17 bytes. <a href="/raw/notes/blob" download>Download</a>"#],
    );
    assert_lacks(&doc, &["<article"]);
    let raw = page(&server, "/raw/notes/blob");
    raw.expect(200);
    assert_eq!(raw.body, b"\x89PNG\r\n\x1a\n\xff\xfe binary");
    assert_eq!(raw.header("content-type"), Some("application/octet-stream"));
    assert_eq!(
        raw.header("content-disposition"),
        Some("attachment; filename=\"blob.md\"; filename*=UTF-8''blob%2Emd")
    );
    assert_eq!(
        page(&server, "/raw/notes/field%20notes").header("content-disposition"),
        Some("attachment; filename=\"field_notes.md\"; filename*=UTF-8''field%20notes%2Emd")
    );
    page(&server, "/raw/notes/nothing").expect(404);
}

#[test]
fn a_missing_document_is_404_with_the_nearest_ids() {
    let p = linked_project();
    let server = HttpServer::start(&p, &[]);
    let missing = page(&server, "/doc/features/FEAT-0015");
    missing.expect(404);
    assert_contains(
        &missing,
        &[
            "There is no document orchestra://features/FEAT-0015.",
            r#"<a href="/doc/features/FEAT-001">features/FEAT-001</a>"#,
            r#"<a href="/doc/features/FEAT-002">features/FEAT-002</a>"#,
        ],
    );
    for bad in [
        "/doc/",
        "/doc/nope/x",
        "/doc/features/",
        "/doc/features/a%00b",
    ] {
        page(&server, bad).expect(404);
    }
    // The server is still there.
    page(&server, "/").expect(200);
}

#[test]
fn search_is_a_page_for_browsers_and_json_for_scripts() {
    let p = linked_project();
    let server = HttpServer::start(&p, &[]);
    let html = page(&server, "/search?q=writer&under=docs");
    html.expect(200);
    assert_contains(
        &html,
        &[
            "1 hit",
            r#"<a href="/doc/docs/adr/0006">ADR 6: conflict policy</a>"#,
            "<mark>writer</mark>",
            r#"value="writer""#,
        ],
    );
    let bad = page(&server, "/search?q=x&under=nowhere");
    bad.expect(400);
    assert_contains(&bad, &["class=\"error\""]);
    let json = server.request("GET", "/search?q=writer").send();
    json.expect(200);
    assert_eq!(json.json()["total"], 1);
}

#[test]
fn assets_are_small_and_revalidated_by_etag() {
    let p = linked_project();
    let server = HttpServer::start(&p, &[]);
    let mut total = 0;
    for (asset, kind) in [
        ("/assets/viewer.css", "text/css"),
        ("/assets/viewer.js", "text/javascript"),
    ] {
        let resp = page(&server, asset);
        resp.expect(200);
        assert!(resp.header("content-type").unwrap().starts_with(kind));
        total += resp.body.len();
        let etag = resp.header("etag").unwrap().to_string();
        assert!(etag.starts_with('"') && etag.len() > 10, "{etag}");
        let again = server
            .request("GET", asset)
            .header("If-None-Match", &etag)
            .send();
        again.expect(304);
        assert!(again.body.is_empty());
    }
    assert!(total <= 50 * 1024, "JavaScript plus CSS: {total} bytes");
    page(&server, "/assets/other.js").expect(404);
}

#[test]
fn with_a_token_the_viewer_takes_it_once_and_keeps_it_in_a_cookie() {
    let p = linked_project();
    let token = "v13wer-T0ken";
    p.outside_file("token", token);
    let token_file = p.root_path("token");
    let server = HttpServer::start(&p, &["--token-file", token_file.to_str().unwrap()]);
    page(&server, "/").expect(401);
    page(&server, "/doc/features/FEAT-001?token=wrong").expect(401);
    let handoff = page(&server, &format!("/ls/features?after=F&token={token}"));
    handoff.expect(303);
    assert_eq!(handoff.header("location"), Some("/ls/features?after=F"));
    let cookie = handoff.header("set-cookie").unwrap().to_string();
    assert_eq!(
        cookie,
        format!("orchestra_token={token}; HttpOnly; SameSite=Strict; Path=/").replace('-', "%2D")
    );
    // The redirect stays on this server, whatever the path's slashes.
    let sneaky = page(&server, &format!("//evil.example/?token={token}"));
    sneaky.expect(303);
    assert_eq!(sneaky.header("location"), Some("/evil.example/"));
    let pair = cookie.split(';').next().unwrap();
    for path in ["/", "/doc/features/FEAT-001", "/assets/viewer.js"] {
        server
            .request("GET", path)
            .header("Cookie", pair)
            .send()
            .expect(200);
    }
    // The cookie is for the viewer: /mcp still wants the header.
    server
        .request("POST", "/mcp")
        .header("Cookie", pair)
        .body(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#)
        .send()
        .expect(401);
    // The Host and Origin rules hold for pages too.
    server
        .request("GET", "/")
        .header("Cookie", pair)
        .host("evil.example:80")
        .send()
        .expect(421);
    server
        .request("GET", "/")
        .header("Cookie", pair)
        .origin("https://evil.example")
        .send()
        .expect(403);
}

#[test]
fn live_updates_name_each_import_by_its_sequence_and_resume_after_it() {
    let p = linked_project();
    let server = HttpServer::start(&p, &[]);
    let home = page(&server, "/").text();
    let seq: i64 = home
        .split("data-seq=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .and_then(|s| s.parse().ok())
        .unwrap();
    let mut stream = server
        .request("GET", &format!("/events?after={seq}"))
        .header("Accept", "text/event-stream")
        .open();
    p.file("features/FEAT-002.md", "# Photo attachments, edited\n");
    p.import(&[]).assert_success();
    let deadline = Instant::now() + Duration::from_secs(10);
    let event = stream.next_event(deadline).unwrap().unwrap();
    assert_eq!(event.event.as_deref(), Some("change"));
    assert_eq!(event.id, Some((seq + 1).to_string()));
    let data: serde_json::Value = serde_json::from_str(&event.data).unwrap();
    assert_eq!(
        data,
        serde_json::json!({"seq": seq + 1, "all": false, "keys": ["~features/FEAT-002"]})
    );
    // A browser that reconnects says what it saw last and gets what it missed.
    p.remove("notes/evil.md");
    p.import(&[]).assert_success();
    let mut resumed = server
        .request("GET", "/events")
        .header("Accept", "text/event-stream")
        .header("Last-Event-ID", &seq.to_string())
        .open();
    let event = resumed
        .next_event(Instant::now() + Duration::from_secs(10))
        .unwrap()
        .unwrap();
    assert_eq!(event.id, Some((seq + 2).to_string()));
    let data: serde_json::Value = serde_json::from_str(&event.data).unwrap();
    assert_eq!(
        data["keys"],
        serde_json::json!(["~features/FEAT-002", "-notes/evil"])
    );
}

#[test]
fn a_text_too_large_to_render_is_offered_as_a_download() {
    let p = Project::new();
    let big = "word ".repeat(1_000_000);
    p.file("notes/big.md", &big);
    p.import(&[]).assert_success();
    let server = HttpServer::start(&p, &[]);
    let doc = page(&server, "/doc/notes/big");
    doc.expect(200);
    assert_contains(
        &doc,
        &[r#"Too large to show here: 5000000 bytes. <a href="/raw/notes/big" download>"#],
    );
    assert_eq!(page(&server, "/raw/notes/big").body, big.as_bytes());
}

#[test]
fn a_document_page_shows_its_history_each_version_opens_and_diffs() {
    let p = linked_project();
    p.file(
        "notes/field notes.md",
        "# Field notes\n\nCafé visits.\nA second line.\n",
    );
    p.import(&[]).assert_success();
    p.remove("notes/field notes.md");
    p.import(&[]).assert_success();
    p.file(
        "notes/field notes.md",
        "# Field notes, back\n\nCafé visits.\n",
    );
    p.import(&[]).assert_success();
    let server = HttpServer::start(&p, &[]);
    let doc = page(&server, "/doc/notes/field%20notes");
    assert_contains(
        &doc,
        &[
            "History: 4 versions",
            r#"<a href="/doc/notes/field%20notes?version=4">4</a> (current)"#,
            "<em>removed</em>",
            r#"<a href="/doc/notes/field%20notes?version=2">2</a>"#,
            // Version 4's predecessor with bytes is 2: the removal has none.
            r#"<a class="diff-link" href="/diff/notes/field%20notes?from=2&#38;to=4">diff</a>"#,
            r#"<a class="diff-link" href="/diff/notes/field%20notes?from=1&#38;to=2">diff</a>"#,
        ],
    );
    // A past version: its own text, its versioned URI, and no live updates.
    let v2 = page(&server, "/doc/notes/field%20notes?version=2");
    v2.expect(200);
    assert_contains(
        &v2,
        &[
            "Version 2 of 4.",
            r#"<code id="doc-uri">orchestra://notes/field%20notes?version=2</code>"#,
            "A second line.",
            r#"data-watch="""#,
        ],
    );
    assert_eq!(
        page(&server, "/raw/notes/field%20notes?version=2").body,
        b"# Field notes\n\nCaf\xc3\xa9 visits.\nA second line.\n"
    );
    // A removal and a version that never was: 404, listing the versions.
    for missing in ["?version=3", "?version=9"] {
        let resp = page(&server, &format!("/doc/notes/field%20notes{missing}"));
        resp.expect(404);
        assert_contains(&resp, &["version 1: Field notes"]);
    }
    page(&server, "/doc/notes/field%20notes?version=x").expect(404);
    // The diff view.
    let diff = page(&server, "/diff/notes/field%20notes?from=1&to=2");
    diff.expect(200);
    assert_contains(
        &diff,
        &[
            "version 1 → 2",
            r#"<span class="hunk">@@ -1,3 +1,4 @@</span>"#,
            r#"<span class="add">+A second line.</span>"#,
            r#"<span class="same"> Café visits.</span>"#,
        ],
    );
    page(&server, "/diff/notes/field%20notes?from=1&to=3").expect(404);
    page(&server, "/diff/notes/field%20notes?from=zero").expect(400);
    // A removed document's page says so and links its versions.
    p.remove("notes/field notes.md");
    p.import(&[]).assert_success();
    let gone = page(&server, "/doc/notes/field%20notes");
    gone.expect(404);
    assert_contains(
        &gone,
        &[
            "was removed; its versions stay readable",
            r#"<a href="/doc/notes/field%20notes?version=4">version 4: Field notes, back</a>"#,
        ],
    );
}

#[test]
fn a_page_from_before_the_database_was_made_again_is_told_to_reload() {
    let p = linked_project();
    let server = HttpServer::start(&p, &[]);
    // A tab that saw sequence 500 of a database since made anew (at 1).
    let mut stream = server
        .request("GET", "/events")
        .header("Accept", "text/event-stream")
        .header("Last-Event-ID", "500")
        .open();
    let event = stream
        .next_event(Instant::now() + Duration::from_secs(10))
        .unwrap()
        .unwrap();
    assert_eq!(event.id.as_deref(), Some("1"));
    let data: serde_json::Value = serde_json::from_str(&event.data).unwrap();
    assert_eq!(data["all"], true, "{data}");
    // And live events after it arrive, from the new sequence on.
    p.file("notes/new.md", "# New\n");
    p.import(&[]).assert_success();
    let event = stream
        .next_event(Instant::now() + Duration::from_secs(10))
        .unwrap()
        .unwrap();
    assert_eq!(event.id.as_deref(), Some("2"));
}

/// A viewer that writes: `serve --http` with a token and the project's
/// folder; the cookie a browser keeps the token in.
pub(crate) fn writing_server(p: &Project) -> (HttpServer, String) {
    let token = "wr1te-T0ken";
    p.outside_file("token", token);
    let token_file = p.root_path("token");
    let dir = p.dir();
    let server = HttpServer::start(
        p,
        &[
            "--token-file",
            token_file.to_str().unwrap(),
            "--project",
            dir.to_str().unwrap(),
        ],
    );
    (
        server,
        format!("orchestra_token={}", token.replace('-', "%2D")),
    )
}

/// A GET with the token's cookie.
fn get(server: &HttpServer, cookie: &str, path: &str) -> Resp {
    server
        .request("GET", path)
        .header("Accept", "text/html")
        .header("Cookie", cookie)
        .send()
}

/// A form POST as a browser sends it, from `origin`.
fn post_form(
    server: &HttpServer,
    cookie: &str,
    origin: Option<&str>,
    path: &str,
    fields: &[(&str, &str)],
) -> Resp {
    let body = fields
        .iter()
        .map(|(name, value)| {
            let encode = |s: &str| {
                percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC)
                    .to_string()
            };
            format!("{}={}", encode(name), encode(value))
        })
        .collect::<Vec<_>>()
        .join("&");
    let mut req = server
        .request("POST", path)
        .header("Accept", "text/html")
        .header("Content-Type", "application/x-www-form-urlencoded")
        .header("Cookie", cookie)
        .body(body);
    if let Some(origin) = origin {
        req = req.origin(origin);
    }
    req.send()
}

fn own_origin(server: &HttpServer) -> String {
    format!("http://127.0.0.1:{}", server.port)
}

/// The value of the form's hidden field `name`.
#[track_caller]
fn hidden(resp: &Resp, name: &str) -> String {
    let text = resp.text();
    let marker = format!(r#"<input type="hidden" name="{name}" value=""#);
    let rest = text
        .split(&marker)
        .nth(1)
        .unwrap_or_else(|| panic!("no field {name} in:\n{text}"));
    rest.split('"').next().unwrap().to_string()
}

/// The text of the form's textarea, as a browser reads it (the newline
/// right after the tag is the markup's, not the text's).
#[track_caller]
fn textarea(resp: &Resp) -> String {
    let text = resp.text();
    let rest = text
        .split("spellcheck=\"false\">\n")
        .nth(1)
        .unwrap_or_else(|| panic!("no textarea in:\n{text}"));
    rest.split("</textarea>").next().unwrap().to_string()
}

#[test]
fn an_edit_saves_the_text_byte_for_byte_in_the_documents_line_endings() {
    let p = linked_project();
    p.file("notes/windows.md", "# Windows\r\n\r\nSaved on Windows.\r\n");
    p.file("notes/blank first.md", "\n# Blank first\n");
    p.import(&[]).assert_success();
    let (server, cookie) = writing_server(&p);
    let origin = own_origin(&server);

    let doc = get(&server, &cookie, "/doc/features/FEAT-001");
    assert_contains(
        &doc,
        &[r#"<a class="button edit" href="/edit/features/FEAT-001">Edit</a>"#],
    );
    // A past version has no Edit: only the current text is edited.
    p.file("features/FEAT-002.md", "# Photo attachments, v2\n");
    p.import(&[]).assert_success();
    assert_lacks(
        &get(&server, &cookie, "/doc/features/FEAT-002?version=1"),
        &["/edit/"],
    );

    let form = get(&server, &cookie, "/edit/features/FEAT-001");
    form.expect(200);
    assert_eq!(form.header("referrer-policy"), Some("same-origin"));
    assert_eq!(hidden(&form, "version"), "1");
    assert_eq!(hidden(&form, "newline"), "lf");
    assert!(
        textarea(&form).starts_with("---\ntitle: Offline sync\nstatus: open\n"),
        "{}",
        form.text()
    );
    // A browser posts the textarea with CRLF: an LF document stays LF.
    let saved = post_form(
        &server,
        &cookie,
        Some(&origin),
        "/edit/features/FEAT-001",
        &[
            ("version", "1"),
            ("newline", "lf"),
            (
                "content",
                "# Offline sync\r\n\r\nRewritten  with  spaces, é and <b>.\r\n\r\n",
            ),
        ],
    );
    saved.expect(303);
    assert_eq!(saved.header("location"), Some("/doc/features/FEAT-001"));
    assert_eq!(
        std::fs::read(p.path("features/FEAT-001.md")).unwrap(),
        "# Offline sync\n\nRewritten  with  spaces, é and <b>.\n\n".as_bytes()
    );
    let doc = get(&server, &cookie, "/doc/features/FEAT-001");
    assert_contains(
        &doc,
        &[
            "Rewritten  with  spaces, é and &#60;b&#62;.",
            "History: 2 versions",
        ],
    );
    assert_eq!(
        hidden(&get(&server, &cookie, "/edit/features/FEAT-001"), "version"),
        "2"
    );

    // A CRLF document stays CRLF.
    let form = get(&server, &cookie, "/edit/notes/windows");
    assert_eq!(hidden(&form, "newline"), "crlf");
    post_form(
        &server,
        &cookie,
        Some(&origin),
        "/edit/notes/windows",
        &[
            ("version", &hidden(&form, "version")),
            ("newline", "crlf"),
            ("content", "# Windows\r\n\r\nEdited in a browser.\r\n"),
        ],
    )
    .expect(303);
    assert_eq!(
        std::fs::read(p.path("notes/windows.md")).unwrap(),
        b"# Windows\r\n\r\nEdited in a browser.\r\n"
    );
    // A text that starts with a blank line keeps it: the newline after the
    // tag is the markup's.
    let form = get(&server, &cookie, "/edit/notes/blank%20first");
    assert_eq!(textarea(&form), "\n# Blank first\n");

    // An id no document has: 404.
    get(&server, &cookie, "/edit/features/FEAT-404").expect(404);
    // A binary document cannot be edited here, and has no Edit link.
    get(&server, &cookie, "/edit/notes/blob").expect(422);
    assert_lacks(&get(&server, &cookie, "/doc/notes/blob"), &["/edit/"]);
}

#[test]
fn a_conflicting_edit_keeps_the_persons_text_and_shows_what_changed() {
    let p = linked_project();
    let (server, cookie) = writing_server(&p);
    let origin = own_origin(&server);
    let form = get(&server, &cookie, "/edit/features/FEAT-002");
    assert_eq!(hidden(&form, "version"), "1");
    // Someone saves the file in an editor meanwhile (not imported).
    let theirs = "# Photo attachments\n\nBack to [sync](orchestra://features/FEAT-001).\n\nPhotos are resized.\n";
    p.file("features/FEAT-002.md", theirs);
    let mine = "# Photo attachments\r\n\r\nMy own rewrite.\r\n";
    let conflict = post_form(
        &server,
        &cookie,
        Some(&origin),
        "/edit/features/FEAT-002",
        &[("version", "1"), ("newline", "lf"), ("content", mine)],
    );
    conflict.expect(409);
    assert_eq!(conflict.header("referrer-policy"), Some("same-origin"));
    assert_contains(
        &conflict,
        &[
            "changed since you opened it at version 1; it is now version 2",
            r#"<span class="add">+Photos are resized.</span>"#,
        ],
    );
    // The person's text is kept; the form is now based on version 2.
    assert_eq!(
        textarea(&conflict),
        "# Photo attachments\n\nMy own rewrite.\n"
    );
    assert_eq!(hidden(&conflict, "version"), "2");
    assert_eq!(
        std::fs::read_to_string(p.path("features/FEAT-002.md")).unwrap(),
        theirs
    );
    // Saving again, having seen the change, replaces version 2.
    post_form(
        &server,
        &cookie,
        Some(&origin),
        "/edit/features/FEAT-002",
        &[("version", "2"), ("newline", "lf"), ("content", mine)],
    )
    .expect(303);
    assert_eq!(
        std::fs::read_to_string(p.path("features/FEAT-002.md")).unwrap(),
        "# Photo attachments\n\nMy own rewrite.\n"
    );
    // Another refusal says why, and keeps the text too.
    p.remove("features/FEAT-002.md");
    let gone = post_form(
        &server,
        &cookie,
        Some(&origin),
        "/edit/features/FEAT-002",
        &[
            ("version", "3"),
            ("newline", "lf"),
            ("content", "Kept text\n"),
        ],
    );
    assert!(gone.status == 409 || gone.status == 422, "{gone:?}");
    assert_contains(&gone, &["Not saved: ", "Your text is below"]);
    assert_eq!(textarea(&gone), "Kept text\n");
    assert!(!p.path("features/FEAT-002.md").exists());
}

#[test]
fn a_form_posted_from_another_origin_writes_nothing() {
    let p = linked_project();
    let (server, cookie) = writing_server(&p);
    let before = std::fs::read(p.path("features/FEAT-001.md")).unwrap();
    let fields = [("version", "1"), ("newline", "lf"), ("content", "pwned\n")];
    let own = own_origin(&server);
    let cases: [(Option<&str>, Option<&str>); 6] = [
        // Another site: the server's Origin rule.
        (Some("https://evil.example"), None),
        // Another port of this machine: same site, not the viewer.
        (Some("http://127.0.0.1:1"), None),
        (Some("http://localhost:1"), Some("same-site")),
        (Some("null"), None),
        // The right Origin, but the browser says the page was elsewhere.
        (Some(own.as_str()), Some("cross-site")),
        // Neither header: not a form from a page of this server.
        (None, None),
    ];
    for (origin, site) in cases {
        for path in ["/edit/features/FEAT-001", "/new/features"] {
            let body = fields
                .iter()
                .map(|(n, v)| format!("{n}={}", v.replace('\n', "%0A")))
                .collect::<Vec<_>>()
                .join("&");
            let mut req = server
                .request("POST", path)
                .header("Content-Type", "application/x-www-form-urlencoded")
                .header("Cookie", &cookie)
                .body(body);
            if let Some(origin) = origin {
                req = req.origin(origin);
            }
            if let Some(site) = site {
                req = req.header("Sec-Fetch-Site", site);
            }
            let resp = req.send();
            assert_eq!(resp.status, 403, "{path} {origin:?} {site:?}: {resp:?}");
        }
    }
    assert_eq!(
        std::fs::read(p.path("features/FEAT-001.md")).unwrap(),
        before
    );
    assert!(!p.path("features/FEAT-003.md").exists());
    // Without the token, nothing either.
    server
        .request("POST", "/edit/features/FEAT-001")
        .header("Content-Type", "application/x-www-form-urlencoded")
        .origin(&own)
        .body("version=1&content=pwned")
        .send()
        .expect(401);
    // A browser that sends only Sec-Fetch-Site: same-origin is let in.
    server
        .request("POST", "/edit/features/FEAT-001")
        .header("Content-Type", "application/x-www-form-urlencoded")
        .header("Cookie", &cookie)
        .header("Sec-Fetch-Site", "same-origin")
        .body("version=1&newline=lf&content=%23%20Mine%0A")
        .send()
        .expect(303);
    assert_eq!(
        std::fs::read(p.path("features/FEAT-001.md")).unwrap(),
        b"# Mine\n"
    );
}

#[test]
fn new_allocates_the_next_id_of_the_folder() {
    let p = linked_project();
    let (server, cookie) = writing_server(&p);
    let origin = own_origin(&server);
    let list = get(&server, &cookie, "/ls/features");
    assert_contains(
        &list,
        &[r#"<a class="button new" href="/new/features">New</a>"#],
    );
    let form = get(&server, &cookie, "/new/features");
    form.expect(200);
    assert_eq!(form.header("referrer-policy"), Some("same-origin"));
    assert_contains(
        &form,
        &[r#"<input name="title""#, "New document in features"],
    );
    let created = post_form(
        &server,
        &cookie,
        Some(&origin),
        "/new/features",
        &[
            ("title", "Dark mode"),
            ("content", "Themes follow the system.\r\n"),
        ],
    );
    created.expect(303);
    assert_eq!(created.header("location"), Some("/doc/features/FEAT-003"));
    assert_eq!(
        std::fs::read_to_string(p.path("features/FEAT-003.md")).unwrap(),
        "# Dark mode\n\nThemes follow the system.\n"
    );
    assert_contains(
        &get(&server, &cookie, "/doc/features/FEAT-003"),
        &[r#"<h1 class="doc-title">Dark mode</h1>"#],
    );
    assert_contains(
        &get(&server, &cookie, "/ls/docs/adr"),
        &[r#"href="/new/docs/adr""#],
    );
    // A folder whose documents are not numbered: the title's slug.
    post_form(
        &server,
        &cookie,
        Some(&origin),
        "/new/notes",
        &[("title", "Site visit, März"), ("content", "# Site visit\n")],
    )
    .expect(303);
    assert_eq!(
        std::fs::read_to_string(p.path("notes/site-visit-marz.md")).unwrap(),
        "# Site visit\n"
    );
    // Nothing to allocate from: refused, the text kept.
    let refused = post_form(
        &server,
        &cookie,
        Some(&origin),
        "/new/notes",
        &[("title", ""), ("content", "Untitled text\n")],
    );
    refused.expect(422);
    assert_contains(&refused, &["Not created: "]);
    assert_eq!(textarea(&refused), "Untitled text\n");
    get(&server, &cookie, "/new/nothing").expect(404);
}

#[test]
fn a_read_only_viewer_offers_no_edit_and_its_forms_say_so() {
    let p = linked_project();
    // A project folder but no token: over HTTP, read-only.
    let dir = p.dir();
    let server = HttpServer::start(&p, &["--project", dir.to_str().unwrap()]);
    assert_lacks(&page(&server, "/doc/features/FEAT-001"), &["/edit/"]);
    assert_lacks(&page(&server, "/ls/features"), &["/new/"]);
    for path in ["/edit/features/FEAT-001", "/new/features"] {
        let resp = page(&server, path);
        resp.expect(404);
        assert_contains(&resp, &["Read-only", "does not change documents"]);
        let posted = server
            .request("POST", path)
            .header("Content-Type", "application/x-www-form-urlencoded")
            .origin(&own_origin(&server))
            .body("version=1&content=x")
            .send();
        posted.expect(404);
        assert_contains(&posted, &["Read-only"]);
    }
}
