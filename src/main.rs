//! The `orchestra` command line: the subcommands and their flags; the commands that write (`import`, `serve`, `prune`) run here, the read-only commands (`search`, `ls`, `show`, `stats`, `log`, `diff`, `links`, `check`) and the shell's (`completions`, `man`) in `cli`.

mod cli;
#[cfg(test)]
mod readme;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use clap::{ArgGroup, Args, CommandFactory, FromArgMatches, Parser, Subcommand};

use orchestra::access::oauth;
use orchestra::import::{self, ChangeKind};
use orchestra::mcp;
use orchestra::store::{Access, Location, PruneRules, Store};
use orchestra::watch;
use orchestra::write::Writer;

use cli::DbArg;

/// Serve a project's Markdown knowledge (features, notes, docs) as MCP resources.
#[derive(Parser)]
#[command(version = orchestra::BUILD, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Load the Markdown documents of a project folder into the database.
    Import(ImportArgs),
    /// Serve the database as MCP resources over stdio.
    Serve(ServeArgs),
    /// Find documents: one hit per line, best first. Exit 0 when something
    /// matched, 1 when nothing did, 2 on an error.
    Search(cli::search::SearchArgs),
    /// List documents in key order, a page at a time: URI, title, size,
    /// updated. Exit 0 when it listed some, 1 when there were none, 2 on an
    /// error.
    Ls(cli::ls::LsArgs),
    /// Print a document's bytes exactly as imported, or what is stored
    /// about it; of a past version with --version N. Exit 0 when it exists,
    /// 1 when it does not (with the nearest ids, or the versions there
    /// are), 2 on an error.
    Show(cli::show::ShowArgs),
    /// List a document's versions, newest first: version, time, size,
    /// title. Exit 0 when it listed some, 1 when there are none, 2 on an
    /// error.
    Log(cli::log::LogArgs),
    /// Compare two versions of a document: a unified diff, by default of
    /// the newest version and the one before. Exit 0 when it printed a diff
    /// or the versions are identical, 1 when there is no such document or
    /// version or no text to compare, 2 on an error.
    Diff(cli::diff::DiffArgs),
    /// A document's links and backlinks: what it links to (and whether
    /// each target exists), and which documents link to it, on which line.
    /// Exit 0 when it printed some, 1 when there are none or no such
    /// document, 2 on an error.
    Links(cli::links::LinksArgs),
    /// Report the project's problems, one per line (PATH:LINE: KIND:
    /// message): broken links, frontmatter that does not parse, documents
    /// that are not UTF-8, ids that differ only in case, files the last
    /// import skipped, titles used twice in a prefix. Exit 0 when there are
    /// none, 1 when there are some, 2 on an error.
    Check(cli::check::CheckArgs),
    /// Show what the database holds: documents and bytes per prefix, its size,
    /// the project, the schema version and the last import.
    Stats(cli::stats::StatsArgs),
    /// Remove past versions of documents (never the current one) and the
    /// stored bytes no version needs any more, in one transaction, and say
    /// what was removed. A version goes only when every rule given lets it
    /// go. Exit 0, or 2 on an error.
    Prune(PruneArgs),
    /// Scoped API keys for `serve --http`: create one (printed once), list
    /// them, revoke one. Exit 0, 1 when `list` finds none, 2 on an error.
    Token(cli::token::TokenArgs),
    /// Print the completion script of a shell to stdout.
    Completions(cli::manual::CompletionsArgs),
    /// Print the manual page of every command (roff) to stdout.
    Man,
}

#[derive(Args)]
struct ImportArgs {
    /// The project folder: its features/, notes/ and docs/ are imported.
    dir: PathBuf,
    #[command(flatten)]
    db: DbArg,
    /// Print what would change and write nothing.
    #[arg(long)]
    dry_run: bool,
    /// Print the summary as one JSON object.
    #[arg(long)]
    json: bool,
    /// Skip files larger than this many bytes.
    #[arg(long, value_name = "BYTES", default_value_t = import::DEFAULT_MAX_FILE_SIZE)]
    max_file_size: u64,
    /// Allow importing into a database that holds another project (its documents are replaced).
    #[arg(long)]
    replace: bool,
}

