//! End-to-end tests of `orchestra serve --http` on the real binary: sessions, both eras, SSE notifications, Origin/Host/token checks, body cap, `/resource`, shutdown.
//!
//! The client is a small HTTP/1.1 client over `std::net::TcpStream` (one
//! connection per request, `Connection: close`), so every header — `Host`
//! and `Origin` included — is exactly what the test writes. It reads a
//! `Content-Length` or chunked body whole, or an SSE stream event by event.
//! All traffic goes to 127.0.0.1. The server is started on port 0 and
//! announces its port on stderr.
//!
//! Every error body a test receives is checked (when its server is
//! dropped) for the temp folder's path: error bodies carry no paths.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::{Value, json};

use crate::support::{BIN, Project, companion_files, fixture_dir, wait_exit};

/// A plain request on a loaded machine running a debug build.
const IO_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a notification may take after an import committed (the server
/// polls every 100 ms; the margin is for a noisy 2-core machine).
const NOTIFY_TIMEOUT: Duration = Duration::from_secs(5);
/// How long the server may take to announce its address.
const START_TIMEOUT: Duration = Duration::from_secs(30);

const MAX_BODY: usize = 4 * 1024 * 1024;
const FEAT_001: &str = "orchestra://features/FEAT-001";
const CAFE: &str = "orchestra://notes/caf%C3%A9%20notes";
const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

// ---------------------------------------------------------------------------
// The server under test.

/// A running `orchestra serve --http`, killed when dropped.
pub(crate) struct HttpServer {
    child: Child,
    pub(crate) port: u16,
    stderr: Arc<Mutex<String>>,
    /// Every error body received from this server.
    errors: Mutex<Vec<String>>,
    /// The test's temp folder, which no error body may name.
    root: PathBuf,
}

impl HttpServer {
    /// `serve --db DB --http 127.0.0.1:0 ARGS`.
    pub(crate) fn start(project: &Project, args: &[&str]) -> HttpServer {
        HttpServer::launch(project, "127.0.0.1:0", args, &[])
    }

    pub(crate) fn launch(
        project: &Project,
        bind: &str,
        args: &[&str],
        envs: &[(&str, &str)],
    ) -> HttpServer {
        let mut child = Command::new(BIN)
            .arg("serve")
            .arg("--db")
            .arg(project.db())
            .arg("--http")
            .arg(bind)
            .args(args)
            .current_dir(project.root())
            .env_remove("ORCHESTRA_DB")
            .env_remove("ORCHESTRA_TOKEN")
            .env_remove("RUST_LOG")
            .envs(envs.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = Arc::new(Mutex::new(String::new()));
        let (announce, announced) = mpsc::channel();
        {
            let pipe = BufReader::new(child.stderr.take().unwrap());
            let stderr = stderr.clone();
            std::thread::spawn(move || {
                for line in pipe.lines() {
                    let Ok(line) = line else { break };
                    stderr.lock().unwrap().push_str(&format!("{line}\n"));
                    if let Some(addr) = line
                        .strip_prefix("orchestra: serving MCP on http://")
                        .and_then(|rest| rest.strip_suffix("/mcp"))
                    {
                        let _ = announce.send(addr.to_string());
                    }
                }
            });
        }
        let addr = match announced.recv_timeout(START_TIMEOUT) {
            Ok(addr) => addr,
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "the server did not announce its address; stderr:\n{}",
                    stderr.lock().unwrap()
                );
            }
        };
        let port = addr
            .rsplit_once(':')
            .and_then(|(_, port)| port.parse().ok())
            .unwrap_or_else(|| panic!("no port in {addr:?}"));
        HttpServer {
            child,
            port,
            stderr,
            errors: Mutex::new(Vec::new()),
            root: project.root().to_path_buf(),
        }
    }

    /// The `Host` a client of the loopback address sends.
    fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    pub(crate) fn request(&self, method: &'static str, path: &str) -> Req<'_> {
        let mut req = Req {
            server: self,
            method,
            path: path.to_string(),
            host: Some(self.host()),
            headers: Vec::new(),
            body: Vec::new(),
            chunked: false,
            keep_alive: false,
        };
        req = req.header("Accept", "application/json, text/event-stream");
        if method == "POST" {
            req = req.header("Content-Type", "application/json");
        }
        req
    }

    /// POST /mcp with `message`.
    fn post(&self, message: &Value) -> Req<'_> {
        self.request("POST", "/mcp").json(message)
    }

    /// Sends a request (in `session`, if any) and returns its JSON-RPC
    /// response, which must come with 200 and carry the request's id.
    fn call(&self, session: Option<&str>, message: &Value) -> Value {
        let mut req = self.post(message);
        if let Some(id) = session {
            req = req.session(id);
        }
        let resp = req.send();
        // 2026-07-28 maps some errors to statuses; the handshake era is 200.
        let stateless = message["params"]["_meta"]
            .get("io.modelcontextprotocol/protocolVersion")
            .is_some();
        let code = resp.json()["error"]["code"].as_i64();
        let status = match (stateless, code) {
            (true, Some(-32601)) => 404,
            (true, Some(-32700 | -32600 | -32602 | -32020 | -32021 | -32022)) => 400,
            _ => 200,
        };
        resp.expect(status);
        assert_eq!(
            resp.header("content-type"),
            Some("application/json"),
            "{resp:?}"
        );
        let answer = resp.json();
        assert_eq!(answer["id"], message["id"], "{answer}");
        answer
    }

    /// `initialize` then `notifications/initialized`: the session id.
    fn initialize(&self) -> String {
        let resp = self.post(&initialize(0)).send();
        resp.expect(200);
        assert!(resp.json()["result"].is_object(), "{resp:?}");
        let id = resp
            .header("mcp-session-id")
            .unwrap_or_else(|| panic!("no Mcp-Session-Id: {resp:?}"))
            .to_string();
        self.post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .session(&id)
            .send()
            .expect(202);
        id
    }

    fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Sends SIGTERM.
    fn terminate(&self) {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        if std::thread::panicking() {
            return;
        }
        let stderr = self.stderr();
        assert!(
            !stderr.contains("ERROR") && !stderr.contains("panicked"),
            "the server logged an error:\n{stderr}"
        );
        let root = self.root.display().to_string();
        for body in self.errors.lock().unwrap().iter() {
            assert!(
                !body.contains(&root) && !body.contains("orchestra-it-"),
                "an error body shows the temp folder {root}: {body}"
            );
        }
    }
}

// ---------------------------------------------------------------------------
// A small HTTP/1.1 client.

