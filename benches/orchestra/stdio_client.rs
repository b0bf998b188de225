//! A minimal pipelined JSON-RPC client for `orchestra serve` over a pipe, and the reply shapes both clients (pipe and HTTP) read.

use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::{Value, json};

use crate::Res;

const PROTOCOL_VERSION: &str = "2025-11-25";

pub struct Server {
    child: Child,
    stdin: BufWriter<ChildStdin>,
    /// Every output line, with the time it was read.
    pub lines: Receiver<(Instant, String)>,
    next_id: u64,
}

#[derive(Deserialize)]
pub struct Envelope<T> {
    pub id: Option<u64>,
    pub result: Option<T>,
    pub error: Option<Value>,
}

#[derive(Deserialize)]
pub struct ListResult {
    pub resources: Vec<ListedResource>,
    #[serde(rename = "nextCursor")]
    pub next_cursor: Option<String>,
}

#[derive(Deserialize)]
pub struct ListedResource {
    pub uri: String,
}

impl Server {
    pub fn start(bin: &Path, db: &Path, page_size: Option<u32>) -> Res<Server> {
        let mut cmd = Command::new(bin);
        cmd.arg("serve").arg("--db").arg(db);
        if let Some(size) = page_size {
            cmd.arg("--page-size").arg(size.to_string());
        }
        Server::start_command(cmd)
    }

    /// `cmd` (an `orchestra serve` with any arguments) spawned, and the
    /// handshake done: `initialize`, then `notifications/initialized`.
    pub fn start_command(cmd: Command) -> Res<Server> {
        let mut server = Server::spawn(cmd)?;
        let init = server.request_line(
            "initialize",
            &json!({
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "orchestra-bench", "version": "0"},
            }),
        );
        let (_, line) = server.call_line(&init)?;
        let reply: Envelope<Value> = serde_json::from_str(&line)?;
        let version = reply
            .result
            .as_ref()
            .and_then(|r| r.get("protocolVersion"))
            .and_then(Value::as_str);
        if version != Some(PROTOCOL_VERSION) {
            return Err(format!("unexpected initialize reply: {line}").into());
        }
        server
            .stdin
            .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")?;
        server.stdin.flush()?;
        Ok(server)
    }

    /// Any line-oriented child on a pipe (`orchestra serve`, or `cat` for the
    /// round-trip floor), its output lines timestamped by a reader thread.
    pub fn spawn(mut cmd: Command) -> Res<Server> {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let stdin = BufWriter::with_capacity(64 * 1024, child.stdin.take().ok_or("no stdin")?);
        let (tx, lines) = crossbeam_channel::unbounded();
        std::thread::spawn(move || {
            let mut reader = BufReader::with_capacity(1 << 20, stdout);
            loop {
                let mut line = String::new();
                match reader.read_line(&mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        if tx.send((Instant::now(), line)).is_err() {
                            break;
                        }
                    }
                }
            }
        });
        Ok(Server {
            child,
            stdin,
            lines,
            next_id: 1,
        })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// A request line with the next id.
    pub fn request_line(&mut self, method: &str, params: &Value) -> String {
        let id = self.next_id;
        self.next_id += 1;
        format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"{method}\",\"params\":{params}}}\n")
    }

    pub fn read_line(&mut self, uri: &str) -> String {
        let uri = serde_json::to_string(uri).unwrap_or_default();
        let id = self.next_id;
        self.next_id += 1;
        format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"resources/read\",\"params\":{{\"uri\":{uri}}}}}\n"
        )
    }

    fn recv(&self) -> Res<(Instant, String)> {
        self.lines
            .recv_timeout(Duration::from_secs(120))
            .map_err(|_| "the server closed its output or stopped answering".into())
    }

    /// One round trip: the time from the write to the reply line.
    pub fn call_line(&mut self, line: &str) -> Res<(Duration, String)> {
        let started = Instant::now();
        self.stdin.write_all(line.as_bytes())?;
        self.stdin.flush()?;
        let (at, reply) = self.recv()?;
        Ok((at - started, reply))
    }

    pub fn list(&mut self, cursor: Option<&str>) -> Res<(Duration, ListResult)> {
        let params = match cursor {
            Some(cursor) => json!({ "cursor": cursor }),
            None => json!({}),
        };
        let line = self.request_line("resources/list", &params);
        let (took, reply) = self.call_line(&line)?;
        let reply: Envelope<ListResult> = serde_json::from_str(&reply)?;
        match (reply.result, reply.error) {
            (Some(result), None) => Ok((took, result)),
            (_, error) => Err(format!("resources/list failed: {error:?}").into()),
        }
    }

    /// Follows `nextCursor` to the end: the wall time, every URI, and the
    /// cursor that starts each page (`None` for the first).
    pub fn full_listing(&mut self) -> Res<(Duration, Vec<String>, Vec<Option<String>>)> {
        let started = Instant::now();
        let mut uris = Vec::new();
        let mut cursors = vec![None];
        let mut cursor: Option<String> = None;
        loop {
            let (_, page) = self.list(cursor.as_deref())?;
            uris.extend(page.resources.into_iter().map(|r| r.uri));
            match page.next_cursor {
                Some(next) => {
                    cursors.push(Some(next.clone()));
                    cursor = Some(next);
                }
                None => break,
            }
        }
        Ok((started.elapsed(), uris, cursors))
    }

    pub fn check_read(reply: &str) -> Res<()> {
        let reply: Envelope<IgnoredAny> = serde_json::from_str(reply)?;
        if reply.error.is_some() || reply.result.is_none() || reply.id.is_none() {
            return Err(format!("resources/read failed: {reply:?}", reply = reply.error).into());
        }
        Ok(())
    }

    /// Sends every line with at most `window` unanswered; returns the wall time.
    pub fn pipelined(&mut self, lines: &[String], window: usize) -> Res<Duration> {
        let started = Instant::now();
        let mut sent = 0;
        let mut answered = 0;
        while answered < lines.len() {
            while sent < lines.len() && sent - answered < window {
                self.stdin.write_all(lines[sent].as_bytes())?;
                sent += 1;
            }
            self.stdin.flush()?;
            let (_, reply) = self.recv()?;
            Server::check_read(&reply)?;
            answered += 1;
            // Take whatever else already arrived before writing more.
            while let Ok((_, reply)) = self.lines.try_recv() {
                Server::check_read(&reply)?;
                answered += 1;
            }
        }
        Ok(started.elapsed())
    }

    pub fn stop(mut self) -> Res<()> {
        drop(self.stdin);
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if self.child.try_wait()?.is_some() {
                return Ok(());
            }
            if Instant::now() > deadline {
                self.child.kill()?;
                self.child.wait()?;
                return Err("the server did not exit when its input closed".into());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}
