//! The connection pool of the PostgreSQL store: r2d2 over `r2d2_postgres`, each connection with the statements it has prepared, so that a statement run again costs one round trip, not two; and what the pool says when it cannot connect.

use std::collections::HashMap;
use std::ops::{Deref, DerefMut};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use postgres::{Client, Statement};
use r2d2_postgres::PostgresConnectionManager;
use tokio_postgres_rustls::MakeRustlsConnect;

/// A pooled connection.
pub type Pooled = r2d2::PooledConnection<Manager>;

/// A connection and the statements prepared on it, by their SQL.
pub struct Connection {
    client: Client,
    statements: HashMap<&'static str, Statement>,
}

impl Connection {
    /// `sql`, prepared on this connection the first time it is asked for.
    pub fn prepared(&mut self, sql: &'static str) -> Result<Statement, postgres::Error> {
        if let Some(statement) = self.statements.get(sql) {
            return Ok(statement.clone());
        }
        let statement = self.client.prepare(sql)?;
        self.statements.insert(sql, statement.clone());
        Ok(statement)
    }
}

impl Deref for Connection {
    type Target = Client;

    fn deref(&self) -> &Client {
        &self.client
    }
}

impl DerefMut for Connection {
    fn deref_mut(&mut self) -> &mut Client {
        &mut self.client
    }
}

/// `r2d2_postgres`'s manager, whose connections carry their statements.
pub struct Manager(pub PostgresConnectionManager<MakeRustlsConnect>);

impl r2d2::ManageConnection for Manager {
    type Connection = Connection;
    type Error = postgres::Error;

    fn connect(&self) -> Result<Connection, postgres::Error> {
        Ok(Connection {
            client: self.0.connect()?,
            statements: HashMap::new(),
        })
    }

    fn is_valid(&self, conn: &mut Connection) -> Result<(), postgres::Error> {
        self.0.is_valid(&mut conn.client)
    }

    fn has_broken(&self, conn: &mut Connection) -> bool {
        self.0.has_broken(&mut conn.client)
    }
}

/// What r2d2 meets while it opens connections: a warning that names the
/// database, at most one every [`WARN_EVERY`]. While PostgreSQL is down,
/// r2d2 tries again many times a second, and its default handler logged
/// each try as an error without saying where.
#[derive(Debug)]
pub struct Warn {
    shown: String,
    last: Mutex<Option<Instant>>,
}

const WARN_EVERY: Duration = Duration::from_secs(10);

impl Warn {
    /// `shown`: the database as messages show it (no password).
    pub fn new(shown: String) -> Warn {
        Warn {
            shown,
            last: Mutex::new(None),
        }
    }
}

impl r2d2::HandleError<postgres::Error> for Warn {
    fn handle_error(&self, error: postgres::Error) {
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        if last.is_some_and(|at| at.elapsed() < WARN_EVERY) {
            return;
        }
        *last = Some(Instant::now());
        tracing::warn!("cannot connect to {}: {error}", self.shown);
    }
}