/// One request, built header by header.
pub(crate) struct Req<'s> {
    server: &'s HttpServer,
    method: &'static str,
    path: String,
    /// `None`: no `Host` header at all.
    host: Option<String>,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    /// Send the body with `Transfer-Encoding: chunked`.
    chunked: bool,
    /// `Connection: keep-alive` instead of `close`.
    keep_alive: bool,
}

impl Req<'_> {
    /// Sets a header, replacing one of the same name.
    pub(crate) fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        self.headers.push((name.to_string(), value.to_string()));
        self
    }

    pub(crate) fn host(mut self, host: &str) -> Self {
        self.host = Some(host.to_string());
        self
    }

    fn session(self, id: &str) -> Self {
        self.header("Mcp-Session-Id", id)
    }

    pub(crate) fn origin(self, origin: &str) -> Self {
        self.header("Origin", origin)
    }

    /// The body, and for a 2026-07-28 message the headers a conforming
    /// client sends with it (`Mcp-Method`, `Mcp-Name`, `MCP-Protocol-Version`).
    fn json(mut self, message: &Value) -> Self {
        self.body = message.to_string().into_bytes();
        let params = &message["params"];
        if let Some(version) = params["_meta"]["io.modelcontextprotocol/protocolVersion"].as_str() {
            let method = message["method"].as_str().unwrap_or_default();
            self = self
                .header("Mcp-Method", method)
                .header("MCP-Protocol-Version", version);
            let name = match method {
                "resources/read" => params["uri"].as_str(),
                "tools/call" | "prompts/get" => params["name"].as_str(),
                _ => None,
            };
            if let Some(name) = name {
                self = self.header("Mcp-Name", &header_value(name));
            }
        }
        self
    }

    /// Drops a header set so far.
    fn without(mut self, name: &str) -> Self {
        self.headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        self
    }

    pub(crate) fn body(mut self, body: impl Into<Vec<u8>>) -> Self {
        self.body = body.into();
        self
    }

    /// Sends the body in 64 KiB chunks, without a `Content-Length`.
    fn chunked(mut self) -> Self {
        self.chunked = true;
        self
    }

    /// Sends the request and reads the whole response.
    pub(crate) fn send(self) -> Resp {
        self.send_and_keep().0
    }

    /// Sends the request with `Connection: keep-alive`, reads the whole
    /// response and returns the connection, still open.
    fn keep_alive(mut self) -> (Resp, Conn) {
        self.keep_alive = true;
        self.send_and_keep()
    }

    fn send_and_keep(self) -> (Resp, Conn) {
        let server = self.server;
        let what = format!("{} {}", self.method, self.path);
        let (head, mut body) = self.exchange();
        let deadline = Instant::now() + IO_TIMEOUT;
        let mut bytes = Vec::new();
        while let Some(part) = body
            .next(deadline)
            .unwrap_or_else(|e| panic!("{what}: reading the body: {e}"))
        {
            bytes.extend_from_slice(&part);
        }
        let resp = Resp {
            status: head.status,
            headers: head.headers,
            body: bytes,
        };
        let text = resp.text();
        if resp.status >= 400 || text.contains("\"error\"") {
            server.errors.lock().unwrap().push(text);
        }
        (resp, body.conn)
    }

    /// Sends the request and returns its response as an event stream, which
    /// must come with 200 and `text/event-stream`.
    pub(crate) fn open(self) -> EventStream {
        let what = format!("{} {}", self.method, self.path);
        let (head, body) = self.exchange();
        assert_eq!(head.status, 200, "{what}: {:?}", head.headers);
        let content_type = head.header("content-type").unwrap_or_default();
        assert!(
            content_type.starts_with("text/event-stream"),
            "{what}: Content-Type {content_type:?}"
        );
        EventStream {
            body,
            pending: Vec::new(),
        }
    }

    fn exchange(self) -> (Head, Body) {
        let mut stream = TcpStream::connect(("127.0.0.1", self.server.port)).unwrap();
        stream.set_write_timeout(Some(IO_TIMEOUT)).unwrap();
        let mut head = format!("{} {} HTTP/1.1\r\n", self.method, self.path);
        if let Some(host) = &self.host {
            head.push_str(&format!("Host: {host}\r\n"));
        }
        let connection = if self.keep_alive {
            "keep-alive"
        } else {
            "close"
        };
        head.push_str(&format!("Connection: {connection}\r\n"));
        for (name, value) in &self.headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        if self.chunked {
            head.push_str("Transfer-Encoding: chunked\r\n");
        } else if self.method != "GET" {
            head.push_str(&format!("Content-Length: {}\r\n", self.body.len()));
        }
        head.push_str("\r\n");
        let mut bytes = head.into_bytes();
        if self.chunked {
            for chunk in self.body.chunks(64 * 1024) {
                bytes.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
                bytes.extend_from_slice(chunk);
                bytes.extend_from_slice(b"\r\n");
            }
            bytes.extend_from_slice(b"0\r\n\r\n");
        } else {
            bytes.extend_from_slice(&self.body);
        }
        // The server may answer before it has read everything (413) and
        // close: what matters is its answer.
        let _ = stream.write_all(&bytes);
        let mut conn = Conn {
            stream,
            buf: Vec::new(),
        };
        let deadline = Instant::now() + IO_TIMEOUT;
        let head = Head::read(&mut conn, deadline)
            .unwrap_or_else(|e| panic!("{} {}: reading the head: {e}", self.method, self.path));
        let framing = if head.status == 204 || head.status == 304 || head.status < 200 {
            Framing::Length(0)
        } else if head
            .header("transfer-encoding")
            .is_some_and(|t| t.to_ascii_lowercase().contains("chunked"))
        {
            Framing::Chunked
        } else if let Some(length) = head.header("content-length") {
            Framing::Length(length.trim().parse().expect("Content-Length"))
        } else {
            Framing::Close
        };
        (
            head,
            Body {
                conn,
                framing,
                done: false,
            },
        )
    }
}

/// A connection and the bytes read from it but not consumed yet.
struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
}

fn timed_out() -> io::Error {
    io::Error::new(io::ErrorKind::TimedOut, "deadline passed")
}

fn early_eof() -> io::Error {
    io::Error::new(io::ErrorKind::UnexpectedEof, "the connection closed early")
}