#[derive(Args)]
#[command(group(ArgGroup::new("rule").required(true).multiple(true).args(["keep", "older_than"])))]
struct PruneArgs {
    /// Keep the N newest versions of each document, the current one
    /// included (N from 1).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    keep: Option<u32>,
    /// Keep the versions made less than DURATION ago (by the import that
    /// made them): 30days, 12h, 2weeks.
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    older_than: Option<Duration>,
    /// Say what would be removed, and remove nothing.
    #[arg(long)]
    dry_run: bool,
    /// Print what was removed as one JSON object.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    db: DbArg,
}

#[derive(Args)]
struct ServeArgs {
    #[command(flatten)]
    db: DbArg,
    /// Watch this project folder and import it whenever its documents change
    /// (an import runs first, so the database need not exist yet).
    #[arg(long, value_name = "DIR")]
    watch: Option<PathBuf>,
    /// Serve MCP over Streamable HTTP at this address (e.g. 127.0.0.1:8080)
    /// instead of stdio; the endpoint is /mcp.
    #[arg(long, value_name = "ADDR")]
    http: Option<std::net::SocketAddr>,
    /// With --http: a browser origin allowed besides the loopback ones (repeatable).
    #[arg(long, value_name = "ORIGIN", requires = "http")]
    allow_origin: Vec<String>,
    /// With --http: require `Authorization: Bearer <token>`, the token read
    /// from this file [default: $ORCHESTRA_TOKEN].
    #[arg(long, value_name = "PATH", requires = "http")]
    token_file: Option<PathBuf>,
    /// With --http: let in the database's scoped API keys (`orchestra
    /// token create`), each with what its scopes grant, and require a
    /// credential on every request.
    #[arg(long, requires = "http")]
    api_keys: bool,
    /// With --http: the URL clients reach /mcp at (https://backlog.example.com/mcp):
    /// the audience OAuth tokens must name and the resource the metadata
    /// names. Never taken from a request's Host or forwarded headers.
    #[arg(long, value_name = "URL", requires = "http")]
    public_url: Option<String>,
    /// With --http and --public-url: accept OAuth access tokens of this
    /// issuer (JWTs checked against its published keys), and publish the
    /// Protected Resource Metadata naming it.
    #[arg(long, value_name = "URL", requires = "public_url")]
    oauth_issuer: Option<String>,
    /// Another audience a token may name instead of --public-url (repeatable).
    #[arg(long, value_name = "AUDIENCE", requires = "oauth_issuer")]
    oauth_audience: Vec<String>,
    /// Check opaque (non-JWT) tokens at this RFC 7662 introspection endpoint,
    /// as --oauth-client-id with the secret of --oauth-client-secret-file.
    #[arg(long, value_name = "URL", requires_all = ["oauth_issuer", "oauth_client_id"])]
    oauth_introspection_url: Option<String>,
    /// orchestra's client id at the introspection endpoint.
    #[arg(long, value_name = "ID", requires = "oauth_introspection_url")]
    oauth_client_id: Option<String>,
    /// A file whose first line is orchestra's client secret at the
    /// introspection endpoint [default: $ORCHESTRA_OAUTH_CLIENT_SECRET].
    #[arg(long, value_name = "PATH", requires = "oauth_introspection_url")]
    oauth_client_secret_file: Option<PathBuf>,
    /// The project folder the database holds, for writes, when it is not
    /// the watched one (`--db PATH --project DIR`).
    #[arg(long, value_name = "DIR", conflicts_with = "watch")]
    project: Option<PathBuf>,
    /// Never write: declare no write tools (create, write, edit, move,
    /// delete) even where the project folder is known.
    #[arg(long)]
    read_only: bool,
    /// Resources per `resources/list` page.
    #[arg(long, value_name = "N", default_value_t = mcp::DEFAULT_PAGE_SIZE,
          value_parser = clap::value_parser!(u32).range(1..=mcp::MAX_PAGE_SIZE as i64))]
    page_size: u32,
}

