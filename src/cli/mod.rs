//! The read-only commands for people at a terminal (`search`) and what they share: the `--db` flag, opening the store read-only, and the exit status.

pub mod search;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use orchestra::store::{Reader, Store};

#[derive(Args)]
pub struct DbArg {
    /// The database file [default: $ORCHESTRA_DB, else .orchestra/orchestra.db]
    #[arg(long, value_name = "PATH", env = "ORCHESTRA_DB", hide_env = true)]
    pub db: Option<PathBuf>,
}

impl DbArg {
    pub fn path(&self) -> PathBuf {
        self.db
            .clone()
            .unwrap_or_else(|| PathBuf::from(".orchestra").join("orchestra.db"))
    }
}

/// A reader of the database, opened read-only: it works while a server
/// serves and an import writes, and never migrates or creates anything.
pub fn open(db: &DbArg) -> Result<Reader> {
    Store::open_read_only(&db.path())?.reader()
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