impl Conn {
    /// Reads more bytes; `false` at the end of the stream.
    fn fill(&mut self, deadline: Instant) -> io::Result<bool> {
        let mut chunk = [0u8; 64 * 1024];
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(timed_out());
            }
            self.stream.set_read_timeout(Some(left))?;
            match self.stream.read(&mut chunk) {
                Ok(0) => return Ok(false),
                Ok(n) => {
                    self.buf.extend_from_slice(&chunk[..n]);
                    return Ok(true);
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock
                            | io::ErrorKind::TimedOut
                            | io::ErrorKind::Interrupted
                    ) => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// One CRLF-terminated line, without its CRLF; `None` at the end.
    fn line(&mut self, deadline: Instant) -> io::Result<Option<String>> {
        loop {
            if let Some(i) = self.buf.windows(2).position(|w| w == b"\r\n") {
                let line: Vec<u8> = self.buf.drain(..i + 2).collect();
                return Ok(Some(String::from_utf8_lossy(&line[..i]).into_owned()));
            }
            if !self.fill(deadline)? {
                return Ok(None);
            }
        }
    }

    /// Exactly `n` bytes; `None` when the stream ends first.
    fn take(&mut self, n: usize, deadline: Instant) -> io::Result<Option<Vec<u8>>> {
        while self.buf.len() < n {
            if !self.fill(deadline)? {
                return Ok(None);
            }
        }
        Ok(Some(self.buf.drain(..n).collect()))
    }
}

struct Head {
    status: u16,
    /// Names in lower case.
    headers: Vec<(String, String)>,
}

impl Head {
    fn read(conn: &mut Conn, deadline: Instant) -> io::Result<Head> {
        let status_line = conn.line(deadline)?.ok_or_else(early_eof)?;
        let status = status_line
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| io::Error::other(format!("bad status line {status_line:?}")))?;
        let mut headers = Vec::new();
        loop {
            let line = conn.line(deadline)?.ok_or_else(early_eof)?;
            if line.is_empty() {
                break;
            }
            let (name, value) = line
                .split_once(':')
                .ok_or_else(|| io::Error::other(format!("bad header line {line:?}")))?;
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
        }
        Ok(Head { status, headers })
    }

    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        header(&self.headers, name)
    }
}

fn header<'h>(headers: &'h [(String, String)], name: &str) -> Option<&'h str> {
    headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

enum Framing {
    Length(usize),
    Chunked,
    /// Until the server closes the connection.
    Close,
}

/// A response body, read part by part.
struct Body {
    conn: Conn,
    framing: Framing,
    done: bool,
}

impl Body {
    /// The next part of the body; `None` at its end (a chunked body cut
    /// short by the connection closing ends there too).
    fn next(&mut self, deadline: Instant) -> io::Result<Option<Vec<u8>>> {
        if self.done {
            return Ok(None);
        }
        match self.framing {
            Framing::Length(n) => {
                self.done = true;
                if n == 0 {
                    return Ok(None);
                }
                self.conn.take(n, deadline)?.ok_or_else(early_eof).map(Some)
            }
            Framing::Close => {
                if self.conn.buf.is_empty() && !self.conn.fill(deadline)? {
                    self.done = true;
                    return Ok(None);
                }
                Ok(Some(std::mem::take(&mut self.conn.buf)))
            }
            Framing::Chunked => {
                let Some(line) = self.conn.line(deadline)? else {
                    self.done = true;
                    return Ok(None);
                };
                let size = line.split(';').next().unwrap_or_default().trim();
                let size = usize::from_str_radix(size, 16)
                    .map_err(|_| io::Error::other(format!("bad chunk size {line:?}")))?;
                if size == 0 {
                    // Trailers, up to the empty line.
                    while let Some(line) = self.conn.line(deadline)? {
                        if line.is_empty() {
                            break;
                        }
                    }
                    self.done = true;
                    return Ok(None);
                }
                let mut data = self.conn.take(size + 2, deadline)?.ok_or_else(early_eof)?;
                data.truncate(size);
                Ok(Some(data))
            }
        }
    }
}

/// A whole response.
pub(crate) struct Resp {
    pub(crate) status: u16,
    headers: Vec<(String, String)>,
    pub(crate) body: Vec<u8>,
}

impl std::fmt::Debug for Resp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let text = self.text();
        let shown: String = text.chars().take(300).collect();
        let more = if shown.len() < text.len() { "…" } else { "" };
        write!(f, "{} {:?} {shown}{more}", self.status, self.headers)
    }
}

impl Resp {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        header(&self.headers, name)
    }

    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub(crate) fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("{e}: {self:?}"))
    }

    #[track_caller]
    pub(crate) fn expect(&self, status: u16) -> &Resp {
        assert_eq!(self.status, status, "{self:?}");
        self
    }

    /// A JSON-RPC error response: its error code.
    #[track_caller]
    fn rpc_error_code(&self) -> i64 {
        let body = self.json();
        assert_eq!(body["jsonrpc"], "2.0", "{self:?}");
        body["error"]["code"]
            .as_i64()
            .unwrap_or_else(|| panic!("not a JSON-RPC error: {self:?}"))
    }
}

/// A `text/event-stream` response, read event by event.
pub(crate) struct EventStream {
    body: Body,
    pending: Vec<u8>,
}

pub(crate) struct SseEvent {
    pub(crate) event: Option<String>,
    pub(crate) id: Option<String>,
    pub(crate) data: String,
}

impl EventStream {
    /// The next event (comments and keep-alives passed over); `None` when
    /// the stream ended.
    pub(crate) fn next_event(&mut self, deadline: Instant) -> io::Result<Option<SseEvent>> {
        loop {
            let normalized = self.pending.windows(2).position(|w| w == b"\n\n");
            if let Some(i) = normalized {
                let block: Vec<u8> = self.pending.drain(..i + 2).collect();
                let block = String::from_utf8_lossy(&block).into_owned();
                let mut event = None;
                let mut id = None;
                let mut data: Vec<&str> = Vec::new();
                for line in block.lines() {
                    let line = line.trim_end_matches('\r');
                    let (field, value) = line.split_once(':').unwrap_or((line, ""));
                    let value = value.strip_prefix(' ').unwrap_or(value);
                    match field {
                        "event" => event = Some(value.to_string()),
                        "id" => id = Some(value.to_string()),
                        "data" => data.push(value),
                        _ => {}
                    }
                }
                if event.is_none() && data.is_empty() {
                    continue;
                }
                return Ok(Some(SseEvent {
                    event,
                    id,
                    data: data.join("\n"),
                }));
            }
            match self.body.next(deadline)? {
                Some(part) => self.pending.extend_from_slice(&part),
                None => return Ok(None),
            }
        }
    }

    /// The next `message` event, parsed.
    #[track_caller]
    fn message(&mut self, timeout: Duration) -> Value {
        let deadline = Instant::now() + timeout;
        let event = match self.next_event(deadline) {
            Ok(Some(event)) => event,
            Ok(None) => panic!("the stream ended"),
            Err(e) => panic!("no event within {timeout:?}: {e}"),
        };
        assert_eq!(event.event.as_deref(), Some("message"), "{}", event.data);
        serde_json::from_str(&event.data).unwrap_or_else(|e| panic!("{e}: {}", event.data))
    }

