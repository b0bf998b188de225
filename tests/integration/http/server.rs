//! The server under test: `orchestra serve --http` started on port 0, its stderr kept, killed when dropped.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};

use serde_json::{Value, json};

use super::START_TIMEOUT;
use super::client::Req;
use super::messages::initialize;
use crate::support::{BIN, Project};

/// A running `orchestra serve --http`, killed when dropped.
pub(crate) struct HttpServer {
    pub(super) child: Child,
    pub(crate) port: u16,
    pub(super) stderr: Arc<Mutex<String>>,
    /// Every error body received from this server.
    pub(super) errors: Mutex<Vec<String>>,
    /// The test's temp folder, which no error body may name.
    pub(super) root: PathBuf,
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
        HttpServer::launch_on(project, &project.db(), bind, args, envs)
    }

    /// `serve --db DB --http BIND ARGS` in `project`'s folder.
    pub(crate) fn launch_on(
        project: &Project,
        db: &Path,
        bind: &str,
        args: &[&str],
        envs: &[(&str, &str)],
    ) -> HttpServer {
        let mut child = Command::new(BIN)
            .arg("serve")
            .arg("--db")
            .arg(db)
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
    pub(super) fn host(&self) -> String {
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
    pub(super) fn post(&self, message: &Value) -> Req<'_> {
        self.request("POST", "/mcp").json(message)
    }

    /// Sends a request (in `session`, if any) and returns its JSON-RPC
    /// response, which must come with 200 and carry the request's id.
    pub(super) fn call(&self, session: Option<&str>, message: &Value) -> Value {
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
    pub(super) fn initialize(&self) -> String {
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

    pub(super) fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// The server's stderr once it holds `text`: the lines a server writes
    /// before it answers reach this side on their own thread, a little later.
    pub(super) fn stderr_with(&self, text: &str) -> String {
        let deadline = std::time::Instant::now() + START_TIMEOUT;
        loop {
            let stderr = self.stderr();
            if stderr.contains(text) || std::time::Instant::now() > deadline {
                return stderr;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }

    /// Sends SIGTERM.
    pub(super) fn terminate(&self) {
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
