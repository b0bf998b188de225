//! Tests of the README's "Connect a client" snippets against this command line: every JSON and TOML block parses, each server it registers runs `orchestra` with arguments that `serve` accepts or names an `/mcp` URL with a bearer token, under the key its client reads.

use clap::Parser;
use serde_json::Value;

use crate::{Cli, Command};

const README: &str = include_str!("../README.md");

/// Each client the README shows, and the key of its file that holds servers.
const CLIENTS: &[(&str, &str)] = &[
    ("Claude Code", "mcpServers"),
    ("Claude Desktop", "mcpServers"),
    ("Cursor", "mcpServers"),
    ("VS Code", "servers"),
    ("Codex", "mcp_servers"),
    ("Zed", "context_servers"),
    ("Gemini CLI", "mcpServers"),
];

/// A fenced block of the README: its language, text, the heading above it
/// and its first line's number.
struct Block<'a> {
    lang: &'a str,
    text: String,
    heading: &'a str,
    line: usize,
}

fn blocks() -> Vec<Block<'static>> {
    let mut blocks = Vec::new();
    let mut heading = "";
    let mut open: Option<Block> = None;
    for (n, line) in README.lines().enumerate() {
        match (&mut open, line.strip_prefix("```")) {
            (Some(_), Some("")) => blocks.push(open.take().unwrap()),
            (Some(block), _) => {
                block.text.push_str(line);
                block.text.push('\n');
            }
            (None, Some(lang)) => {
                open = Some(Block {
                    lang,
                    text: String::new(),
                    heading,
                    line: n + 2,
                });
            }
            (None, None) if line.starts_with('#') => heading = line.trim_start_matches('#').trim(),
            (None, None) => {}
        }
    }
    assert!(open.is_none(), "README.md: a fenced block is never closed");
    blocks
}

/// What one registered server is.
#[derive(Debug, PartialEq)]
enum Server {
    Stdio,
    Http,
}

/// Checks one server entry (JSON, or TOML turned into JSON): either
/// `command` `orchestra` with `args` that parse as `orchestra serve …`, or a
/// URL of an `/mcp` endpoint with a bearer token.
fn check_server(entry: &Value, at: &str) -> Server {
    if let Some(command) = entry.get("command") {
        assert_eq!(command, "orchestra", "{at}: the command");
        let args: Vec<&str> = entry["args"]
            .as_array()
            .unwrap_or_else(|| panic!("{at}: args is not a list"))
            .iter()
            .map(|a| {
                a.as_str()
                    .unwrap_or_else(|| panic!("{at}: an arg is not a string"))
            })
            .collect();
        check_serve_args(&args, at);
        return Server::Stdio;
    }
    let url = ["url", "httpUrl"]
        .iter()
        .find_map(|key| entry.get(key))
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("{at}: neither a command nor a URL: {entry}"));
    assert!(
        url.starts_with("https://") && url.ends_with("/mcp"),
        "{at}: {url}"
    );
    let bearer = entry["headers"]["Authorization"]
        .as_str()
        .is_some_and(|h| h.starts_with("Bearer ") && h.len() > "Bearer ".len());
    let from_env = entry["bearer_token_env_var"].is_string();
    assert!(bearer || from_env, "{at}: no bearer token: {entry}");
    Server::Http
}

fn check_serve_args(args: &[&str], at: &str) {
    let cli = Cli::try_parse_from(std::iter::once("orchestra").chain(args.iter().copied()))
        .unwrap_or_else(|e| panic!("{at}: `orchestra {}` does not parse: {e}", args.join(" ")));
    assert!(
        matches!(cli.command, Command::Serve(_)),
        "{at}: `orchestra {}` is not serve",
        args.join(" ")
    );
}

/// The servers a `claude mcp add` line registers.
fn check_claude_mcp_add(line: &str, at: &str) -> Server {
    let words: Vec<&str> = line.split_whitespace().collect();
    if let Some(dash) = words.iter().position(|w| *w == "--") {
        assert_eq!(words.get(dash + 1), Some(&"orchestra"), "{at}: {line}");
        check_serve_args(&words[dash + 2..], at);
        return Server::Stdio;
    }
    assert!(line.contains("--transport http"), "{at}: {line}");
    let url = words.iter().find(|w| w.starts_with("https://")).unwrap();
    assert!(url.ends_with("/mcp"), "{at}: {url}");
    assert!(
        line.contains("--header \"Authorization: Bearer "),
        "{at}: {line}"
    );
    Server::Http
}

#[test]
fn client_snippets() {
    let mut seen: Vec<(&str, Server)> = Vec::new();
    for block in blocks() {
        let at = format!("README.md:{} ({})", block.line, block.heading);
        let client = CLIENTS.iter().find(|(name, _)| *name == block.heading);
        let document: Value = match block.lang {
            "json" => {
                serde_json::from_str(&block.text).unwrap_or_else(|e| panic!("{at}: not JSON: {e}"))
            }
            "toml" => {
                let table: toml::Table =
                    toml::from_str(&block.text).unwrap_or_else(|e| panic!("{at}: not TOML: {e}"));
                serde_json::to_value(table).unwrap()
            }
            "sh" => {
                for line in block
                    .text
                    .lines()
                    .filter(|l| l.starts_with("claude mcp add"))
                {
                    seen.push(("Claude Code", check_claude_mcp_add(line, &at)));
                }
                continue;
            }
            _ => continue,
        };
        let keys = ["mcpServers", "servers", "context_servers", "mcp_servers"];
        let Some(key) = keys.iter().find(|key| document.get(**key).is_some()) else {
            continue;
        };
        if let Some((name, expected)) = client {
            assert_eq!(
                key, expected,
                "{at}: {name} reads its servers from another key"
            );
        }
        let servers = document[*key].as_object().unwrap();
        assert!(!servers.is_empty(), "{at}: no server");
        for entry in servers.values() {
            let server = check_server(entry, &at);
            if let Some((name, _)) = client {
                seen.push((name, server));
            }
        }
    }
    for (name, _) in CLIENTS {
        assert!(
            seen.contains(&(name, Server::Stdio)),
            "README.md shows no stdio snippet for {name}"
        );
    }
    let remote: Vec<&str> = seen
        .iter()
        .filter(|(_, s)| *s == Server::Http)
        .map(|(name, _)| *name)
        .collect();
    // Claude Desktop's file takes no URL: its remote servers are connectors.
    for name in [
        "Claude Code",
        "Cursor",
        "VS Code",
        "Codex",
        "Zed",
        "Gemini CLI",
    ] {
        assert!(
            remote.contains(&name),
            "README.md shows no HTTP snippet for {name}"
        );
    }
}

#[test]
fn a_snippet_that_serve_would_refuse_fails_the_check() {
    let refused = std::panic::catch_unwind(|| {
        check_server(
            &serde_json::json!({"command": "orchestra", "args": ["serve", "--no-such-flag"]}),
            "test",
        )
    });
    assert!(refused.is_err());
    let refused = std::panic::catch_unwind(|| {
        check_server(
            &serde_json::json!({"command": "orchestra", "args": ["import", "."]}),
            "test",
        )
    });
    assert!(refused.is_err());
    let refused = std::panic::catch_unwind(|| {
        check_server(
            &serde_json::json!({"command": "npx", "args": ["serve"]}),
            "test",
        )
    });
    assert!(refused.is_err());
    assert_eq!(
        check_server(
            &serde_json::json!({"command": "orchestra", "args": ["serve", "--watch", "/p"]}),
            "test"
        ),
        Server::Stdio
    );
}