    /// Messages until one for which `wanted` holds, within `timeout`.
    #[track_caller]
    fn wait_for(&mut self, timeout: Duration, wanted: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + timeout;
        let mut seen = Vec::new();
        loop {
            match self.next_event(deadline) {
                Ok(Some(event)) => {
                    assert_eq!(event.event.as_deref(), Some("message"), "{}", event.data);
                    let message: Value = serde_json::from_str(&event.data)
                        .unwrap_or_else(|e| panic!("{e}: {}", event.data));
                    if wanted(&message) {
                        return message;
                    }
                    seen.push(message);
                }
                Ok(None) => panic!("the stream ended; seen: {seen:?}"),
                Err(e) => panic!("not within {timeout:?} ({e}); seen: {seen:?}"),
            }
        }
    }

    /// Waits for the end of the stream; the messages before it.
    #[track_caller]
    fn expect_end(&mut self, timeout: Duration) -> Vec<String> {
        let deadline = Instant::now() + timeout;
        let mut seen = Vec::new();
        loop {
            match self.next_event(deadline) {
                Ok(Some(event)) => seen.push(event.data),
                Ok(None) => return seen,
                Err(e) => panic!("the stream did not end within {timeout:?} ({e}); seen: {seen:?}"),
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Messages and fixtures.

fn rpc(id: impl Into<Value>, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id.into(), "method": method, "params": params})
}

fn initialize(id: i64) -> Value {
    rpc(
        id,
        "initialize",
        json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "http-test", "version": "1"}
        }),
    )
}

/// `params` in the 2026-07-28 envelope.
fn envelope(mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "http-test", "version": "1"}
    });
    params
}

fn listen(id: &str, uris: &[&str], list_changed: bool) -> Value {
    rpc(
        id,
        "subscriptions/listen",
        envelope(json!({
            "notifications": {"resourceSubscriptions": uris, "resourcesListChanged": list_changed}
        })),
    )
}

/// A copy of the fixture project, imported into its default database.
pub(crate) fn fixture_project() -> Project {
    let p = Project::fixture();
    p.import(&[]).assert_success();
    p
}

/// Edits FEAT-001 of `p` and imports: an `updated` for its subscribers.
fn edit_and_import(p: &Project, line: &str) {
    let path = p.path("features/FEAT-001.md");
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str(line);
    text.push('\n');
    p.file("features/FEAT-001.md", text);
    p.import(&[]).assert_success();
}

fn fixture_text(rel: &str) -> String {
    std::fs::read_to_string(fixture_dir().join(rel)).unwrap()
}

/// Percent-encodes every byte but the unreserved ones and those in `keep`.
pub(crate) fn encode(text: &str, keep: &[u8]) -> String {
    let mut out = String::new();
    for &b in text.as_bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) || keep.contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The URI of every fixture document, in listing order (prefix, then id).
fn fixture_uris() -> Vec<String> {
    fn ids(base: &Path, dir: &Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                ids(base, &path, out);
            } else if let Some(id) = path
                .strip_prefix(base)
                .unwrap()
                .to_str()
                .unwrap()
                .strip_suffix(".md")
            {
                out.push(id.to_string());
            }
        }
    }
    let mut uris = Vec::new();
    for prefix in ["docs", "features", "notes"] {
        let base = fixture_dir().join(prefix);
        let mut found = Vec::new();
        ids(&base, &base, &mut found);
        found.sort();
        uris.extend(
            found
                .iter()
                .map(|id| format!("orchestra://{prefix}/{}", encode(id, b"/"))),
        );
    }
    uris
}

/// A header value as the 2026-07-28 transport sends it: printable ASCII as
/// it is, anything else as `=?base64?…?=`.
fn header_value(text: &str) -> String {
    if text.bytes().all(|b| (0x20..0x7f).contains(&b)) {
        text.to_string()
    } else {
        format!(
            "=?base64?{}?=",
            base64::engine::general_purpose::STANDARD.encode(text)
        )
    }
}

/// `/resource?uri=…`, the value encoded as a query component.
fn resource_path(uri: &str) -> String {
    format!("/resource?uri={}", encode(uri, b""))
}

// ---------------------------------------------------------------------------
// 1. Handshake sessions.

#[test]
fn a_handshake_session_lives_from_initialize_to_delete() {
    let p = fixture_project();
    let s = HttpServer::start(&p, &["--page-size", "5"]);

    let init = s.post(&initialize(0)).send();
    init.expect(200);
    assert_eq!(init.header("content-type"), Some("application/json"));
    let sid = init
        .header("mcp-session-id")
        .expect("Mcp-Session-Id")
        .to_string();
    assert!(
        sid.len() >= 16 && sid.bytes().all(|b| (0x21..=0x7e).contains(&b)),
        "session ids are visible ASCII and long enough to be unguessable: {sid:?}"
    );
    let result = &init.json()["result"];
    assert_eq!(result["protocolVersion"], "2025-11-25", "{result}");
    assert_eq!(result["serverInfo"]["name"], "orchestra", "{result}");
    assert_eq!(result["capabilities"]["resources"]["subscribe"], true);
    let other = s.initialize();
    assert_ne!(other, sid, "every initialize opens a session of its own");

    // A notification: 202, no body.
    let accepted = s
        .post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .session(&sid)
        .send();
    accepted.expect(202);
    assert!(accepted.body.is_empty(), "{accepted:?}");

    // The session header: missing, unknown, right.
    let list = rpc(1, "resources/list", json!({}));
    let without = s.post(&list).send();
    without.expect(400);
    assert_eq!(without.rpc_error_code(), -32600);
    assert_eq!(without.json()["id"], 1, "{without:?}");
    s.post(&list)
        .session("00000000000000000000000000000000")
        .send()
        .expect(404);
    assert!(s.call(Some(&sid), &list)["result"]["resources"].is_array());

    // Paging through every document, five at a time.
    let mut uris = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let page = s.call(Some(&sid), &rpc(10 + pages, "resources/list", params));
        let result = &page["result"];
        assert!(result.get("resultType").is_none(), "handshake era: {page}");
        let resources = result["resources"].as_array().expect("resources");
        assert!(resources.len() <= 5, "{page}");
        uris.extend(
            resources
                .iter()
                .map(|r| r["uri"].as_str().unwrap().to_string()),
        );
        pages += 1;
        match result.get("nextCursor") {
            Some(next) => cursor = Some(next.as_str().unwrap().to_string()),
            None => break,
        }
        assert!(pages < 10, "the listing does not end");
    }
    assert_eq!(pages, 4);
    assert_eq!(uris, fixture_uris());
    assert_eq!(uris.len(), 17);

    // Reads, byte-exact; not found.
    for (uri, file) in [
        (FEAT_001, "features/FEAT-001.md"),
        (CAFE, "notes/café notes.md"),
        ("orchestra://docs/adr/0006", "docs/adr/0006.md"),
    ] {
        let read = s.call(Some(&sid), &rpc(20, "resources/read", json!({"uri": uri})));
        let content = &read["result"]["contents"][0];
        assert_eq!(content["uri"], uri, "{read}");
        assert_eq!(content["mimeType"], "text/markdown", "{read}");
        assert_eq!(content["text"].as_str(), Some(fixture_text(file).as_str()));
    }
    let missing = "orchestra://features/FEAT-999";
    let read = s.call(
        Some(&sid),
        &rpc(21, "resources/read", json!({"uri": missing})),
    );
    assert_eq!(read["error"]["code"], -32002, "{read}");
    assert_eq!(read["error"]["data"]["uri"], missing, "{read}");

    // DELETE ends the session, and only it.
    let deleted = s.request("DELETE", "/mcp").session(&sid).send();
    assert!((200..300).contains(&deleted.status), "{deleted:?}");
    s.post(&list).session(&sid).send().expect(404);
    s.request("DELETE", "/mcp").session(&sid).send().expect(404);
    s.request("DELETE", "/mcp").send().expect(400);
    assert!(s.call(Some(&other), &list)["result"]["resources"].is_array());
}

