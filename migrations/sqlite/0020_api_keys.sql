-- Scoped API keys (`orchestra token create`): the blake3 hash of each key,
-- never the key itself. A key is found by its hash on every request (cached
-- for seconds), so every server of one database agrees on a revocation.
CREATE TABLE api_keys (
    hash TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    -- Space-separated, as a token's `scope` claim.
    scopes TEXT NOT NULL,
    -- Unix seconds.
    created_at INTEGER NOT NULL,
    expires_at INTEGER,
    revoked_at INTEGER
) WITHOUT ROWID;

-- One live key per name: `token revoke NAME` names one key, and the name
-- may be given again once it is revoked.
CREATE UNIQUE INDEX api_keys_live_name ON api_keys (name) WHERE revoked_at IS NULL;
