//! The commands for people at a terminal: the read-only ones (`search`, `ls`, `show`, `stats`, `log`, `diff`, `links`, `check`), `token` (API keys), and what they share: the `--db` flag, opening the store read-only, naming a document, and the exit status; `manual`, the shell's completions and the man page.

pub mod check;
pub mod diff;
pub mod links;
pub mod log;
pub mod ls;
pub mod manual;
pub mod out;
pub mod search;
pub mod show;
pub mod stats;
pub mod token;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Result, anyhow, bail};
use clap::Args;

use orchestra::doc::{DocKey, Prefix, is_valid_id};
use orchestra::import::data_folder;
use orchestra::store::postgres::{PgEnv, PgTarget};
use orchestra::store::{Access, Location, Reader, Store, Version};
use orchestra::uri;

#[derive(Args)]
pub struct DbArg {
    /// The database: a SQLite file, or a PostgreSQL URL (postgres://user@host/db)
    /// [default: $ORCHESTRA_DB, else .orchestra/orchestra.db]
    #[arg(long, value_name = "PATH|URL", env = "ORCHESTRA_DB", hide_env = true)]
    pub db: Option<PathBuf>,
    /// A file whose first line is the PostgreSQL password (else the URL's,
    /// $PGPASSWORD or ~/.pgpass)
    #[arg(long, value_name = "PATH")]
    pub db_password_file: Option<PathBuf>,
}

impl DbArg {
    /// Where the store lives: a PostgreSQL database when `--db` is a
    /// `postgres://` or `postgresql://` URL, else a SQLite file.
    pub fn location(&self) -> Result<Location> {
        if let Some(url) = self.db.as_deref().and_then(|db| db.to_str())
            && PgTarget::is_url(url)
        {
            let target =
                PgTarget::resolve(url, self.db_password_file.as_deref(), &PgEnv::process())?;
            return Ok(Location::Postgres(Box::new(target)));
        }
        if let Some(file) = &self.db_password_file {
            bail!(
                "--db-password-file {}: only a PostgreSQL --db takes a password",
                file.display()
            );
        }
        Ok(Location::File(self.file()))
    }

    /// The file `--db` names, or the default one.
    pub fn file(&self) -> PathBuf {
        self.db
            .clone()
            .unwrap_or_else(|| data_folder::default_db(Path::new("")))
    }

    /// `--db` as a command line may repeat it: a PostgreSQL URL without
    /// its password.
    pub fn shown(&self) -> String {
        match self.location() {
            Ok(Location::Postgres(target)) => target.to_string(),
            _ => self.file().to_string_lossy().into_owned(),
        }
    }
}

/// A reader of the store, opened read-only: it works while a server
/// serves and an import writes, and never migrates or creates anything.
pub fn open(db: &DbArg) -> Result<Reader> {
    Store::open(&db.location()?, Access::ReadOnly)?.reader()
}

/// The document `text` names: its `orchestra://` URI (any spelling
/// `uri::parse` accepts), or `prefix/id`. No id holds `//`, so a `://`
/// always means a URI.
pub fn parse_ref(text: &str) -> Result<DocKey> {
    if text.contains("://") {
        return uri::parse(text).map_err(|e| anyhow!("{text:?} is not a document uri: {e}"));
    }
    let Some((prefix, id)) = text.split_once('/') else {
        bail!(
            "{text:?} names no document: write prefix/id (features/FEAT-001) or an orchestra:// uri"
        );
    };
    let prefix = Prefix::parse(prefix)
        .ok_or_else(|| anyhow!("{text:?} names no prefix: use features, notes or docs"))?;
    if !is_valid_id(id) {
        bail!("{text:?} names no document: {id:?} cannot be an id");
    }
    Ok(DocKey::new(prefix, id))
}

/// The document `text` names, and the version its URI names with
/// `?version=N` (`orchestra://features/FEAT-001?version=3`), if any;
/// otherwise as [`parse_ref`].
pub fn parse_versioned_ref(text: &str) -> Result<(DocKey, Option<u32>)> {
    if !text.contains("://") {
        return Ok((parse_ref(text)?, None));
    }
    let versioned =
        uri::parse_versioned(text).map_err(|e| anyhow!("{text:?} is not a document uri: {e}"))?;
    Ok((versioned.key, versioned.version))
}