#[test]
fn a_failed_initialize_opens_no_session() {
    let p = fixture_project();
    let s = HttpServer::start(&p, &[]);
    let resp = s
        .post(&rpc(0, "initialize", json!({"capabilities": {}})))
        .send();
    resp.expect(200);
    assert_eq!(resp.rpc_error_code(), -32602);
    assert_eq!(resp.header("mcp-session-id"), None, "{resp:?}");
}

// ---------------------------------------------------------------------------
// 2. MCP-Protocol-Version.

#[test]
fn the_protocol_version_header_must_name_a_known_version() {
    let p = fixture_project();
    let s = HttpServer::start(&p, &[]);
    let sid = s.initialize();
    let cases: [(Option<&str>, u16); 8] = [
        (None, 200),
        (Some("2025-11-25"), 200),
        (Some("2025-06-18"), 200),
        (Some("2025-03-26"), 200),
        (Some("2024-11-05"), 200),
        (Some("1999-01-01"), 400),
        (Some("2025-11-25x"), 400),
        (Some(""), 400),
    ];
    for (n, (version, status)) in cases.into_iter().enumerate() {
        let mut req = s
            .post(&rpc(n as i64, "resources/list", json!({})))
            .session(&sid);
        if let Some(version) = version {
            req = req.header("MCP-Protocol-Version", version);
        }
        let resp = req.send();
        assert_eq!(resp.status, status, "{version:?}: {resp:?}");
        if status == 400 {
            assert_eq!(resp.rpc_error_code(), -32600, "{version:?}");
        } else {
            assert!(resp.json()["result"]["resources"].is_array(), "{resp:?}");
        }
    }
    // The same on the session's stream, and for a stateless request.
    s.request("GET", "/mcp")
        .session(&sid)
        .header("MCP-Protocol-Version", "1999-01-01")
        .send()
        .expect(400);
    let discover = rpc(1, "server/discover", envelope(json!({})));
    s.post(&discover)
        .header("MCP-Protocol-Version", "2026-07-28")
        .send()
        .expect(200);
    s.post(&discover)
        .header("MCP-Protocol-Version", "1999-01-01")
        .send()
        .expect(400);
}

// ---------------------------------------------------------------------------
// 3. 2026-07-28: stateless requests.

#[test]
fn stateless_requests_need_no_session() {
    let p = fixture_project();
    let s = HttpServer::start(&p, &[]);

    let resp = s
        .post(&rpc(1, "server/discover", envelope(json!({}))))
        .send();
    resp.expect(200);
    assert_eq!(resp.header("mcp-session-id"), None, "{resp:?}");
    let discover = &resp.json()["result"];
    assert_eq!(discover["resultType"], "complete", "{discover}");
    assert_eq!(discover["ttlMs"], 3_600_000, "{discover}");
    assert_eq!(discover["cacheScope"], "private", "{discover}");
    assert_eq!(discover["supportedVersions"], json!(["2026-07-28"]));
    assert_eq!(
        discover["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "orchestra"
    );

    let read = s.call(
        None,
        &rpc("r-1", "resources/read", envelope(json!({"uri": FEAT_001}))),
    );
    let result = &read["result"];
    assert_eq!(result["resultType"], "complete", "{read}");
    assert_eq!(result["ttlMs"], 0, "{read}");
    assert_eq!(result["cacheScope"], "private", "{read}");
    assert_eq!(
        result["contents"][0]["text"].as_str(),
        Some(fixture_text("features/FEAT-001.md").as_str())
    );

    let list = s.call(None, &rpc(2, "resources/list", envelope(json!({}))));
    assert_eq!(list["result"]["resources"].as_array().unwrap().len(), 17);
    assert_eq!(list["result"]["ttlMs"], 0);
    assert_eq!(list["result"]["cacheScope"], "private");

    let missing = "orchestra://features/FEAT-999";
    let read = s.call(
        None,
        &rpc(3, "resources/read", envelope(json!({"uri": missing}))),
    );
    assert_eq!(read["error"]["code"], -32602, "{read}");
    assert_eq!(read["error"]["data"]["uri"], missing, "{read}");

    let mut old = rpc(4, "resources/list", envelope(json!({})));
    old["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2099-01-01");
    let refused = s.call(None, &old);
    assert_eq!(refused["error"]["code"], -32022);
    assert_eq!(
        refused["error"]["data"],
        json!({"supported": ["2026-07-28"], "requested": "2099-01-01"})
    );

    // A listen that cannot start is answered at once, in JSON.
    let bad = rpc(
        6,
        "subscriptions/listen",
        envelope(json!({"notifications": 5})),
    );
    assert_eq!(s.call(None, &bad)["error"]["code"], -32602);

    // A notification needs no session either.
    let cancelled =
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9}});
    let resp = s.post(&cancelled).send();
    resp.expect(202);
    assert!(resp.body.is_empty(), "{resp:?}");

    // Bodies that are no single message: 400 with the JSON-RPC error.
    let one = rpc(5, "server/discover", envelope(json!({})));
    let cases: [(Vec<u8>, i64); 5] = [
        (format!("[{one}]").into_bytes(), -32600),
        (format!("[{one},{one}]").into_bytes(), -32600),
        (b"42".to_vec(), -32600),
        (b"{not json".to_vec(), -32700),
        (b"".to_vec(), -32700),
    ];
    for (body, code) in cases {
        let shown = String::from_utf8_lossy(&body).into_owned();
        let resp = s.request("POST", "/mcp").body(body).send();
        assert_eq!(resp.status, 400, "{shown}: {resp:?}");
        assert_eq!(resp.rpc_error_code(), code, "{shown}");
        assert_eq!(resp.json()["id"], Value::Null, "{shown}");
    }
}

