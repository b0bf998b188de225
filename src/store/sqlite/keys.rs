//! API keys in SQLite (migration 0020): created, listed, revoked by `orchestra token`, found by hash on every request of a server.

use anyhow::{Result, bail};
use rusqlite::{OptionalExtension, params};

use super::Store;
use crate::store::ApiKey;

impl Store {
    /// Stores a new key; refused when a live key has its name (an expired
    /// one is revoked first).
    pub fn create_key(&self, key: &ApiKey) -> Result<()> {
        let conn = self.begin_write()?;
        // An expired key gives its name up: it is revoked as of now.
        conn.execute(
            "UPDATE api_keys SET revoked_at = ?2
             WHERE name = ?1 AND revoked_at IS NULL AND expires_at <= ?2",
            params![key.name, key.created_at],
        )?;
        let taken: bool = conn.query_row(
            "SELECT EXISTS (SELECT 1 FROM api_keys WHERE name = ?1 AND revoked_at IS NULL)",
            [&key.name],
            |r| r.get(0),
        )?;
        if taken {
            conn.execute_batch("ROLLBACK")?;
            bail!(
                "a key named {:?} exists: revoke it first (orchestra token revoke {})",
                key.name,
                key.name
            );
        }
        conn.execute(
            "INSERT INTO api_keys (hash, name, scopes, created_at, expires_at, revoked_at)
             VALUES (?1, ?2, ?3, ?4, ?5, NULL)",
            params![
                key.hash,
                key.name,
                key.scopes,
                key.created_at,
                key.expires_at
            ],
        )?;
        conn.execute_batch("COMMIT")?;
        Ok(())
    }

    /// Every key, live and revoked, newest first.
    pub fn keys(&self) -> Result<Vec<ApiKey>> {
        let conn = self.connection()?;
        let mut stmt = conn.prepare(
            "SELECT hash, name, scopes, created_at, expires_at, revoked_at FROM api_keys
             ORDER BY created_at DESC, name",
        )?;
        let rows = stmt.query_map([], row)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Revokes the live key named `name` at `now`: whether there was one.
    pub fn revoke_key(&self, name: &str, now: i64) -> Result<bool> {
        let conn = self.begin_write()?;
        let changed = conn.execute(
            "UPDATE api_keys SET revoked_at = ?2 WHERE name = ?1 AND revoked_at IS NULL",
            params![name, now],
        )?;
        conn.execute_batch("COMMIT")?;
        Ok(changed > 0)
    }

    /// The key whose hash is `hash`, live or not.
    pub fn find_key(&self, hash: &str) -> Result<Option<ApiKey>> {
        let conn = self.connection()?;
        let mut stmt = conn.prepare_cached(
            "SELECT hash, name, scopes, created_at, expires_at, revoked_at FROM api_keys
             WHERE hash = ?1",
        )?;
        Ok(stmt.query_row([hash], row).optional()?)
    }
}

fn row(r: &rusqlite::Row) -> rusqlite::Result<ApiKey> {
    Ok(ApiKey {
        hash: r.get(0)?,
        name: r.get(1)?,
        scopes: r.get(2)?,
        created_at: r.get(3)?,
        expires_at: r.get(4)?,
        revoked_at: r.get(5)?,
    })
}
