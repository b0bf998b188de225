//! The PostgreSQL store, for a team's shared backlog: connecting (`target`), the connection pool, and the schema (`migrations/postgres/`, applied once however many servers start together).
//!
//! The first part of issue 13. What comes next is the same interface as
//! the SQLite store (reads, the import, the feed) on this pool; until then
//! the commands refuse a PostgreSQL `--db` with a message that says so.
//!
//! # Compatibility
//! The migrations have the numbers and names of `migrations/sqlite/` (a
//! test checks it), are applied in order in one transaction under an
//! advisory lock, and are recorded in the one-row table `orchestra_schema`
//! (PostgreSQL has no `user_version`). A database with a newer schema than
//! this orchestra knows is refused, as on SQLite.

mod browse;
mod check;
mod feed;
mod history;
mod import_tx;
mod keys;
mod links;
mod load;
mod moves;
mod outlines;
mod pool;
mod reader;
mod scan;
mod search;
mod target;
mod tls;
mod words;

pub use feed::PgChangeWatcher;
pub(super) use import_tx::vector_of;
pub use import_tx::{FEED_CHANNEL, PgImportTx};
pub use reader::PgReader;
pub use target::{PgEnv, PgTarget};
pub use words::TsVector;

use anyhow::{Context, Result, bail};
use postgres::Client;
use r2d2::Pool;

use super::Unavailable;
use r2d2_postgres::PostgresConnectionManager;

use self::pool::{Manager, Pooled};

/// A migration: its SQL, and what orchestra does next in the same
/// transaction, for what SQL cannot do.
struct Migration {
    sql: &'static str,
    then: Option<fn(&mut postgres::Transaction) -> Result<()>>,
}

/// The schema, one migration per entry, in order. Append only.
const MIGRATIONS: &[Migration] = &[
    Migration {
        sql: include_str!("../../../migrations/postgres/0001_documents.sql"),
        then: None,
    },
    Migration {
        sql: include_str!("../../../migrations/postgres/0002_changes.sql"),
        then: None,
    },
    Migration {
        sql: include_str!("../../../migrations/postgres/0003_listing_index.sql"),
        then: None,
    },
    Migration {
        sql: include_str!("../../../migrations/postgres/0004_search.sql"),
        then: None,
    },
    Migration {
        sql: include_str!("../../../migrations/postgres/0005_imports.sql"),
        then: None,
    },
    Migration {
        sql: include_str!("../../../migrations/postgres/0006_history.sql"),
        then: None,
    },
    Migration {
        sql: include_str!("../../../migrations/postgres/0007_fields_index.sql"),
        then: None,
    },
    Migration {
        sql: include_str!("../../../migrations/postgres/0008_search_words.sql"),
        then: Some(words::rebuild),
    },
    Migration {
        sql: include_str!("../../../migrations/postgres/0009_listing_inline.sql"),
        then: None,
    },
    Migration {
        sql: include_str!("../../../migrations/postgres/0010_small_values_inline.sql"),
        then: None,
    },
    Migration {
        sql: include_str!("../../../migrations/postgres/0011_versions_in_import_order.sql"),
        then: None,
    },
    Migration {
        sql: include_str!("../../../migrations/postgres/0012_version_bodies_by_rowid.sql"),
        then: None,
    },
    Migration {
        sql: include_str!("../../../migrations/postgres/0013_earlier_bodies.sql"),
        then: None,
    },
    Migration {
        sql: include_str!("../../../migrations/postgres/0014_document_heads.sql"),
        then: None,
    },
    Migration {
        sql: include_str!("../../../migrations/postgres/0015_fields_terms.sql"),
        then: None,
    },
    Migration {
        sql: include_str!("../../../migrations/postgres/0016_links.sql"),
        then: Some(links::fill_0016),
    },
    Migration {
        sql: include_str!("../../../migrations/postgres/0017_skipped.sql"),
        then: None,
    },
    Migration {
        sql: include_str!("../../../migrations/postgres/0018_moves.sql"),
        then: None,
    },
    Migration {
        sql: include_str!("../../../migrations/postgres/0019_outlines.sql"),
        then: Some(outlines::fill_0019),
    },
    Migration {
        sql: include_str!("../../../migrations/postgres/0020_api_keys.sql"),
        then: None,
    },
];

/// The advisory lock under which a server migrates: others wait, then
/// find the schema current.
const MIGRATION_LOCK: i64 = 0x6f72_6368_6573_7472; // "orchestr"

/// How long a request waits for a connection when none can be made.
const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3);

/// Connections per server, as for SQLite.
const POOL_SIZE: u32 = super::READ_CONNECTIONS as u32;

/// A pool of connections to one PostgreSQL database.
#[derive(Clone)]
pub struct PgStore {
    pub(super) pool: Pool<Manager>,
    pub(super) target: PgTarget,
}