/// A request, the headers it sends instead of a conforming client's (a
/// value, or `None` to leave the header out), the status and the error code
/// expected (0: answered).
type HeaderCase = (Value, Vec<(&'static str, Option<String>)>, u16, i64);

/// 2026-07-28 over HTTP: the headers must say what the body says.
#[test]
fn stateless_requests_carry_headers_that_match_the_body() {
    let p = fixture_project();
    let s = HttpServer::start(&p, &[]);
    let read = |uri: &str| rpc(1, "resources/read", envelope(json!({"uri": uri})));
    let search = rpc(
        2,
        "tools/call",
        envelope(json!({"name": "search", "arguments": {"query": "sync"}})),
    );
    let cases: Vec<HeaderCase> = vec![
        (read(FEAT_001), vec![], 200, 0),
        (read(CAFE), vec![], 200, 0),
        // Not ASCII: the client sends the name in base64, which matches;
        // then the handler refuses the URI (ids must be percent-encoded).
        (read("orchestra://notes/café notes"), vec![], 400, -32602),
        (search.clone(), vec![], 200, 0),
        (read(FEAT_001), vec![("Mcp-Method", None)], 400, -32020),
        (
            read(FEAT_001),
            vec![("Mcp-Method", Some("resources/list".into()))],
            400,
            -32020,
        ),
        (read(FEAT_001), vec![("Mcp-Name", None)], 400, -32020),
        (
            read(FEAT_001),
            vec![("Mcp-Name", Some("orchestra://features/FEAT-002".into()))],
            400,
            -32020,
        ),
        // Base64 form, decoded before it is compared.
        (
            read(CAFE),
            vec![(
                "Mcp-Name",
                Some(format!(
                    "=?base64?{}?=",
                    base64::engine::general_purpose::STANDARD.encode(CAFE)
                )),
            )],
            200,
            0,
        ),
        (
            read(CAFE),
            vec![("Mcp-Name", Some("=?base64?not base64?=".into()))],
            400,
            -32020,
        ),
        (search.clone(), vec![("Mcp-Name", None)], 400, -32020),
        (
            search.clone(),
            vec![("Mcp-Name", Some("grep".into()))],
            400,
            -32020,
        ),
        (
            read(FEAT_001),
            vec![("MCP-Protocol-Version", None)],
            400,
            -32020,
        ),
        (
            read(FEAT_001),
            vec![("MCP-Protocol-Version", Some("2025-11-25".into()))],
            400,
            -32020,
        ),
        // Errors of the request itself map to statuses too.
        (read("orchestra://features/FEAT-999"), vec![], 400, -32602),
        (
            rpc(3, "no/such/method", envelope(json!({}))),
            vec![],
            404,
            -32601,
        ),
    ];
    for (message, headers, status, code) in cases {
        let mut req = s.post(&message);
        for (name, value) in &headers {
            req = req.without(name);
            if let Some(value) = value {
                req = req.header(name, value);
            }
        }
        let resp = req.send();
        assert_eq!(resp.status, status, "{message} {headers:?}: {resp:?}");
        let answer = resp.json();
        assert_eq!(answer["id"], message["id"], "{resp:?}");
        match code {
            0 => assert!(answer["result"].is_object(), "{resp:?}"),
            code => {
                assert_eq!(answer["error"]["code"], code, "{headers:?}: {resp:?}");
                if code == -32020 {
                    let shown = headers[0].0;
                    let said = answer["error"]["message"].as_str().unwrap_or_default();
                    assert!(said.contains(shown), "names {shown}: {said}");
                }
            }
        }
    }
    // An unsupported version: 400 and -32022 with what is supported.
    let mut old = rpc(4, "resources/list", envelope(json!({})));
    old["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2099-01-01");
    let resp = s.post(&old).send();
    assert_eq!(resp.status, 400, "{resp:?}");
    assert_eq!(
        resp.json()["error"]["data"],
        json!({"supported": ["2026-07-28"], "requested": "2099-01-01"})
    );
    // The handshake era answers errors with 200, headers or not.
    let sid = s.initialize();
    let missing = s.call(
        Some(&sid),
        &rpc(
            5,
            "resources/read",
            json!({"uri": "orchestra://features/FEAT-999"}),
        ),
    );
    assert_eq!(missing["error"]["code"], -32002);
}

// ---------------------------------------------------------------------------
// 4. Notifications over SSE.

#[test]
fn a_session_stream_carries_updates_after_an_import() {
    let p = fixture_project();
    let s = HttpServer::start(&p, &[]);
    let sid = s.initialize();
    let mut stream = s
        .request("GET", "/mcp")
        .session(&sid)
        .header("Accept", "text/event-stream")
        .open();
    let subscribed = s.call(
        Some(&sid),
        &rpc(1, "resources/subscribe", json!({"uri": FEAT_001})),
    );
    assert_eq!(subscribed["result"], json!({}), "{subscribed}");

    edit_and_import(&p, "Edited over HTTP.");
    let updated = stream.wait_for(NOTIFY_TIMEOUT, |m| {
        m["method"] == "notifications/resources/updated"
    });
    assert_eq!(updated["params"]["uri"], FEAT_001, "{updated}");
    assert!(updated.get("id").is_none(), "{updated}");
    let read = s.call(
        Some(&sid),
        &rpc(2, "resources/read", json!({"uri": FEAT_001})),
    );
    let text = read["result"]["contents"][0]["text"].as_str().unwrap();
    assert!(text.ends_with("Edited over HTTP.\n"), "{read}");

    // A new document: list_changed on the same stream.
    p.file("notes/new-note.md", "# New note\n");
    p.import(&[]).assert_success();
    stream.wait_for(NOTIFY_TIMEOUT, |m| {
        m["method"] == "notifications/resources/list_changed"
    });

    // Ending the session ends its stream.
    let deleted = s.request("DELETE", "/mcp").session(&sid).send();
    assert!((200..300).contains(&deleted.status), "{deleted:?}");
    stream.expect_end(NOTIFY_TIMEOUT);
}

#[test]
fn a_listen_is_a_stream_of_its_own_until_the_client_closes_it() {
    let p = fixture_project();
    let s = HttpServer::start(&p, &[]);

    let mut stream = s.post(&listen("listen-1", &[FEAT_001], true)).open();
    let ack = stream.message(NOTIFY_TIMEOUT);
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );
    assert_eq!(ack["params"]["_meta"][SUBSCRIPTION_ID], "listen-1", "{ack}");
    assert_eq!(
        ack["params"]["notifications"],
        json!({"resourceSubscriptions": [FEAT_001], "resourcesListChanged": true}),
        "{ack}"
    );

    edit_and_import(&p, "Edited for a listen.");
    let updated = stream.wait_for(NOTIFY_TIMEOUT, |m| {
        m["method"] == "notifications/resources/updated"
    });
    assert_eq!(updated["params"]["uri"], FEAT_001, "{updated}");
    assert_eq!(
        updated["params"]["_meta"][SUBSCRIPTION_ID], "listen-1",
        "{updated}"
    );

    p.file("notes/new-note.md", "# New note\n");
    p.import(&[]).assert_success();
    let changed = stream.wait_for(NOTIFY_TIMEOUT, |m| {
        m["method"] == "notifications/resources/list_changed"
    });
    assert_eq!(
        changed["params"]["_meta"][SUBSCRIPTION_ID], "listen-1",
        "{changed}"
    );

    // The client hangs up; the next commit finds the stream gone, and the
    // server goes on answering.
    drop(stream);
    edit_and_import(&p, "Edited after the listen closed.");
    std::thread::sleep(Duration::from_millis(500));
    let discover = s.call(None, &rpc(2, "server/discover", envelope(json!({}))));
    assert_eq!(discover["result"]["resultType"], "complete", "{discover}");
    let mut second = s.post(&listen("listen-2", &[FEAT_001], false)).open();
    assert_eq!(
        second.message(NOTIFY_TIMEOUT)["params"]["_meta"][SUBSCRIPTION_ID],
        "listen-2"
    );
    edit_and_import(&p, "Edited for the second listen.");
    let updated = second.wait_for(NOTIFY_TIMEOUT, |m| {
        m["method"] == "notifications/resources/updated"
    });
    assert_eq!(
        updated["params"]["_meta"][SUBSCRIPTION_ID], "listen-2",
        "{updated}"
    );

    // GET without a session: 2026-07-28 clients listen instead.
    let get = s.request("GET", "/mcp").send();
    get.expect(405);
    assert!(
        get.header("allow").is_some_and(|a| a.contains("POST")),
        "{get:?}"
    );
}

// ---------------------------------------------------------------------------
// 5. Origin, Host, token, body size.

#[test]
fn origins_beyond_the_loopback_and_the_allowed_ones_are_refused() {
    let p = fixture_project();
    let plain = HttpServer::start(&p, &[]);
    let viewer = HttpServer::start(&p, &["--allow-origin", "https://viewer.example"]);
    let cases = [
        (&plain, "http://evil.example", 403),
        (&plain, "http://localhost:3000", 200),
        (&plain, "http://127.0.0.1:8080", 200),
        (&plain, "http://[::1]:3000", 200),
        (&plain, "http://localhost.evil.example", 403),
        (&plain, "https://viewer.example", 403),
        (&plain, "null", 403),
        (&viewer, "https://viewer.example", 200),
        (&viewer, "http://evil.example", 403),
        (&viewer, "https://viewer.example.evil", 403),
        (&viewer, "http://localhost:3000", 200),
    ];
    for (s, origin, status) in cases {
        let init = s.post(&initialize(0)).origin(origin).send();
        assert_eq!(init.status, status, "POST /mcp from {origin}: {init:?}");
        assert_eq!(
            init.header("mcp-session-id").is_some(),
            status == 200,
            "{origin}: {init:?}"
        );
        let read = s
            .request("GET", &resource_path(FEAT_001))
            .origin(origin)
            .send();
        assert_eq!(read.status, status, "GET /resource from {origin}: {read:?}");
    }
}

/// An allowed browser page must also be able to read the answers: without
/// CORS headers the browser hides them, and without an answer to the
/// preflight it never sends a JSON POST (or one with `Authorization`).
#[test]
fn an_allowed_origin_gets_cors_headers() {
    let p = fixture_project();
    let s = HttpServer::start(&p, &["--allow-origin", "https://viewer.example"]);
    for origin in ["https://viewer.example", "http://localhost:3000"] {
        let read = s
            .request("GET", &resource_path(FEAT_001))
            .origin(origin)
            .send();
        read.expect(200);
        assert!(
            matches!(read.header("access-control-allow-origin"), Some(o) if o == origin || o == "*"),
            "GET /resource from {origin}: {read:?}"
        );
        let preflight = s
            .request("OPTIONS", "/mcp")
            .origin(origin)
            .header("Access-Control-Request-Method", "POST")
            .header(
                "Access-Control-Request-Headers",
                "content-type, mcp-session-id, mcp-protocol-version",
            )
            .send();
        assert!(
            (200..300).contains(&preflight.status),
            "preflight from {origin}: {preflight:?}"
        );
        let allowed = preflight
            .header("access-control-allow-headers")
            .unwrap_or_default()
            .to_ascii_lowercase();
        assert!(
            allowed == "*" || allowed.contains("mcp-session-id"),
            "preflight from {origin}: {preflight:?}"
        );
        let init = s.post(&initialize(0)).origin(origin).send();
        init.expect(200);
        let exposed = init
            .header("access-control-expose-headers")
            .unwrap_or_default()
            .to_ascii_lowercase();
        assert!(
            exposed.contains("mcp-session-id"),
            "POST /mcp from {origin}: {init:?}"
        );
    }
    let refused = s
        .request("OPTIONS", "/mcp")
        .origin("http://evil.example")
        .header("Access-Control-Request-Method", "POST")
        .send();
    refused.expect(403);
}

#[test]
fn a_host_other_than_the_bound_address_is_refused() {
    let p = fixture_project();
    let s = HttpServer::start(&p, &[]);
    let port = s.port;
    let cases = [
        (format!("evil.example:{port}"), 421),
        (format!("127.0.0.1:{port}"), 200),
        (format!("localhost:{port}"), 200),
        (format!("LOCALHOST:{port}"), 200),
        (format!("127.0.0.1:{}", port.wrapping_add(1)), 421),
        ("evil.example".to_string(), 421),
    ];
    for (host, status) in cases {
        let init = s.post(&initialize(0)).host(&host).send();
        assert_eq!(init.status, status, "POST /mcp, Host {host}: {init:?}");
        let read = s
            .request("GET", &resource_path(FEAT_001))
            .host(&host)
            .send();
        assert_eq!(read.status, status, "GET /resource, Host {host}: {read:?}");
        let health = s.request("GET", "/healthz").host(&host).send();
        assert_eq!(
            health.status, status,
            "GET /healthz, Host {host}: {health:?}"
        );
    }
}

#[test]
fn a_token_from_a_file_or_the_environment_is_required() {
    let p = fixture_project();
    let token = "s3cret-T0ken";
    p.outside_file("token", format!("{token}\n"));
    let token_file = p.root_path("token");
    let servers = [
        (
            "--token-file",
            HttpServer::launch(
                &p,
                "127.0.0.1:0",
                &["--token-file", token_file.to_str().unwrap()],
                &[],
            ),
        ),
        (
            "ORCHESTRA_TOKEN",
            HttpServer::launch(&p, "127.0.0.1:0", &[], &[("ORCHESTRA_TOKEN", token)]),
        ),
    ];
    let right = format!("Bearer {token}");
    let cases = [
        (None, 401),
        (Some("Bearer wrong"), 401),
        (Some("Bearer "), 401),
        (Some(token), 401),
        (Some("Basic czNjcmV0LVQwa2Vu"), 401),
        (Some(&right[..right.len() - 1]), 401),
        (Some(right.as_str()), 200),
    ];
    for (how, s) in &servers {
        for (authorization, status) in cases {
            let with = |mut req: Req<'_>| {
                if let Some(value) = authorization {
                    req = req.header("Authorization", value);
                }
                req.send()
            };
            for resp in [
                with(s.post(&initialize(0))),
                with(s.request("GET", &resource_path(FEAT_001))),
            ] {
                assert_eq!(resp.status, status, "{how}, {authorization:?}: {resp:?}");
                if status == 401 {
                    assert!(
                        resp.header("www-authenticate")
                            .is_some_and(|h| h.starts_with("Bearer")),
                        "{how}: {resp:?}"
                    );
                    assert_eq!(resp.header("mcp-session-id"), None, "{resp:?}");
                }
            }
        }
        let health = s.request("GET", "/healthz").send();
        health.expect(200);
        assert_eq!(health.text(), "ok");
    }
}

