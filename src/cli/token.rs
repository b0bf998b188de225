//! `orchestra token create|list|revoke`: the scoped API keys of a team server, kept in its database (their hashes), so every server of that database knows them at once.

use std::io::Write;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Result, bail};
use clap::{Args, Subcommand};

use orchestra::access::{Scope, keys};
use orchestra::store::{Access, ApiKey, Store};
use orchestra::table::{self, Layout};

use super::DbArg;
use super::out;

#[derive(Args)]
pub struct TokenArgs {
    #[command(subcommand)]
    pub command: TokenCommand,
}

#[derive(Subcommand)]
pub enum TokenCommand {
    /// Make a key and print it, once: only its hash is kept.
    Create(CreateArgs),
    /// List the keys: name, scopes, created, expires, state. The keys
    /// themselves are never shown again.
    List(ListArgs),
    /// Revoke the live key of that name: every server refuses it within
    /// seconds.
    Revoke(RevokeArgs),
}

#[derive(Args)]
pub struct CreateArgs {
    /// What the key may do (repeatable): orchestra:read, orchestra:search,
    /// orchestra:write, orchestra:admin, or a verb on a prefix or folder
    /// (orchestra:read:features, orchestra:write:docs/adr).
    #[arg(long = "scope", value_name = "SCOPE", required = true)]
    pub scopes: Vec<String>,
    /// Its name, for `token list` and `token revoke` [default: key-
    /// and the first characters of its hash].
    #[arg(long)]
    pub name: Option<String>,
    /// How long it works: 30d, 12h, 90m [default: until revoked].
    #[arg(long, value_name = "DURATION")]
    pub expires: Option<String>,
    #[command(flatten)]
    pub db: DbArg,
}

#[derive(Args)]
pub struct ListArgs {
    /// Print one JSON object per key.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub db: DbArg,
}

#[derive(Args)]
pub struct RevokeArgs {
    /// The key's name.
    pub name: String,
    #[command(flatten)]
    pub db: DbArg,
}

pub fn run(args: &TokenArgs) -> Result<bool> {
    match &args.command {
        TokenCommand::Create(args) => create(args),
        TokenCommand::List(args) => list(args),
        TokenCommand::Revoke(args) => revoke(args),
    }
}

fn now() -> i64 {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(since.as_secs()).unwrap_or(i64::MAX)
}

fn create(args: &CreateArgs) -> Result<bool> {
    let mut scopes = Vec::new();
    for text in &args.scopes {
        match Scope::parse(text.trim()) {
            Some(Ok(scope)) => scopes.push(scope.to_string()),
            Some(Err(why)) => bail!("{why}"),
            None => bail!(
                "unknown scope {text:?}: orchestra's scopes start with orchestra: (orchestra:read, orchestra:write:notes)"
            ),
        }
    }
    scopes.dedup();
    let lifetime = args
        .expires
        .as_deref()
        .map(keys::parse_lifetime)
        .transpose()
        .map_err(anyhow::Error::msg)?;
    let key = keys::generate();
    let hash = keys::hash(&key);
    let name = match &args.name {
        Some(name) => {
            keys::check_name(name).map_err(anyhow::Error::msg)?;
            name.clone()
        }
        None => format!("key-{}", &hash[..8]),
    };
    let created_at = now();
    let expires_at = lifetime.map(|l| created_at.saturating_add(l.as_secs() as i64));
    let stored = ApiKey {
        hash,
        name,
        scopes: scopes.join(" "),
        created_at,
        expires_at,
        revoked_at: None,
    };
    Store::open(&args.db.location()?, Access::Existing)?.create_key(&stored)?;
    // The key alone on stdout, for a script to keep; the rest for people.
    println!("{key}");
    eprintln!(
        "orchestra: created the key {} ({}), {}; it is shown only this once",
        stored.name,
        stored.scopes,
        match stored.expires_at {
            Some(at) => format!("until {}", time(at)),
            None => "until revoked".to_string(),
        }
    );
    Ok(true)
}

fn time(seconds: i64) -> String {
    out::time_ns(seconds.saturating_mul(1_000_000_000)).unwrap_or_else(|| seconds.to_string())
}

/// `live`, `expired` or `revoked`.
fn state(key: &ApiKey, now: i64) -> &'static str {
    match (key.revoked_at, key.is_live(now)) {
        (Some(_), _) => "revoked",
        (None, true) => "live",
        (None, false) => "expired",
    }
}

#[derive(serde::Serialize)]
struct KeyJson<'a> {
    name: &'a str,
    scopes: Vec<&'a str>,
    created: String,
    expires: Option<String>,
    revoked: Option<String>,
    state: &'static str,
}

fn list(args: &ListArgs) -> Result<bool> {
    let keys = Store::open(&args.db.location()?, Access::Existing)?.keys()?;
    let now = now();
    let mut stdout = std::io::stdout().lock();
    if args.json {
        for key in &keys {
            let json = KeyJson {
                name: &key.name,
                scopes: key.scopes.split(' ').filter(|s| !s.is_empty()).collect(),
                created: time(key.created_at),
                expires: key.expires_at.map(time),
                revoked: key.revoked_at.map(time),
                state: state(key, now),
            };
            writeln!(stdout, "{}", serde_json::to_string(&json)?)?;
        }
        return Ok(!keys.is_empty());
    }
    let mut rows = vec![
        ["NAME", "STATE", "CREATED", "EXPIRES", "SCOPES"]
            .map(str::to_string)
            .to_vec(),
    ];
    for key in &keys {
        rows.push(vec![
            key.name.clone(),
            state(key, now).to_string(),
            time(key.created_at),
            key.expires_at.map(time).unwrap_or_else(|| "-".to_string()),
            key.scopes.clone(),
        ]);
    }
    if keys.is_empty() {
        eprintln!("orchestra: no keys (orchestra token create --scope orchestra:read)");
        return Ok(false);
    }
    for line in table::render(&rows, Layout::of_stdout()) {
        writeln!(stdout, "{line}")?;
    }
    Ok(true)
}

fn revoke(args: &RevokeArgs) -> Result<bool> {
    let revoked =
        Store::open(&args.db.location()?, Access::Existing)?.revoke_key(&args.name, now())?;
    if !revoked {
        bail!(
            "no live key named {:?} (orchestra token list shows them)",
            args.name
        );
    }
    eprintln!(
        "orchestra: revoked the key {}; servers refuse it within {} seconds",
        args.name,
        KEY_CACHE.as_secs()
    );
    Ok(true)
}

/// How long a server trusts what it read of a key: the longest a revoked
/// key may still be let in.
const KEY_CACHE: Duration = orchestra::access::keys::CACHE;
