//! The `/resource` endpoint.

use super::messages::{fixture_project, fixture_text, resource_path};
use super::server::HttpServer;
use super::{CAFE, FEAT_001};
use serde_json::json;

// 6. /resource.

#[test]
fn the_resource_endpoint_serves_one_document_as_json() {
    let p = fixture_project();
    let s = HttpServer::start(&p, &[]);
    let cases = [
        (
            CAFE,
            "notes/café notes.md",
            "Café Lumière offsite notes",
            "draft",
        ),
        (
            FEAT_001,
            "features/FEAT-001.md",
            "Offline work orders",
            "shipped",
        ),
        (
            "orchestra://docs/adr/0006",
            "docs/adr/0006.md",
            "ADR 0006: Drop support for Android 9",
            "proposed",
        ),
    ];
    for (uri, file, title, status) in cases {
        let resp = s.request("GET", &resource_path(uri)).send();
        resp.expect(200);
        assert_eq!(resp.header("content-type"), Some("application/json"));
        let doc = resp.json();
        assert_eq!(doc["uri"], uri, "{doc}");
        assert_eq!(doc["mimeType"], "text/markdown", "{doc}");
        assert_eq!(doc["title"], title, "{doc}");
        assert_eq!(doc["frontmatter"]["status"], status, "{doc}");
        assert_eq!(doc["text"].as_str(), Some(fixture_text(file).as_str()));
    }
    let doc = s.request("GET", &resource_path(CAFE)).send().json();
    assert_eq!(doc["frontmatter"]["tags"], json!(["offsite", "planning"]));

    let malformed = [
        "not-a-uri",
        "orchestra://secrets/x",
        "orchestra://features/../secrets",
        "orchestra://features/FEAT-001%00",
        "orchestra://features/%zz",
        "file:///etc/passwd",
        "",
    ];
    for uri in malformed {
        let resp = s.request("GET", &resource_path(uri)).send();
        assert_eq!(resp.status, 400, "{uri:?}: {resp:?}");
        assert!(resp.json()["error"].is_string(), "{resp:?}");
    }
    s.request("GET", "/resource").send().expect(400);

    let missing = "orchestra://features/FEAT-999";
    let resp = s.request("GET", &resource_path(missing)).send();
    resp.expect(404);
    assert_eq!(resp.json()["uri"], missing, "{resp:?}");
}