impl PgStore {
    /// Connects to `target` and brings its schema up to date. A failure to
    /// connect is reported at once, with the server's reason.
    pub fn open(target: PgTarget) -> Result<PgStore> {
        let mut client = connect(&target)?;
        migrate(&mut client).with_context(|| format!("cannot migrate {target}"))?;
        drop(client);
        Ok(PgStore::pool(target))
    }

    /// Connects to `target`, whose schema must be this orchestra's: for the
    /// commands that only read, which never migrate.
    pub fn open_read_only(target: PgTarget) -> Result<PgStore> {
        let mut client = connect(&target)?;
        let version = schema_version(&mut client)
            .with_context(|| format!("cannot read the database {target}"))?;
        if version < MIGRATIONS.len() {
            bail!(
                "the database {target} has schema version {version}, this orchestra expects {}: \
                 run `orchestra import DIR` or `orchestra serve` once to upgrade it",
                MIGRATIONS.len()
            );
        }
        if version > MIGRATIONS.len() {
            bail!(
                "the database {target} has schema version {version}, newer than this orchestra knows ({}): upgrade orchestra",
                MIGRATIONS.len()
            );
        }
        drop(client);
        Ok(PgStore::pool(target))
    }

    /// Whether orchestra never migrated `target` (schema version 0): an
    /// empty database, as a SQLite file is before the first import.
    pub fn is_fresh(target: &PgTarget) -> Result<bool> {
        let mut client = connect(target)?;
        let version = schema_version(&mut client)
            .with_context(|| format!("cannot read the database {target}"))?;
        Ok(version == 0)
    }

    fn pool(target: PgTarget) -> PgStore {
        let manager = Manager(PostgresConnectionManager::new(
            target.config().clone(),
            tls::connector(),
        ));
        let pool = Pool::builder()
            .max_size(POOL_SIZE)
            .min_idle(Some(1))
            // While the database is down, a request fails after this
            // rather than waiting (r2d2's default: 30 s).
            .connection_timeout(CONNECT_TIMEOUT)
            .error_handler(Box::new(pool::Warn::new(target.to_string())))
            .build_unchecked(manager);
        PgStore { pool, target }
    }

    pub fn target(&self) -> &PgTarget {
        &self.target
    }

    /// A pooled connection. None to be had (the database down or
    /// restarting) is [`Unavailable`], after [`CONNECT_TIMEOUT`].
    pub(super) fn connection(&self) -> Result<Pooled> {
        self.pool.get().map_err(|e| {
            anyhow::Error::new(Unavailable)
                .context(format!("no connection to {}: {e}", self.target))
        })
    }

    /// The schema version recorded in the database.
    pub fn schema_version(&self) -> Result<usize> {
        let mut conn = self.connection()?;
        schema_version(&mut conn)
    }
}

/// One connection to `target`, outside any pool.
pub fn connect(target: &PgTarget) -> Result<Client> {
    target
        .config()
        .connect(tls::connector())
        .with_context(|| format!("cannot connect to {target}"))
}

/// The version recorded by [`migrate`]; 0 for a database it never touched.
fn schema_version(client: &mut Client) -> Result<usize> {
    let exists: bool = client
        .query_one("SELECT to_regclass('orchestra_schema') IS NOT NULL", &[])?
        .get(0);
    if !exists {
        return Ok(0);
    }
    let version: Option<i32> = client
        .query_opt("SELECT version FROM orchestra_schema", &[])?
        .map(|row| row.get(0));
    Ok(version.unwrap_or(0) as usize)
}

/// Applies the migrations the database lacks, in one transaction, under
/// the advisory lock (servers that start together migrate once).
fn migrate(client: &mut Client) -> Result<()> {
    let mut tx = client.transaction()?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS orchestra_schema (
             singleton integer PRIMARY KEY CHECK (singleton = 1),
             version integer NOT NULL
         )",
    )?;
    let version: usize = tx
        .query_opt("SELECT version FROM orchestra_schema", &[])?
        .map_or(0, |row| row.get::<_, i32>(0) as usize);
    if version > MIGRATIONS.len() {
        bail!(
            "schema version {version} is newer than this orchestra knows ({}): upgrade orchestra",
            MIGRATIONS.len()
        );
    }
    if version == MIGRATIONS.len() {
        return Ok(());
    }
    if version > 0 {
        tracing::info!(
            "upgrading the database schema from version {version} to {}",
            MIGRATIONS.len()
        );
    }
    for (number, migration) in MIGRATIONS.iter().enumerate().skip(version) {
        let failed = || format!("migration {:04} failed", number + 1);
        tx.batch_execute(migration.sql).with_context(failed)?;
        if let Some(then) = migration.then {
            then(&mut tx).with_context(failed)?;
        }
    }
    tx.execute(
        "INSERT INTO orchestra_schema (singleton, version) VALUES (1, $1)
         ON CONFLICT (singleton) DO UPDATE SET version = excluded.version",
        &[&(MIGRATIONS.len() as i32)],
    )?;
    tx.commit()?;
    Ok(())
}

#[cfg(test)]
mod tests;
