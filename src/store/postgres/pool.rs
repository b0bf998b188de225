//! The connection pool of the PostgreSQL store: r2d2 over `r2d2_postgres`, each connection with the statements it has prepared, so that a statement run again costs one round trip, not two.

use std::collections::HashMap;
use std::ops::{Deref, DerefMut};

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
