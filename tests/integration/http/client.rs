//! A small HTTP/1.1 client: one connection per request, every header as the test writes it, bodies read whole or as an SSE stream.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::IO_TIMEOUT;
use super::messages::header_value;
use super::server::HttpServer;

// A small HTTP/1.1 client.

/// One request, built header by header.
pub(crate) struct Req<'s> {
    pub(super) server: &'s HttpServer,
    pub(super) method: &'static str,
    pub(super) path: String,
    /// `None`: no `Host` header at all.
    pub(super) host: Option<String>,
    pub(super) headers: Vec<(String, String)>,
    pub(super) body: Vec<u8>,
    /// Send the body with `Transfer-Encoding: chunked`.
    pub(super) chunked: bool,
    /// `Connection: keep-alive` instead of `close`.
    pub(super) keep_alive: bool,
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

    pub(super) fn session(self, id: &str) -> Self {
        self.header("Mcp-Session-Id", id)
    }

    pub(crate) fn origin(self, origin: &str) -> Self {
        self.header("Origin", origin)
    }

    /// The body, and for a 2026-07-28 message the headers a conforming
    /// client sends with it (`Mcp-Method`, `Mcp-Name`, `MCP-Protocol-Version`).
    pub(super) fn json(mut self, message: &Value) -> Self {
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
    pub(super) fn without(mut self, name: &str) -> Self {
        self.headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        self
    }

    pub(crate) fn body(mut self, body: impl Into<Vec<u8>>) -> Self {
        self.body = body.into();
        self
    }

    /// Sends the body in 64 KiB chunks, without a `Content-Length`.
    pub(super) fn chunked(mut self) -> Self {
        self.chunked = true;
        self
    }

    /// Sends the request and reads the whole response.
    pub(crate) fn send(self) -> Resp {
        self.send_and_keep().0
    }

    /// Sends the request with `Connection: keep-alive`, reads the whole
    /// response and returns the connection, still open.
    pub(super) fn keep_alive(mut self) -> (Resp, Conn) {
        self.keep_alive = true;
        self.send_and_keep()
    }

    pub(super) fn send_and_keep(self) -> (Resp, Conn) {
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

    pub(super) fn exchange(self) -> (Head, Body) {
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
pub(super) struct Conn {
    pub(super) stream: TcpStream,
    pub(super) buf: Vec<u8>,
}

pub(super) fn timed_out() -> io::Error {
    io::Error::new(io::ErrorKind::TimedOut, "deadline passed")
}

pub(super) fn early_eof() -> io::Error {
    io::Error::new(io::ErrorKind::UnexpectedEof, "the connection closed early")
}

impl Conn {
    /// Reads more bytes; `false` at the end of the stream.
    pub(super) fn fill(&mut self, deadline: Instant) -> io::Result<bool> {
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
    pub(super) fn line(&mut self, deadline: Instant) -> io::Result<Option<String>> {
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
    pub(super) fn take(&mut self, n: usize, deadline: Instant) -> io::Result<Option<Vec<u8>>> {
        while self.buf.len() < n {
            if !self.fill(deadline)? {
                return Ok(None);
            }
        }
        Ok(Some(self.buf.drain(..n).collect()))
    }
}

pub(super) struct Head {
    pub(super) status: u16,
    /// Names in lower case.
    pub(super) headers: Vec<(String, String)>,
}

impl Head {
    pub(super) fn read(conn: &mut Conn, deadline: Instant) -> io::Result<Head> {
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

pub(super) fn header<'h>(headers: &'h [(String, String)], name: &str) -> Option<&'h str> {
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
pub(super) struct Body {
    pub(super) conn: Conn,
    framing: Framing,
    done: bool,
}

impl Body {
    /// The next part of the body; `None` at its end (a chunked body cut
    /// short by the connection closing ends there too).
    pub(super) fn next(&mut self, deadline: Instant) -> io::Result<Option<Vec<u8>>> {
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
    pub(super) headers: Vec<(String, String)>,
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
    pub(super) fn rpc_error_code(&self) -> i64 {
        let body = self.json();
        assert_eq!(body["jsonrpc"], "2.0", "{self:?}");
        body["error"]["code"]
            .as_i64()
            .unwrap_or_else(|| panic!("not a JSON-RPC error: {self:?}"))
    }
}

/// A `text/event-stream` response, read event by event.
pub(crate) struct EventStream {
    pub(super) body: Body,
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
    pub(super) fn message(&mut self, timeout: Duration) -> Value {
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
    pub(super) fn wait_for(&mut self, timeout: Duration, wanted: impl Fn(&Value) -> bool) -> Value {
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
    pub(super) fn expect_end(&mut self, timeout: Duration) -> Vec<String> {
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
