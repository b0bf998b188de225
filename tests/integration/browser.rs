//! The viewer in a real headless Chromium, driven over WebDriver (chromedriver + fantoccini), on the real binary: navigation, links, the copy button, a hostile document, search from the keyboard, live updates, and an edit with its conflict.
//!
//! Needs Debian's `chromium` and `chromium-driver` (`scripts/test.sh`
//! installs them); without them the test fails and says so.

use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::actions::{InputSource, KeyAction, KeyActions};
use fantoccini::key::Key;
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};

use crate::http::HttpServer;
use crate::viewer::{linked_project, writing_server};

const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
const CHROMIUM: &str = "/usr/bin/chromium";
const WAIT: Duration = Duration::from_secs(10);
/// A page has loaded and its live-update stream is open.
const LIVE: &str = "return document.readyState === 'complete' && window.orchestraLive !== undefined \
                    && window.orchestraLive.readyState === 1";

/// A chromedriver on a free loopback port, killed when dropped.
struct Driver {
    child: Child,
    port: u16,
    profile: tempfile::TempDir,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Driver {
    fn start() -> Driver {
        assert!(
            std::path::Path::new(CHROMEDRIVER).exists() && std::path::Path::new(CHROMIUM).exists(),
            "the browser tests need {CHROMIUM} and {CHROMEDRIVER}: \
             apt-get install chromium chromium-driver (scripts/test.sh does)"
        );
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + WAIT;
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "chromedriver did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        Driver {
            child,
            port,
            profile: tempfile::tempdir().unwrap(),
        }
    }

    async fn session(&self) -> Client {
        let mut caps = serde_json::Map::new();
        caps.insert(
            "goog:chromeOptions".to_string(),
            json!({
                "binary": CHROMIUM,
                "args": [
                    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                    "--disable-background-networking", "--disable-component-update",
                    "--no-first-run", "--disable-quic", "--disable-sync",
                    "--window-size=1100,800",
                    format!("--user-data-dir={}", self.profile.path().display()),
                ],
            }),
        );
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        ClientBuilder::new(connector)
            .capabilities(caps)
            .connect(&format!("http://127.0.0.1:{}", self.port))
            .await
            .expect("a WebDriver session")
    }
}

/// Runs a script in the page and returns its value.
async fn eval(client: &Client, script: &str) -> Value {
    client.execute(script, Vec::new()).await.unwrap()
}

