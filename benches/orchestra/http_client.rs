//! `orchestra serve --http` as a child process, and a minimal keep-alive HTTP/1.1 client for its `/mcp` endpoint.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::Res;

/// `orchestra serve --http 127.0.0.1:0`, its port read from its stderr.
pub struct HttpServer {
    pub child: Child,
    pub port: u16,
}

impl HttpServer {
    pub fn start(bin: &Path, db: &Path) -> Res<HttpServer> {
        let mut child = Command::new(bin)
            .arg("serve")
            .arg("--db")
            .arg(db)
            .arg("--http")
            .arg("127.0.0.1:0")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()?;
        let stderr = child.stderr.take().ok_or("no stderr")?;
        let (tx, rx) = crossbeam_channel::bounded(1);
        // Reads the port from `orchestra: serving MCP on http://ADDR/mcp`,
        // then passes anything else the server says on to our stderr.
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                let port = line
                    .split_once("serving MCP on http://")
                    .and_then(|(_, rest)| rest.split('/').next())
                    .and_then(|addr| addr.rsplit(':').next())
                    .and_then(|port| port.parse::<u16>().ok());
                match port {
                    Some(port) => {
                        let _ = tx.try_send(port);
                    }
                    None => eprintln!("[orchestra serve --http] {line}"),
                }
            }
        });
        match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(port) => Ok(HttpServer { child, port }),
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                Err("orchestra serve --http did not print its address within 30 s".into())
            }
        }
    }

    /// SIGTERM, then waits (the server lets requests finish).
    pub fn stop(mut self) -> Res<()> {
        // SAFETY: a signal to our own child, not yet reaped.
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if self.child.try_wait()?.is_some() {
                return Ok(());
            }
            if Instant::now() > deadline {
                self.child.kill()?;
                self.child.wait()?;
                return Err("the HTTP server did not exit on SIGTERM".into());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// A header value as the 2026-07-28 transport sends it: as it is when it is
/// printable ASCII, else `=?base64?…?=`.
fn header_value(text: &str) -> String {
    use base64::Engine;
    if text.bytes().all(|b| (0x20..0x7f).contains(&b)) {
        text.to_string()
    } else {
        format!(
            "=?base64?{}?=",
            base64::engine::general_purpose::STANDARD.encode(text)
        )
    }
}

/// A minimal HTTP/1.1 client: one keep-alive connection, `POST /mcp` with
/// a JSON body or a `GET`, responses with `Content-Length` only.
pub struct HttpClient {
    reader: BufReader<std::net::TcpStream>,
    writer: std::net::TcpStream,
    port: u16,
    request: Vec<u8>,
    line: String,
    /// The server said `Connection: close`: reconnect before the next request.
    pub closed: bool,
    /// `Authorization: Bearer …` on every request, when set.
    bearer: Option<String>,
}

impl HttpClient {
    pub fn connect(port: u16) -> Res<HttpClient> {
        let stream = std::net::TcpStream::connect(("127.0.0.1", port))?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(Duration::from_secs(120)))?;
        Ok(HttpClient {
            reader: BufReader::with_capacity(256 * 1024, stream.try_clone()?),
            writer: stream,
            port,
            request: Vec::with_capacity(4096),
            line: String::new(),
            closed: false,
            bearer: None,
        })
    }

    /// The same client, sending `token` as its bearer token.
    pub fn with_bearer(mut self, token: &str) -> HttpClient {
        self.bearer = Some(token.to_string());
        self
    }

    /// One 2026-07-28 `POST /mcp` of a request for `method` (with `name`,
    /// the `Mcp-Name` of a `resources/read`), with the headers that revision
    /// requires: the status and the body.
    pub fn post(&mut self, method: &str, name: Option<&str>, body: &str) -> Res<(u16, Vec<u8>)> {
        if self.closed {
            let bearer = self.bearer.take();
            *self = HttpClient::connect(self.port)?;
            self.bearer = bearer;
        }
        self.request.clear();
        write!(
            self.request,
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\
             Mcp-Method: {method}\r\nMCP-Protocol-Version: 2026-07-28\r\n",
            self.port,
            body.len()
        )?;
        if let Some(name) = name {
            write!(self.request, "Mcp-Name: {}\r\n", header_value(name))?;
        }
        if let Some(bearer) = &self.bearer {
            write!(self.request, "Authorization: Bearer {bearer}\r\n")?;
        }
        self.request.extend_from_slice(b"\r\n");
        self.request.extend_from_slice(body.as_bytes());
        self.exchange()
    }

    /// One `GET path` (a viewer page, an asset, `/resource`), asking for
    /// `accept`: the status and the body.
    pub fn get(&mut self, path: &str, accept: &str) -> Res<(u16, Vec<u8>)> {
        if self.closed {
            *self = HttpClient::connect(self.port)?;
        }
        self.request.clear();
        write!(
            self.request,
            "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAccept: {accept}\r\n\r\n",
            self.port
        )?;
        self.exchange()
    }

    /// Sends the request in `self.request` and reads the response.
    fn exchange(&mut self) -> Res<(u16, Vec<u8>)> {
        self.writer.write_all(&self.request)?;

        self.line.clear();
        if self.reader.read_line(&mut self.line)? == 0 {
            self.closed = true;
            return Err("the server closed the connection".into());
        }
        let status: u16 = self
            .line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| format!("bad status line {:?}", self.line))?;
        let mut length = None;
        loop {
            self.line.clear();
            if self.reader.read_line(&mut self.line)? == 0 {
                self.closed = true;
                return Err("the server closed the connection in the headers".into());
            }
            let header = self.line.trim_end();
            if header.is_empty() {
                break;
            }
            let Some((name, value)) = header.split_once(':') else {
                continue;
            };
            let value = value.trim();
            if name.eq_ignore_ascii_case("content-length") {
                length = Some(value.parse::<usize>()?);
            } else if name.eq_ignore_ascii_case("transfer-encoding") {
                self.closed = true;
                return Err(format!("unsupported Transfer-Encoding: {value}").into());
            } else if name.eq_ignore_ascii_case("connection") && value.eq_ignore_ascii_case("close")
            {
                self.closed = true;
            }
        }
        let length = length.ok_or("a response without Content-Length")?;
        let mut reply = vec![0; length];
        self.reader.read_exact(&mut reply)?;
        Ok((status, reply))
    }
}