fn main() -> ExitCode {
    let matches = Cli::command().get_matches();
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    init_logging();
    let result = match cli.command {
        Command::Import(args) => run_import(args),
        // `--db` on the command line names the database; from the
        // environment or by default it is only where to look.
        Command::Serve(args) => run_serve(args, db_given(&matches, "serve")),
        Command::Search(args) => return cli::exit_status(cli::search::run(&args)),
        Command::Ls(args) => {
            return cli::exit_status(cli::ls::run(&args, db_given(&matches, "ls")));
        }
        Command::Show(args) => return cli::exit_status(cli::show::run(&args)),
        Command::Stats(args) => return cli::exit_status(cli::stats::run(&args)),
        Command::Diff(args) => return cli::exit_status(cli::diff::run(&args)),
        Command::Prune(args) => return cli::exit_status(run_prune(&args).map(|()| true)),
        Command::Links(args) => return cli::exit_status(cli::links::run(&args)),
        Command::Check(args) => return cli::exit_status(cli::check::run(&args)),
        Command::Token(args) => return cli::exit_status(cli::token::run(&args)),
        Command::Log(args) => {
            return cli::exit_status(cli::log::run(&args, db_given(&matches, "log")));
        }
        Command::Completions(args) => cli::manual::completions(&args, Cli::command()),
        Command::Man => cli::manual::man(Cli::command()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("orchestra: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Whether `--db` was given on the command line of `subcommand`, not taken
/// from `$ORCHESTRA_DB` or the default.
fn db_given(matches: &clap::ArgMatches, subcommand: &str) -> bool {
    matches
        .subcommand_matches(subcommand)
        .is_some_and(|m| m.value_source("db") == Some(clap::parser::ValueSource::CommandLine))
}

/// Logs go to stderr only: stdout of `serve` carries protocol messages.
fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .init();
}

fn run_import(args: ImportArgs) -> Result<()> {
    let opts = import::Options {
        dir: args.dir.clone(),
        db: args.db.location()?,
        dry_run: args.dry_run,
        replace: args.replace,
        max_file_size: args.max_file_size,
        progress: !args.json,
    };
    let report = import::run(&opts)?;
    for warning in &report.warnings {
        eprintln!("warning: {warning}");
    }
    if args.json {
        let mut value = serde_json::to_value(&report)?;
        value["dir"] = serde_json::Value::from(args.dir.display().to_string());
        value["db"] = serde_json::Value::from(opts.db.to_string());
        println!("{value}");
    } else {
        if report.dry_run {
            for (kind, key) in &report.changes {
                let kind = match kind {
                    ChangeKind::New => "new",
                    ChangeKind::Updated => "updated",
                    ChangeKind::Removed => "removed",
                };
                println!("{kind} {key}");
            }
        }
        println!("{}", report.summary(&args.dir));
    }
    Ok(())
}

/// `prune --json`.
#[derive(serde::Serialize)]
struct PruneJson {
    dry_run: bool,
    versions: u64,
    bodies: u64,
    /// The removed bodies' bytes as stored (compressed).
    stored_bytes: u64,
}

/// Prunes the history as `args` say, and prints what went.
fn run_prune(args: &PruneArgs) -> Result<()> {
    let keep_since_ms = args.older_than.map(|age| {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let ms = |d: Duration| i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
        ms(now).saturating_sub(ms(age))
    });
    let rules = PruneRules {
        keep: args.keep,
        keep_since_ms,
    };
    let report =
        Store::open(&args.db.location()?, Access::Existing)?.prune(&rules, args.dry_run)?;
    let mut out = std::io::stdout().lock();
    if args.json {
        let json = PruneJson {
            dry_run: args.dry_run,
            versions: report.versions,
            bodies: report.bodies,
            stored_bytes: report.stored_bytes,
        };
        writeln!(out, "{}", serde_json::to_string(&json)?)?;
    } else {
        let plural = |n: u64, one: &str, many: &str| match n {
            1 => format!("1 {one}"),
            n => format!("{n} {many}"),
        };
        writeln!(
            out,
            "{} {} and {} ({})",
            if args.dry_run {
                "would remove"
            } else {
                "removed"
            },
            plural(report.versions, "version", "versions"),
            plural(report.bodies, "stored body", "stored bodies"),
            cli::out::size(report.stored_bytes)
        )?;
    }
    Ok(())
}

/// The writer of the project folder `serve` knows (`--project`, else the
/// watched one), unless it must not write: `--read-only`, or HTTP without a
/// token (whoever reaches the port could write).
fn writer(
    args: &ServeArgs,
    auth: &mcp::AuthOptions,
    watched: Option<&Path>,
    store: Option<&Store>,
) -> Result<Option<Writer>> {
    let (Some(folder), Some(store)) = (args.project.as_deref().or(watched), store) else {
        return Ok(None);
    };
    if args.read_only {
        return Ok(None);
    }
    if args.http.is_some() && !auth.required() {
        tracing::info!(
            "serving HTTP without credentials: read-only (--token-file or --api-keys makes it writable)"
        );
        return Ok(None);
    }
    Writer::new(folder, store.clone(), import::DEFAULT_MAX_FILE_SIZE).map(Some)
}

/// What `serve --http` lets in: the static token, the database's API
/// keys, OAuth access tokens.
fn auth_options(args: &ServeArgs) -> Result<mcp::AuthOptions> {
    Ok(mcp::AuthOptions {
        token: token(args)?,
        api_keys: args.api_keys,
        oauth: oauth_options(args)?,
        public_url: args.public_url.clone(),
    })
}

/// `--oauth-issuer` and what goes with it, checked before the server starts.
fn oauth_options(args: &ServeArgs) -> Result<Option<mcp::OAuthOptions>> {
    let (Some(issuer), Some(public_url)) = (&args.oauth_issuer, &args.public_url) else {
        return Ok(None);
    };
    mcp::check_public_url(public_url).map_err(anyhow::Error::msg)?;
    let introspection = match (&args.oauth_introspection_url, &args.oauth_client_id) {
        (Some(url), Some(client_id)) => {
            let secret = match &args.oauth_client_secret_file {
                Some(path) => std::fs::read_to_string(path).with_context(|| {
                    format!("cannot read the client secret file {}", path.display())
                })?,
                None => std::env::var("ORCHESTRA_OAUTH_CLIENT_SECRET").map_err(|_| {
                    anyhow::anyhow!(
                        "--oauth-introspection-url needs a client secret: --oauth-client-secret-file PATH or $ORCHESTRA_OAUTH_CLIENT_SECRET"
                    )
                })?,
            };
            let secret = secret.lines().next().unwrap_or("").trim().to_string();
            if secret.is_empty() {
                anyhow::bail!("the OAuth client secret is empty");
            }
            Some(oauth::Introspection {
                url: url.clone(),
                client_id: client_id.clone(),
                client_secret: secret,
            })
        }
        _ => None,
    };
    let config = oauth::OAuthConfig {
        audiences: args.oauth_audience.clone(),
        introspection,
        ..oauth::OAuthConfig::new(issuer.clone(), public_url.clone())
    };
    Ok(Some(mcp::OAuthOptions {
        public_url: public_url.clone(),
        issuer: issuer.clone(),
        verifier: oauth::Verifier::new(config)?,
    }))
}

/// The bearer token of `serve --http`: `--token-file`, else `$ORCHESTRA_TOKEN`.
fn token(args: &ServeArgs) -> Result<Option<String>> {
    let token = match &args.token_file {
        Some(path) => Some(
            std::fs::read_to_string(path)
                .with_context(|| format!("cannot read the token file {}", path.display()))?,
        ),
        None => std::env::var("ORCHESTRA_TOKEN").ok(),
    };
    match token.map(|t| t.trim().to_string()) {
        Some(t) if t.is_empty() => anyhow::bail!("the token is empty"),
        token => Ok(token),
    }
}

/// The folder `serve` watches, if any. `--watch DIR` says it; `--db` on the
/// command line says to watch nothing. Otherwise (zero configuration): the
/// current folder when it holds a project (and `$ORCHESTRA_DB` is unset), or
/// the project the database records, when that folder exists.
fn folder_to_watch(args: &ServeArgs, db: &Location, db_given: bool) -> Result<Option<PathBuf>> {
    if let Some(dir) = &args.watch {
        return Ok(Some(dir.clone()));
    }
    if db_given {
        return Ok(None);
    }
    if args.db.db.is_none() && import::is_project(Path::new(".")) {
        return Ok(Some(PathBuf::from(".")));
    }
    if let Location::File(path) = db
        && !path.is_file()
    {
        // `serve` says what to do about a missing database.
        return Ok(None);
    }
    let root = Store::open(db, Access::Existing)?.project_root()?;
    Ok(root.map(PathBuf::from).filter(|root| root.is_dir()))
}

fn run_serve(args: ServeArgs, db_given: bool) -> Result<()> {
    // Before anything else, so that a log or a bug report says which build
    // this was.
    eprintln!("orchestra {}", orchestra::BUILD);
    let location = args.db.location()?;
    let watched = folder_to_watch(&args, &location, db_given)?;
    if let Some(dir) = watched.as_ref() {
        let opts = watch::import_options(dir.clone(), location.clone());
        let report = import::run(&opts)?;
        for warning in &report.warnings {
            tracing::warn!("import: {warning}");
        }
        tracing::info!("{}", report.summary(dir));
        watch::spawn(opts)?;
    }
    // Nothing named and nothing found: over stdio, the client's roots may
    // name a project; until then the server serves nothing.
    let missing = matches!(&location, Location::File(path) if !path.exists());
    let nothing_here = watched.is_none() && !db_given && args.db.db.is_none() && missing;
    let store = if nothing_here && args.http.is_none() {
        eprintln!(
            "orchestra: no project in this folder and no database at {location}: serving nothing until the client names a project among its roots"
        );
        None
    } else {
        Some(Store::open(&location, Access::Existing)?)
    };
    let auth = match args.http {
        Some(_) => auth_options(&args)?,
        None => mcp::AuthOptions::default(),
    };
    let config = mcp::Config {
        page_size: args.page_size as usize,
        writer: writer(&args, &auth, watched.as_deref(), store.as_ref())?,
        // A client's root, over stdio, is the user's own folder.
        writes_later: !args.read_only && args.http.is_none(),
    };
    // Over stdio, one thread runs the session: a request's steps (the line
    // read, the task, the reply queued, the write) then hand over to no
    // other thread but the read's own blocking one, and on these 2-core
    // machines each handover cost tens of microseconds of a read's round
    // trip. Reads still run on blocking threads, concurrently. HTTP serves
    // many clients: a worker per core.
    let mut builder = match args.http {
        None => tokio::runtime::Builder::new_current_thread(),
        Some(_) => tokio::runtime::Builder::new_multi_thread(),
    };
    let runtime = builder
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let result = match (args.http, store) {
        (None, store) => runtime.block_on(mcp::serve_stdio(store, config)),
        (Some(addr), Some(store)) => {
            let options = mcp::HttpOptions {
                addr,
                allowed_origins: args.allow_origin.clone(),
                auth,
            };
            runtime.block_on(async {
                // Dropped after the server, so that its connection closes last.
                let feed = mcp::watch_changes(mcp::StoreSlot::new(Some(store.clone())))?;
                mcp::serve_http(
                    store,
                    config,
                    options,
                    feed.sender(),
                    mcp::shutdown_signal(),
                )
                .await
            })
        }
        // Over HTTP a missing database was refused above.
        (Some(_), None) => unreachable!("a store is opened for --http"),
    };
    // Blocking reads of stdin cannot be cancelled: do not wait for them.
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    result
}