/// Says that version `number` of `key` has no bytes to show (there is no
/// such version, or it is a removal) and which versions there are:
/// `versions 1–4; 3 is a removal`. `versions`: the whole history, in any
/// order; empty when the key never existed. Returns false: nothing shown.
pub fn no_version(key: &DocKey, number: u32, versions: &[Version]) -> bool {
    let name = uri::format(key);
    if versions.is_empty() {
        eprintln!("orchestra: no history for {name}");
        return false;
    }
    let mut numbers: Vec<u32> = versions.iter().map(|v| v.number).collect();
    numbers.sort_unstable();
    let mut removals: Vec<u32> = versions
        .iter()
        .filter(|v| v.removed())
        .map(|v| v.number)
        .collect();
    removals.sort_unstable();
    match removals.contains(&number) {
        true => eprintln!("orchestra: version {number} of {name} is a removal: it has no bytes"),
        false => eprintln!("orchestra: no version {number} of {name}"),
    }
    let mut which = match numbers.len() {
        1 => format!("version {}", numbers[0]),
        _ => format!("versions {}", out::ranges(&numbers)),
    };
    let removals: Vec<String> = removals.iter().map(u32::to_string).collect();
    match removals.len() {
        0 => {}
        1 => which.push_str(&format!("; {} is a removal", removals[0])),
        _ => which.push_str(&format!("; {} are removals", out::and_list(&removals))),
    }
    eprintln!("{which}");
    false
}

/// The exit status of a read command that returned whether it showed
/// anything: 0 when it did, 1 when there was nothing to show, 2 on an error
/// (printed on stderr), as grep. A reader that went away (`| head`) is not
/// an error.
pub fn exit_status(result: Result<bool>) -> ExitCode {
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e)
            if e.downcast_ref::<std::io::Error>()
                .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe) =>
        {
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("orchestra: {e:#}");
            ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references() {
        let cases = [
            ("features/FEAT-001", Ok("features/FEAT-001")),
            ("docs/adr/0001", Ok("docs/adr/0001")),
            ("orchestra://docs/adr/0001", Ok("docs/adr/0001")),
            (
                "orchestra://notes/caf%C3%A9%20notes",
                Ok("notes/café notes"),
            ),
            ("notes/meeting 10:30", Ok("notes/meeting 10:30")),
            (
                "featurez/FEAT-001",
                Err("\"featurez/FEAT-001\" names no prefix: use features, notes or docs"),
            ),
            (
                "FEAT-001",
                Err(
                    "\"FEAT-001\" names no document: write prefix/id (features/FEAT-001) or an orchestra:// uri",
                ),
            ),
            (
                "features/a//b",
                Err("\"features/a//b\" names no document: \"a//b\" cannot be an id"),
            ),
            (
                "features/../x",
                Err("\"features/../x\" names no document: \"../x\" cannot be an id"),
            ),
            (
                "http://features/x",
                Err(
                    "\"http://features/x\" is not a document uri: unsupported uri scheme \"http\", expected orchestra",
                ),
            ),
        ];
        for (text, expected) in cases {
            let got = parse_ref(text)
                .map(|key| key.to_string())
                .map_err(|e| e.to_string());
            assert_eq!(got.as_deref().map_err(String::as_str), expected, "{text}");
        }
    }

    #[test]
    fn versioned_references() {
        let cases = [
            ("notes/a", Ok(("notes/a", None))),
            ("orchestra://notes/a", Ok(("notes/a", None))),
            ("orchestra://notes/a?version=3", Ok(("notes/a", Some(3)))),
            (
                "orchestra://notes/caf%C3%A9?version=12",
                Ok(("notes/café", Some(12))),
            ),
            // Not a URI: `?` is part of the id.
            ("notes/a?version=3", Ok(("notes/a?version=3", None))),
            (
                "orchestra://notes/a?version=0",
                Err(
                    "\"orchestra://notes/a?version=0\" is not a document uri: the only query a document uri takes is ?version=N, N a version number from 1",
                ),
            ),
            (
                "orchestra://notes/a?v=1",
                Err(
                    "\"orchestra://notes/a?v=1\" is not a document uri: the only query a document uri takes is ?version=N, N a version number from 1",
                ),
            ),
        ];
        for (text, expected) in cases {
            let got = parse_versioned_ref(text)
                .map(|(key, version)| (key.to_string(), version))
                .map_err(|e| e.to_string());
            let got = got
                .as_ref()
                .map(|(key, version)| (key.as_str(), *version))
                .map_err(String::as_str);
            assert_eq!(got, expected, "{text}");
        }
    }
}