#[test]
fn bodies_over_4_mib_are_refused_with_413() {
    let p = fixture_project();
    let s = HttpServer::start(&p, &[]);
    // A read padded to exactly `len` bytes.
    let padded = |len: usize| {
        let mut message = rpc(
            1,
            "resources/read",
            envelope(json!({"uri": FEAT_001, "pad": ""})),
        );
        let bare = message.to_string().len();
        message["params"]["pad"] = Value::from("x".repeat(len - bare));
        let body = message.to_string().into_bytes();
        assert_eq!(body.len(), len);
        body
    };
    // The headers a 2026-07-28 client sends with the padded read.
    let post = || {
        s.request("POST", "/mcp")
            .header("Mcp-Method", "resources/read")
            .header("Mcp-Name", FEAT_001)
            .header("MCP-Protocol-Version", "2026-07-28")
    };
    let at_limit = post().body(padded(MAX_BODY)).send();
    at_limit.expect(200);
    assert_eq!(at_limit.json()["result"]["resultType"], "complete");

    for body in [padded(MAX_BODY + 1), vec![b' '; MAX_BODY + 1024 * 1024]] {
        let len = body.len();
        let resp = s.request("POST", "/mcp").body(body).send();
        assert_eq!(resp.status, 413, "{len} bytes: {resp:?}");
    }
    // The same without a Content-Length to go by.
    let chunked = post().body(padded(MAX_BODY)).chunked().send();
    chunked.expect(200);
    assert_eq!(chunked.json()["result"]["resultType"], "complete");
    s.request("POST", "/mcp")
        .body(padded(MAX_BODY + 1))
        .chunked()
        .send()
        .expect(413);
    // The server goes on.
    s.call(None, &rpc(2, "server/discover", envelope(json!({}))));
}