/// Waits until `script` returns `true`, or fails with what it returned last.
async fn wait_until(client: &Client, what: &str, script: &str) {
    let deadline = Instant::now() + WAIT;
    loop {
        let value = eval(client, script).await;
        if value == Value::Bool(true) {
            return;
        }
        if Instant::now() >= deadline {
            let state = eval(
                client,
                "return [location.href, JSON.stringify(document.body.dataset),                  performance.getEntriesByType('resource').map(e => e.name + ' ' + Math.round(e.startTime) + ' ' + Math.round(e.duration))]",
            )
            .await;
            panic!("{what}: still {value}; the page: {state}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn path(client: &Client) -> String {
    client.current_url().await.unwrap().path().to_string()
}

async fn press(client: &Client, keys: &[char]) {
    let mut actions = KeyActions::new("keyboard".to_string());
    for &key in keys {
        actions = actions
            .then(KeyAction::Down { value: key })
            .then(KeyAction::Up { value: key });
    }
    client.perform_actions(actions).await.unwrap();
}

async fn click(client: &Client, css: &str) {
    client
        .wait()
        .at_most(WAIT)
        .for_element(Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("{css}: {e}"))
        .click()
        .await
        .unwrap();
}

async fn text(client: &Client, css: &str) -> String {
    client
        .find(Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("{css}: {e}"))
        .text()
        .await
        .unwrap()
}

#[test]
fn the_viewer_in_a_real_browser() {
    let p = linked_project();
    // A long document, to scroll.
    let mut long = String::from("# Long read\n\n");
    for i in 0..80 {
        long.push_str(&format!("Paragraph {i} about sync.\n\n"));
    }
    p.file("notes/long.md", long);
    p.import(&[]).assert_success();
    let server = HttpServer::start(&p, &[]);
    let base = format!("http://127.0.0.1:{}", server.port);
    let driver = Driver::start();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let client = driver.session().await;

        // The backlog, a list, a document.
        client.goto(&format!("{base}/")).await.unwrap();
        assert_eq!(client.title().await.unwrap(), "Backlog · orchestra");
        click(&client, "a[href='/ls/features']").await;
        wait_until(&client, "the features list", "return location.pathname === '/ls/features'").await;
        click(&client, "a[href='/doc/features/FEAT-001']").await;
        wait_until(&client, "the document", "return location.pathname === '/doc/features/FEAT-001'").await;
        assert_eq!(text(&client, "#doc-uri").await, "orchestra://features/FEAT-001");
        assert_eq!(text(&client, "#doc-path").await, "features/FEAT-001.md");

        // The copy button copies the URI.
        click(&client, "button.copy[data-copy='orchestra://features/FEAT-001']").await;
        wait_until(
            &client,
            "the copy button",
            "const b = document.querySelector('button.copy'); \
             return b.textContent === 'Copied' && b.dataset.copied === 'orchestra://features/FEAT-001';",
        )
        .await;

        // A relative link, then an orchestra:// link back.
        click(&client, "article a[href='/doc/features/FEAT-002']").await;
        wait_until(&client, "the relative link", "return location.pathname === '/doc/features/FEAT-002'").await;
        assert_eq!(text(&client, "h1.doc-title").await, "Photo attachments");
        click(&client, "article a[href='/doc/features/FEAT-001']").await;
        wait_until(&client, "the orchestra:// link", "return location.pathname === '/doc/features/FEAT-001'").await;
        // A link to a missing document is marked, not dead.
        let broken = client
            .find(Locator::Css("article a.broken"))
            .await
            .unwrap();
        assert_eq!(
            broken.attr("title").await.unwrap().as_deref(),
            Some("no such document: orchestra://features/FEAT-404")
        );

        // A hostile document runs nothing, even when its links are clicked.
        client.goto(&format!("{base}/doc/notes/evil")).await.unwrap();
        wait_until(&client, "the hostile page", "return document.readyState === 'complete'").await;
        assert_eq!(eval(&client, "return typeof window.pwned").await, json!("undefined"));
        let handlers = eval(
            &client,
            "return [...document.querySelectorAll('article *')].flatMap(e => [...e.attributes])              .filter(a => a.name.startsWith('on') || /^\\s*javascript:/i.test(a.value)).length",
        )
        .await;
        assert_eq!(handlers, json!(0));
        assert_eq!(path(&client).await, "/doc/notes/evil");

        // Search from the keyboard: "/" focuses the box, Enter searches,
        // Down and Enter open the first hit.
        client.goto(&format!("{base}/")).await.unwrap();
        wait_until(&client, "the home page", "return document.readyState === 'complete'").await;
        press(&client, &['/']).await;
        wait_until(&client, "the search box focused", "return document.activeElement.id === 'q'").await;
        let mut keys: Vec<char> = "writer".chars().collect();
        keys.push(Key::Enter.into());
        press(&client, &keys).await;
        wait_until(&client, "the results", "return location.pathname === '/search' && document.querySelectorAll('li.hit').length === 1").await;
        assert_eq!(text(&client, "li.hit mark").await, "writer");
        press(&client, &[Key::Down.into()]).await;
        wait_until(&client, "a selected hit", "return document.querySelector('li.hit.selected') !== null").await;
        press(&client, &[Key::Enter.into()]).await;
        wait_until(&client, "the hit opened", "return location.pathname === '/doc/docs/adr/0006'").await;

        // An import while a page is open updates it in place, keeping the
        // scroll position: no reload (a global set now survives).
        client.goto(&format!("{base}/doc/notes/long")).await.unwrap();
        wait_until(&client, "the long page", LIVE).await;
        eval(&client, "window.scrollTo(0, 600); window.marker = 42; return true").await;
        wait_until(&client, "scrolled", "return window.scrollY === 600").await;
        let mut edited = String::from("# Long read, edited\n\n");
        for i in 0..80 {
            edited.push_str(&format!("Paragraph {i} about sync.\n\n"));
        }
        p.file("notes/long.md", edited);
        p.import(&[]).assert_success();
        wait_until(
            &client,
            "the page updated",
            "const h = document.querySelector('h1.doc-title'); return h !== null && h.textContent === 'Long read, edited'",
        )
        .await;
        assert_eq!(eval(&client, "return window.marker").await, json!(42));
        assert_eq!(eval(&client, "return window.scrollY").await, json!(600));

        // A list updates too when a document under it is added.
        client.goto(&format!("{base}/ls/notes")).await.unwrap();
        wait_until(&client, "the notes list", LIVE).await;
        p.file("notes/zz-new.md", "# Brand new note\n");
        p.import(&[]).assert_success();
        wait_until(
            &client,
            "the new row",
            "return document.querySelector(\"a[href='/doc/notes/zz-new']\") !== null",
        )
        .await;

        // Idle, a page makes no request (the stream's keep-alives are not
        // requests).
        let requests = "return performance.getEntriesByType('resource').length";
        let before = eval(&client, requests).await;
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert_eq!(eval(&client, requests).await, before);

        if let Ok(dir) = std::env::var("ORCHESTRA_SCREENSHOT_DIR") {
            client.goto(&format!("{base}/doc/features/FEAT-001")).await.unwrap();
            wait_until(&client, "the document", "return document.readyState === 'complete'").await;
            let png = client.screenshot().await.unwrap();
            std::fs::write(std::path::Path::new(&dir).join("viewer.png"), png).unwrap();
        }
        client.close().await.unwrap();
    });
}

#[test]
fn an_edit_and_a_conflict_in_a_real_browser() {
    let p = linked_project();
    let (server, cookie) = writing_server(&p);
    let token = cookie.split_once('=').unwrap().1.replace("%2D", "-");
    let base = format!("http://127.0.0.1:{}", server.port);
    let driver = Driver::start();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let client = driver.session().await;
        let shots = std::env::var("ORCHESTRA_SCREENSHOT_DIR").ok();
        let shot = |name: &'static str| {
            let (client, shots) = (client.clone(), shots.clone());
            async move {
                if let Some(dir) = shots {
                    let png = client.screenshot().await.unwrap();
                    std::fs::write(std::path::Path::new(&dir).join(name), png).unwrap();
                }
            }
        };
        // The token once; then the cookie.
        client
            .goto(&format!("{base}/doc/features/FEAT-002?token={token}"))
            .await
            .unwrap();
        wait_until(&client, "the document", "return location.pathname === '/doc/features/FEAT-002' && document.readyState === 'complete'").await;

        // Edit, change the text, save: the document page shows it.
        click(&client, "a.edit").await;
        wait_until(&client, "the form", "return location.pathname === '/edit/features/FEAT-002' && document.readyState === 'complete'").await;
        shot("edit.png").await;
        let area = client.find(Locator::Css("textarea#content")).await.unwrap();
        area.clear().await.unwrap();
        area.send_keys("# Photo attachments\n\nPhotos are resized before upload.\n").await.unwrap();
        click(&client, "button[type=submit]").await;
        wait_until(
            &client,
            "the saved document",
            "return location.pathname === '/doc/features/FEAT-002' \
             && document.querySelector('article').textContent.includes('Photos are resized before upload.')",
        )
        .await;
        shot("saved.png").await;
        // The browser posted CRLF; the LF document stays LF.
        assert_eq!(
            std::fs::read_to_string(p.path("features/FEAT-002.md")).unwrap(),
            "# Photo attachments\n\nPhotos are resized before upload.\n"
        );

        // A conflict: the file changes on disk while the form is open.
        click(&client, "a.edit").await;
        wait_until(&client, "the form again", "return location.pathname === '/edit/features/FEAT-002' && document.readyState === 'complete'").await;
        p.file(
            "features/FEAT-002.md",
            "# Photo attachments\n\nPhotos are resized before upload.\nThumbnails too.\n",
        );
        let area = client.find(Locator::Css("textarea#content")).await.unwrap();
        area.send_keys("My addition.\n").await.unwrap();
        click(&client, "button[type=submit]").await;
        wait_until(
            &client,
            "the conflict",
            "const n = document.querySelector('.notice'); \
             return n !== null && n.textContent.includes('changed since you opened it at version 2')",
        )
        .await;
        let kept = eval(&client, "return document.querySelector('textarea#content').value").await;
        assert_eq!(
            kept,
            json!("# Photo attachments\n\nPhotos are resized before upload.\nMy addition.\n")
        );
        assert_eq!(
            text(&client, "section.changed span.add").await,
            "+Thumbnails too."
        );
        assert_eq!(
            eval(&client, "return document.querySelector('input[name=version]').value").await,
            json!("3")
        );
        shot("conflict.png").await;
        // Nothing was written over the editor's save.
        assert!(
            std::fs::read_to_string(p.path("features/FEAT-002.md"))
                .unwrap()
                .contains("Thumbnails too.")
        );
        client.close().await.unwrap();
    });
}
