//! API keys in PostgreSQL (migration 0020): created, listed, revoked by `orchestra token`, found by hash on every request of every server of the database.

use anyhow::{Context as _, Result, bail};

use super::PgStore;
use crate::store::ApiKey;

const COLUMNS: &str = "hash, name, scopes, created_at, expires_at, revoked_at";

impl PgStore {
    /// Stores a new key; refused when a live key has its name (an expired
    /// one is revoked first).
    pub fn create_key(&self, key: &ApiKey) -> Result<()> {
        let mut conn = self.connection()?;
        let mut tx = conn
            .transaction()
            .with_context(|| format!("cannot write to the database {}", self.target))?;
        // An expired key gives its name up: it is revoked as of now.
        tx.execute(
            "UPDATE api_keys SET revoked_at = $2
             WHERE name = $1 AND revoked_at IS NULL AND expires_at <= $2",
            &[&key.name, &key.created_at],
        )?;
        let inserted = tx
            .execute(
                "INSERT INTO api_keys (hash, name, scopes, created_at, expires_at)
                 VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
                &[
                    &key.hash,
                    &key.name,
                    &key.scopes,
                    &key.created_at,
                    &key.expires_at,
                ],
            )
            .with_context(|| format!("cannot write to the database {}", self.target))?;
        if inserted == 0 {
            bail!(
                "a key named {:?} exists: revoke it first (orchestra token revoke {})",
                key.name,
                key.name
            );
        }
        tx.commit().context("cannot commit the key")?;
        Ok(())
    }

    /// Every key, live and revoked, newest first.
    pub fn keys(&self) -> Result<Vec<ApiKey>> {
        let mut conn = self.connection()?;
        let rows = conn.query(
            &format!("SELECT {COLUMNS} FROM api_keys ORDER BY created_at DESC, name"),
            &[],
        )?;
        Ok(rows.iter().map(key_of).collect())
    }

    /// Revokes the live key named `name` at `now`: whether there was one.
    pub fn revoke_key(&self, name: &str, now: i64) -> Result<bool> {
        let mut conn = self.connection()?;
        let changed = conn.execute(
            "UPDATE api_keys SET revoked_at = $2 WHERE name = $1 AND revoked_at IS NULL",
            &[&name, &now],
        )?;
        Ok(changed > 0)
    }

    /// The key whose hash is `hash`, live or not.
    pub fn find_key(&self, hash: &str) -> Result<Option<ApiKey>> {
        let mut conn = self.connection()?;
        let row = conn.query_opt(
            &format!("SELECT {COLUMNS} FROM api_keys WHERE hash = $1"),
            &[&hash],
        )?;
        Ok(row.as_ref().map(key_of))
    }
}

fn key_of(row: &postgres::Row) -> ApiKey {
    ApiKey {
        hash: row.get(0),
        name: row.get(1),
        scopes: row.get(2),
        created_at: row.get(3),
        expires_at: row.get(4),
        revoked_at: row.get(5),
    }
}