// ---------------------------------------------------------------------------
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

// ---------------------------------------------------------------------------
// 7. Shutdown.

#[test]
fn sigterm_closes_the_streams_and_exits_0() {
    let p = fixture_project();
    let mut s = HttpServer::start(&p, &[]);
    let sid = s.initialize();
    let mut session_stream = s.request("GET", "/mcp").session(&sid).open();
    let mut listen_stream = s.post(&listen("listen-1", &[FEAT_001], true)).open();
    listen_stream.message(NOTIFY_TIMEOUT);
    // An idle keep-alive connection, as client libraries keep in a pool.
    let (resp, mut idle) = s.request("GET", "/healthz").keep_alive();
    resp.expect(200);

    let started = Instant::now();
    s.terminate();
    let limit = Duration::from_secs(2);
    session_stream.expect_end(limit);
    listen_stream.expect_end(limit);
    let deadline = started + limit;
    while idle.fill(deadline).expect("the idle connection is closed") {}
    let (_, status) = wait_exit(&mut s.child);
    let took = started.elapsed();
    assert!(status.success(), "{status}; stderr:\n{}", s.stderr());
    assert!(took < limit, "took {took:?}");
    // Every connection closed, the change watcher's last or not.
    assert_eq!(companion_files(&p.db()), Vec::<String>::new());
}

// ---------------------------------------------------------------------------
// 8. Beyond loopback.

#[test]
fn binding_beyond_loopback_without_a_token_warns() {
    let p = fixture_project();
    let cases = [
        ("0.0.0.0:0", None, true),
        ("0.0.0.0:0", Some("t0ken"), false),
        ("127.0.0.1:0", None, false),
    ];
    for (bind, token, warns) in cases {
        let envs: Vec<(&str, &str)> = token.map(|t| ("ORCHESTRA_TOKEN", t)).into_iter().collect();
        let s = HttpServer::launch(&p, bind, &[], &envs);
        // Only loopback traffic, even when bound to every interface.
        s.request("GET", "/healthz").send().expect(200);
        let stderr = s.stderr();
        assert_eq!(
            stderr.contains("WARN") && stderr.contains("token"),
            warns,
            "{bind} token {token:?}: {stderr}"
        );
        if !warns {
            // Only the addresses of /mcp and of the viewer.
            assert_eq!(stderr.lines().count(), 2, "{stderr}");
            assert!(stderr.contains("the viewer is at http://"), "{stderr}");
        }
    }
}
